// AveragedModel and update_bn (nn/swa_utils.h).
#include "nn/swa_utils.h"

#include "nn/normalization.h"

namespace mutagrad::nn {

AvgFn get_swa_avg_fn() {
  return [](const Tensor& avg, const Tensor& p, int64_t n) {
    return avg + (p - avg) / static_cast<double>(n + 1);
  };
}

AvgFn get_ema_avg_fn(double decay) {
  return [decay](const Tensor& avg, const Tensor& p, int64_t /*n*/) {
    return avg * decay + p * (1 - decay);
  };
}

MultiAvgFn get_swa_multi_avg_fn() {
  return [](const std::vector<Tensor>& avgs, const std::vector<Tensor>& ps, int64_t n) {
    for (size_t i = 0; i < avgs.size(); ++i) {
      Tensor avg = avgs[i];
      if (avg.is_floating_point()) {
        avg.lerp_(ps[i], 1.0 / (static_cast<double>(n) + 1));
      } else {
        avg.copy_(avg + floor_divide(ps[i] - avg, n + 1));
      }
    }
  };
}

MultiAvgFn get_ema_multi_avg_fn(double decay) {
  return [decay](const std::vector<Tensor>& avgs, const std::vector<Tensor>& ps, int64_t) {
    for (size_t i = 0; i < avgs.size(); ++i) {
      Tensor avg = avgs[i];
      if (avg.is_floating_point()) {
        avg.lerp_(ps[i], 1 - decay);
      } else {
        avg.copy_(avg * decay + ps[i] * (1 - decay));
      }
    }
  };
}

AveragedModel::AveragedModel(const std::shared_ptr<Module>& model, AveragedModelOptions options)
    : Module("AveragedModel"), options_(std::move(options)) {
  if (!model) throw ValueError("AveragedModel: the model is null");
  module = register_module("module", model->clone());
  if (options_.device()) module->to(*options_.device());
  n_averaged = register_buffer(
      "n_averaged", zeros({}, TensorOptions(kInt64).device(options_.device().value_or(kCPU))));
}

std::vector<Tensor> AveragedModel::averaged_tensors(const Module& m) const {
  std::vector<Tensor> out = m.parameters();
  if (options_.use_buffers()) {
    for (const Tensor& b : m.buffers()) {
      if (b.defined()) out.push_back(b);
    }
  }
  return out;
}

void AveragedModel::update_parameters(const Module& model, CallSite site) {
  std::vector<Tensor> mine = averaged_tensors(*module);
  const std::vector<Tensor> theirs = averaged_tensors(model);
  const char* what = options_.use_buffers() ? "parameters and buffers" : "parameters";
  if (mine.size() != theirs.size()) {
    throw ValueError(str("AveragedModel.update_parameters(): the model has ", theirs.size(), " ",
                         what, " but the averaged copy has ", mine.size(),
                         "; pass a model of the same architecture"));
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    if (mine[i].sizes() != theirs[i].sizes()) {
      throw ValueError(str("AveragedModel.update_parameters(): tensor ", i, " of the model's ",
                           what, " has shape ", theirs[i].sizes(), " but the averaged one has ",
                           mine[i].sizes(), "; pass a model of the same architecture"));
    }
  }
  NoGradGuard no_grad;
  std::vector<Tensor> averaged, current;
  for (size_t i = 0; i < mine.size(); ++i) {
    averaged.push_back(mine[i].detach());
    current.push_back(theirs[i].detach().to(mine[i].device()));
  }
  const int64_t n = n_averaged.item<int64_t>();
  if (n == 0) {
    for (size_t i = 0; i < averaged.size(); ++i) averaged[i].copy_(current[i], site);
  } else if (options_.multi_avg_fn()) {
    options_.multi_avg_fn()(averaged, current, n);
  } else {
    const AvgFn avg_fn = options_.avg_fn() ? options_.avg_fn() : get_swa_avg_fn();
    for (size_t i = 0; i < averaged.size(); ++i) {
      averaged[i].copy_(avg_fn(averaged[i], current[i], n), site);
    }
  }
  n_averaged.add_(1, site);
}

std::shared_ptr<Module> AveragedModel::clone_module() const {
  auto copy = copy_module(*this);
  copy->module = cloned(module);
  copy->n_averaged = cloned(n_averaged);
  return copy;
}

namespace detail {

UpdateBnState begin_update_bn(Module& model) {
  UpdateBnState state;
  for (const std::shared_ptr<Module>& m : model.modules()) {
    auto* bn = dynamic_cast<BatchNormBase*>(m.get());
    if (bn == nullptr || !bn->running_mean.defined()) continue;
    bn->reset_running_stats();
    state.momenta.emplace_back(m, bn->options().momentum());
  }
  if (state.momenta.empty()) return state;
  state.was_training = model.is_training();
  model.train();
  for (auto& [m, momentum] : state.momenta) {
    static_cast<BatchNormBase*>(m.get())->set_momentum(std::nullopt);
  }
  return state;
}

void finish_update_bn(Module& model, const UpdateBnState& state) {
  for (const auto& [m, momentum] : state.momenta) {
    static_cast<BatchNormBase*>(m.get())->set_momentum(momentum);
  }
  model.train(state.was_training);
}

}  // namespace detail

}  // namespace mutagrad::nn
