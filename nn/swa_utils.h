// torch.optim.swa_utils for C++: AveragedModel (stochastic weight averaging, EMAs of a model's
// parameters) and update_bn. It lives in nn/ because AveragedModel is a Module (optim/ does not
// depend on nn/).
//
//   auto ema = std::make_shared<nn::AveragedModel>(
//       model, nn::AveragedModelOptions().avg_fn(nn::get_ema_avg_fn(0.999)));
//   for (auto& [x, y] : loader) {
//     train_step(*model, x, y);
//     ema->update_parameters(*model);     // each averaged tensor written once, in place
//   }
//   nn::update_bn(batches, *ema);          // recompute the copy's BatchNorm statistics
//
// Note [AveragedModel's writes]
// The averaged copy is model->clone() (Note [Cloning modules]). update_parameters writes each
// averaged tensor in place under no-grad, with one tracked write each (copy_ of the new average:
// one version bump, recorded with the caller's file:line), then n_averaged += 1; the model's own
// tensors are only read. The first call copies the model; later ones write
// avg_fn(average, current, n_averaged): by default torch 1.13's running mean
// average + (current - average) / (n + 1). A multi_avg_fn (torch 2's) writes the lists itself
// and is trusted to write each tensor once. With use_buffers the buffers are averaged too
// (num_batches_tracked through the same formula, truncated by copy_, as torch); without, they
// stay as copied at construction (torch 1.13). Every shape is checked before anything is
// written: a model of another architecture changes nothing.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "nn/module.h"
#include "nn/options.h"

namespace mutagrad::nn {

// (averaged, current, num_averaged) -> the new average (written into `averaged` by the caller).
using AvgFn = std::function<Tensor(const Tensor&, const Tensor&, int64_t)>;
// (averaged list, current list, num_averaged): writes the averaged tensors in place itself.
using MultiAvgFn =
    std::function<void(const std::vector<Tensor>&, const std::vector<Tensor>&, int64_t)>;

// avg + (p - avg) / (n + 1).
AvgFn get_swa_avg_fn();
// decay * avg + (1 - decay) * p.
AvgFn get_ema_avg_fn(double decay = 0.999);
// In place over the lists: avg.lerp_(p, 1 / (n + 1)) for floating tensors.
MultiAvgFn get_swa_multi_avg_fn();
// In place over the lists: avg.lerp_(p, 1 - decay) for floating tensors.
MultiAvgFn get_ema_multi_avg_fn(double decay = 0.999);

struct AveragedModelOptions {
  MUTAGRAD_ARG(std::optional<Device>, device);
  MUTAGRAD_ARG(AvgFn, avg_fn);
  MUTAGRAD_ARG(MultiAvgFn, multi_avg_fn);
  MUTAGRAD_ARG(bool, use_buffers) = false;
};

class AveragedModel : public Module {
 public:
  // A clone of `model` (moved to options.device() if given); n_averaged 0 (an int64 buffer).
  explicit AveragedModel(const std::shared_ptr<Module>& model, AveragedModelOptions options = {});
  // Runs the copy.
  Tensor forward(const Tensor& input) override { return (*module)(input); }
  // Averages `model`'s parameters (and buffers with use_buffers) into the copy's (Note
  // [AveragedModel's writes]). ValueError, changing nothing, when the counts or a shape differ.
  void update_parameters(const Module& model, CallSite site = CallSite::current());
  const AveragedModelOptions& options() const { return options_; }

  std::shared_ptr<Module> module;
  Tensor n_averaged;

 protected:
  std::shared_ptr<Module> clone_module() const override;

 private:
  std::vector<Tensor> averaged_tensors(const Module& m) const;
  AveragedModelOptions options_;
};

namespace detail {
// update_bn's bracket: resets the running statistics of every BatchNorm in `model`, sets their
// momentum to nullopt and the model to training mode; finish restores both.
struct UpdateBnState {
  std::vector<std::pair<std::shared_ptr<Module>, std::optional<double>>> momenta;
  bool was_training = true;
};
UpdateBnState begin_update_bn(Module& model);
void finish_update_bn(Module& model, const UpdateBnState& state);
inline const Tensor& first_tensor(const Tensor& batch) { return batch; }
template <size_t N>
const Tensor& first_tensor(const std::array<Tensor, N>& batch) {
  return batch[0];
}
template <typename... Ts>
const Tensor& first_tensor(const std::tuple<Ts...>& batch) {
  return std::get<0>(batch);
}
template <typename A, typename B>
const Tensor& first_tensor(const std::pair<A, B>& batch) {
  return batch.first;
}
}  // namespace detail

// torch's update_bn: one pass of the model over `batches` (a range of Tensors, or of
// pairs/tuples/std::arrays whose first is the input, e.g. a data::DataLoader) under no-grad
// recomputes the running statistics of its BatchNorm layers as cumulative averages; then their
// momentum and the model's mode are restored. No BatchNorm: nothing runs.
template <typename Batches>
void update_bn(Batches&& batches, Module& model, std::optional<Device> device = std::nullopt) {
  detail::UpdateBnState state = detail::begin_update_bn(model);
  if (state.momenta.empty()) return;
  try {
    NoGradGuard no_grad;
    for (const auto& batch : batches) {
      const Tensor& input = detail::first_tensor(batch);
      model(device ? input.to(*device) : input);
    }
  } catch (...) {
    detail::finish_update_bn(model, state);  // momenta and mode back; the statistics are partial
    throw;
  }
  detail::finish_update_bn(model, state);
}

}  // namespace mutagrad::nn
