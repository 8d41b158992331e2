// RMSprop: see rmsprop.h.
#include "optim/rmsprop.h"

#include "autograd/ops/inplace_ops.h"
#include "autograd/ops/ternary_ops.h"
#include "optim/checks.h"
#include "optim/fused.h"

namespace mutagrad::optim {

using detail::check_option;

void RMSpropOptions::validate(const char* optimizer) const {
  check_option(lr_ >= 0, optimizer, "lr", lr_, ">= 0");
  check_option(eps_ >= 0, optimizer, "eps", eps_, ">= 0");
  check_option(momentum_ >= 0, optimizer, "momentum", momentum_, ">= 0");
  check_option(weight_decay_ >= 0, optimizer, "weight_decay", weight_decay_, ">= 0");
  check_option(alpha_ >= 0, optimizer, "alpha", alpha_, ">= 0");
}

std::vector<OptimizerOptions::Field> RMSpropOptions::fields() {
  return {{"lr", &lr_, nullptr},
          {"alpha", &alpha_, nullptr},
          {"eps", &eps_, nullptr},
          {"weight_decay", &weight_decay_, nullptr},
          {"momentum", &momentum_, nullptr},
          {"centered", nullptr, &centered_},
          {"maximize", nullptr, &maximize_}};
}

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults)
    : RMSprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults)
    : Optimizer(defaults.clone()) {
  add_groups(std::move(groups));
}

bool RMSprop::accepts(const OptimizerOptions& options) const {
  return dynamic_cast<const RMSpropOptions*>(&options) != nullptr;
}

// torch 1.13's _single_tensor_rmsprop.
void RMSprop::update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                     ParamState& state, const MutationSite& site) {
  const auto& o = static_cast<const RMSpropOptions&>(options);
  Tensor& step = state["step"];
  if (!step.defined()) {
    step = zeros({}, TensorOptions(kInt64));  // torch keeps an int
    state["square_avg"] = zeros_like(param);
  }
  if (o.momentum() > 0 && !state["momentum_buffer"].defined()) {
    state["momentum_buffer"] = zeros_like(param);
  }
  if (o.centered() && !state["grad_avg"].defined()) state["grad_avg"] = zeros_like(param);
  step.add_(1);

  Tensor g = o.maximize() ? grad.neg() : grad;
  if (o.weight_decay() != 0) g = g.add(param, o.weight_decay());
  Tensor& square_avg = state["square_avg"];
  square_avg.mul_(o.alpha()).addcmul_(g, g, 1 - o.alpha());
  Tensor avg;
  if (o.centered()) {
    Tensor& grad_avg = state["grad_avg"];
    grad_avg.mul_(o.alpha()).add_(g, 1 - o.alpha());
    avg = square_avg.addcmul(grad_avg, grad_avg, -1).sqrt_();
  } else {
    avg = square_avg.sqrt();
  }
  avg.add_(o.eps());
  if (o.momentum() > 0) {
    Tensor& buf = state["momentum_buffer"];
    buf.mul_(o.momentum()).addcdiv_(g, avg);
    autograd::add_(param, buf, -o.lr(), site);  // the parameter's one write
  } else {
    autograd::addcdiv_(param, g, avg, -o.lr(), site);
  }
}

}  // namespace mutagrad::optim
