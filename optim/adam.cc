// Adam and AdamW: see adam.h.
#include "optim/adam.h"

#include <cmath>
#include <type_traits>

#include "autograd/ops/inplace_ops.h"
#include "autograd/ops/ternary_ops.h"
#include "optim/checks.h"
#include "optim/fused.h"
#include "tensor/cpu/fused_optim.h"

namespace mutagrad::optim {
namespace detail {

template <typename Derived>
void AdamOptionsBase<Derived>::validate(const char* optimizer) const {
  check_option(lr_ >= 0, optimizer, "lr", lr_, ">= 0");
  check_option(eps_ >= 0, optimizer, "eps", eps_, ">= 0");
  check_option(beta1_ >= 0 && beta1_ < 1, optimizer, "beta1 (betas[0])", beta1_, "in [0, 1)");
  check_option(beta2_ >= 0 && beta2_ < 1, optimizer, "beta2 (betas[1])", beta2_, "in [0, 1)");
  check_option(weight_decay_ >= 0, optimizer, "weight_decay", weight_decay_, ">= 0");
}

template class AdamOptionsBase<AdamOptions>;
template class AdamOptionsBase<AdamWOptions>;

}  // namespace detail

namespace {

// torch 1.13's _single_tensor_adam / _single_tensor_adamw (capturable=False): `decoupled`
// selects AdamW's decay of the parameter over Adam's weight decay on the gradient.
template <typename Options>
void adam_update(const Tensor& param, const Tensor& grad, const Options& o, bool decoupled,
                 ParamState& state, const MutationSite& site, detail::FusedSteps& fused) {
  Tensor& step_t = state["step"];
  if (!step_t.defined()) {
    step_t = zeros({}, TensorOptions(kFloat32));  // torch.tensor(0.)
    state["exp_avg"] = zeros_like(param);
    state["exp_avg_sq"] = zeros_like(param);
    if (o.amsgrad()) state["max_exp_avg_sq"] = zeros_like(param);
  }
  Tensor& exp_avg = state["exp_avg"];
  Tensor& exp_avg_sq = state["exp_avg_sq"];
  const auto [beta1, beta2] = o.betas();
  const double lr = o.lr();
  const double wd = o.weight_decay();

  step_t.add_(1);
  const double step = step_t.item<double>();
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  Tensor* max_sq = o.amsgrad() ? &state["max_exp_avg_sq"] : nullptr;
  if (max_sq != nullptr && !max_sq->defined()) *max_sq = zeros_like(param);  // amsgrad turned on
  if (max_sq != nullptr ? detail::fusable(param, {&grad, &exp_avg, &exp_avg_sq, max_sq})
                        : detail::fusable(param, {&grad, &exp_avg, &exp_avg_sq})) {
    if (max_sq != nullptr) {
      detail::bump_for_step({&exp_avg, &exp_avg_sq, max_sq, &param}, site);
    } else {
      detail::bump_for_step({&exp_avg, &exp_avg_sq, &param}, site);
    }
    const auto run = [&](auto* p) {
      using T = std::remove_pointer_t<decltype(p)>;
      cpu::AdamStep<T> s{p,
                         grad.data_ptr<T>(),
                         exp_avg.data_ptr<T>(),
                         exp_avg_sq.data_ptr<T>(),
                         max_sq != nullptr ? max_sq->data_ptr<T>() : nullptr,
                         param.numel()};
      s.beta1 = beta1;
      s.beta2 = beta2;
      s.lr = lr;
      s.weight_decay = wd;
      s.eps = o.eps();
      s.step_size = step_size;
      s.bias_correction2_sqrt = bias_correction2_sqrt;
      s.maximize = o.maximize();
      s.decoupled = decoupled;
      fused.add(s);  // Note [One pass per group]
    };
    if (param.dtype() == kFloat32) {
      run(param.data_ptr<float>());
    } else {
      run(param.data_ptr<double>());
    }
    return;
  }
  fused.run();  // the queued parameters' writes come first (Note [One pass per group])
  Tensor g = o.maximize() ? grad.neg() : grad;
  if (!decoupled && wd != 0) g = g.add(param, wd);
  exp_avg.mul_(beta1).add_(g, 1 - beta1);
  exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2);
  Tensor denom;
  if (max_sq != nullptr) {
    max_sq->copy_(maximum(*max_sq, exp_avg_sq));
    denom = (max_sq->sqrt() / bias_correction2_sqrt).add_(o.eps());
  } else {
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(o.eps());
  }
  if (decoupled && wd != 0) {
    // torch: param.mul_(1 - lr * wd); param.addcdiv_(...). One write here (Note [One bump per
    // parameter per step]), the same rounding.
    Tensor next = param * Scalar(1 - lr * wd);
    next.addcdiv_(exp_avg, denom, -step_size);
    autograd::copy_(param, next, site);
  } else {
    autograd::addcdiv_(param, exp_avg, denom, -step_size, site);
  }
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& defaults)
    : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Optimizer(defaults.clone()) {
  add_groups(std::move(groups));
}

bool Adam::accepts(const OptimizerOptions& options) const {
  return dynamic_cast<const AdamOptions*>(&options) != nullptr;
}

void Adam::update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                  ParamState& state, const MutationSite& site) {
  adam_update(param, grad, static_cast<const AdamOptions&>(options), /*decoupled=*/false, state,
              site, fused_steps());
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& defaults)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Optimizer(defaults.clone()) {
  add_groups(std::move(groups));
}

bool AdamW::accepts(const OptimizerOptions& options) const {
  return dynamic_cast<const AdamWOptions*>(&options) != nullptr;
}

void AdamW::update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                   ParamState& state, const MutationSite& site) {
  adam_update(param, grad, static_cast<const AdamWOptions&>(options), /*decoupled=*/true, state,
              site, fused_steps());
}

}  // namespace mutagrad::optim
