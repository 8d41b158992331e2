// Linear, Bilinear, Identity, Flatten, Unflatten (torch.nn's, with torch's parameters, init and
// repr).
//
//   auto fc = std::make_shared<nn::Linear>(784, 128);            // weight [128, 784], bias [128]
//   auto head = std::make_shared<nn::Linear>(nn::LinearOptions(128, 10).bias(false));
//   fc->reset_parameters(gen);                                    // re-draw from a Generator
#pragma once

#include <memory>
#include <vector>

#include "nn/module.h"
#include "nn/options.h"

namespace mutagrad::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  MUTAGRAD_ARG(int64_t, in_features);
  MUTAGRAD_ARG(int64_t, out_features);
  MUTAGRAD_ARG(bool, bias) = true;
  MUTAGRAD_ARG(ScalarType, dtype) = kFloat32;
  MUTAGRAD_ARG(Device, device) = kCPU;
};

// y = x weight^T + bias over the last dim of x (AddmmBackward0 for a 2-D input with bias, as
// torch's F.linear). A last dim other than in_features is a ShapeError before anything runs.
class Linear : public Module {
 public:
  explicit Linear(const LinearOptions& options);
  Linear(int64_t in_features, int64_t out_features)
      : Linear(LinearOptions(in_features, out_features)) {}

  // torch's reset_parameters: weight kaiming_uniform_(a = sqrt(5)), bias uniform in
  // [-1/sqrt(in_features), 1/sqrt(in_features)); the constructor draws from
  // default_generator(kCPU).
  void reset_parameters(Generator& gen);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const LinearOptions& options() const { return options_; }
  Tensor weight;
  Tensor bias;  // undefined without bias

 private:
  LinearOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

// Returns its input.
class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& input) override { return input; }

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// input.flatten(start_dim, end_dim); the defaults keep the batch dim.
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& input) override { return input.flatten(start_dim_, end_dim_); }
  std::string extra_repr() const override;

 private:
  int64_t start_dim_, end_dim_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// input.unflatten(dim, sizes).
class Unflatten : public Module {
 public:
  Unflatten(int64_t dim, std::vector<int64_t> sizes)
      : Module("Unflatten"), dim_(dim), sizes_(std::move(sizes)) {}
  Tensor forward(const Tensor& input) override { return input.unflatten(dim_, sizes_); }
  std::string extra_repr() const override;

 private:
  int64_t dim_;
  std::vector<int64_t> sizes_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// y[..., o] = x1 W[o] x2 + b[o]; weight [out, in1, in2], bias [out], both uniform in
// [-1/sqrt(in1), 1/sqrt(in1)) (torch's reset_parameters).
class Bilinear : public Module {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  void reset_parameters(Generator& gen);
  // Bilinear has two inputs: forward(input1, input2); the one-input forward throws.
  Tensor forward(const Tensor& input1, const Tensor& input2);
  using Module::forward;
  std::string extra_repr() const override;
  Tensor weight, bias;

 private:
  int64_t in1_, in2_, out_;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

}  // namespace mutagrad::nn
