// BatchNorm1d/2d, LayerNorm, GroupNorm (torch.nn's options, parameters, buffers and repr) over
// autograd/ops/nn_ops.h's batch_norm, layer_norm and group_norm.
//
//   auto bn = std::make_shared<nn::BatchNorm1d>(128);     // weight, bias; running_mean/var
//   Tensor y = (*bn)(x);                                   // training: updates the running stats
//
// Note [BatchNorm's writes]
// A training forward with track_running_stats writes three buffers, each one tracked in-place
// write (one version bump, recorded with op "batch_norm" / "add_"): num_batches_tracked += 1,
// then running_mean and running_var inside batch_norm. torch 1.13 updates the running
// statistics inside its kernel without a bump; a graph that saved a running statistic (an eval
// forward before the training one) is refused at backward here, as any stale read would be.
// momentum nullopt (torch's None) averages cumulatively: factor 1 / num_batches_tracked.
#pragma once

#include <optional>
#include <vector>

#include "nn/module.h"
#include "nn/options.h"

namespace mutagrad::nn {

struct BatchNormOptions {
  /* implicit */ BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  MUTAGRAD_ARG(int64_t, num_features);
  MUTAGRAD_ARG(double, eps) = 1e-5;
  MUTAGRAD_ARG(std::optional<double>, momentum) = 0.1;
  MUTAGRAD_ARG(bool, affine) = true;
  MUTAGRAD_ARG(bool, track_running_stats) = true;
};

// The shared implementation; BatchNorm1d takes [N, C] or [N, C, L], BatchNorm2d [N, C, H, W].
class BatchNormBase : public Module {
 public:
  BatchNormBase(std::string name, const BatchNormOptions& options);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  // running_mean 0, running_var 1, num_batches_tracked 0 (three tracked writes).
  void reset_running_stats();
  // reset_running_stats(), weight 1, bias 0.
  void reset_parameters();

  const BatchNormOptions& options() const { return options_; }
  // nullopt: the cumulative average (update_bn sets it for its pass).
  void set_momentum(std::optional<double> momentum) { options_.momentum(momentum); }
  Tensor weight, bias;                                    // with affine
  Tensor running_mean, running_var, num_batches_tracked;  // with track_running_stats

 protected:
  virtual void check_input_dim(const Tensor& input) const = 0;
  // In a clone (Note [Cloning modules]): the member handles become the copies.
  void rebind_cloned();

 private:
  BatchNormOptions options_;
};

class BatchNorm1d : public BatchNormBase {
 public:
  explicit BatchNorm1d(const BatchNormOptions& options) : BatchNormBase("BatchNorm1d", options) {}

 protected:
  void check_input_dim(const Tensor& input) const override;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

class BatchNorm2d : public BatchNormBase {
 public:
  explicit BatchNorm2d(const BatchNormOptions& options) : BatchNormBase("BatchNorm2d", options) {}

 protected:
  void check_input_dim(const Tensor& input) const override;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

struct LayerNormOptions {
  /* implicit */ LayerNormOptions(std::vector<int64_t> normalized_shape)  // NOLINT
      : normalized_shape_(std::move(normalized_shape)) {}
  MUTAGRAD_ARG(std::vector<int64_t>, normalized_shape);
  MUTAGRAD_ARG(double, eps) = 1e-5;
  MUTAGRAD_ARG(bool, elementwise_affine) = true;
};

// Normalizes over the last normalized_shape dims; weight 1 and bias 0 of normalized_shape.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(const LayerNormOptions& options);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  void reset_parameters();
  Tensor weight, bias;

 private:
  LayerNormOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  MUTAGRAD_ARG(int64_t, num_groups);
  MUTAGRAD_ARG(int64_t, num_channels);
  MUTAGRAD_ARG(double, eps) = 1e-5;
  MUTAGRAD_ARG(bool, affine) = true;
};

// num_channels must be divisible by num_groups (ValueError at construction).
class GroupNorm : public Module {
 public:
  explicit GroupNorm(const GroupNormOptions& options);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  void reset_parameters();
  Tensor weight, bias;

 private:
  GroupNormOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

}  // namespace mutagrad::nn
