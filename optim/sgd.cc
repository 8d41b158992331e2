// SGD: see sgd.h.
#include "optim/sgd.h"

#include <type_traits>

#include "autograd/ops/inplace_ops.h"
#include "optim/checks.h"
#include "optim/fused.h"
#include "tensor/cpu/fused_optim.h"

namespace mutagrad::optim {

using detail::check_option;

void SGDOptions::validate(const char* optimizer) const {
  check_option(lr_ >= 0, optimizer, "lr", lr_, ">= 0");
  check_option(momentum_ >= 0, optimizer, "momentum", momentum_, ">= 0");
  check_option(weight_decay_ >= 0, optimizer, "weight_decay", weight_decay_, ">= 0");
  if (nesterov_ && (momentum_ <= 0 || dampening_ != 0)) {
    throw ValueError(str(optimizer,
                         ": Nesterov momentum requires a momentum and zero dampening "
                         "(got momentum=",
                         momentum_, ", dampening=", dampening_,
                         "); set momentum > 0 and dampening 0, or nesterov false"));
  }
}

std::vector<OptimizerOptions::Field> SGDOptions::fields() {
  return {{"lr", &lr_, nullptr},
          {"momentum", &momentum_, nullptr},
          {"dampening", &dampening_, nullptr},
          {"weight_decay", &weight_decay_, nullptr},
          {"nesterov", nullptr, &nesterov_},
          {"maximize", nullptr, &maximize_}};
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& defaults)
    : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults) : Optimizer(defaults.clone()) {
  add_groups(std::move(groups));
}

bool SGD::accepts(const OptimizerOptions& options) const {
  return dynamic_cast<const SGDOptions*>(&options) != nullptr;
}

void SGD::update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                 ParamState& state, const MutationSite& site) {
  const auto& o = static_cast<const SGDOptions&>(options);
  // One pass when the parameter allows it (Note [Fused optimizer steps]); the first momentum
  // step, which clones the gradient into the buffer, takes the op-by-op path.
  Tensor* buf = o.momentum() != 0 ? &state["momentum_buffer"] : nullptr;
  const bool first_momentum_step = buf != nullptr && !buf->defined();
  if (!first_momentum_step &&
      (buf != nullptr ? detail::fusable(param, {&grad, buf}) : detail::fusable(param, {&grad}))) {
    if (buf != nullptr) {
      detail::bump_for_step({buf, &param}, site);
    } else {
      detail::bump_for_step({&param}, site);
    }
    const auto run = [&](auto* p) {
      using T = std::remove_pointer_t<decltype(p)>;
      cpu::SGDStep<T> s{p, grad.data_ptr<T>(), buf != nullptr ? buf->data_ptr<T>() : nullptr,
                        param.numel()};
      s.lr = o.lr();
      s.momentum = o.momentum();
      s.dampening = o.dampening();
      s.weight_decay = o.weight_decay();
      s.nesterov = o.nesterov();
      s.maximize = o.maximize();
      fused_steps().add(s);  // Note [One pass per group]
    };
    if (param.dtype() == kFloat32) {
      run(param.data_ptr<float>());
    } else {
      run(param.data_ptr<double>());
    }
    return;
  }
  fused_steps().run();  // the queued parameters' writes come first (Note [One pass per group])
  // torch 1.13's _single_tensor_sgd.
  Tensor d_p = o.maximize() ? grad.neg() : grad;
  if (o.weight_decay() != 0) d_p = d_p.add(param, o.weight_decay());
  if (o.momentum() != 0) {
    Tensor& buf = state["momentum_buffer"];
    if (!buf.defined()) {
      buf = d_p.detach().clone();
    } else {
      buf.mul_(o.momentum()).add_(d_p, 1 - o.dampening());
    }
    d_p = o.nesterov() ? d_p.add(buf, o.momentum()) : buf;
  }
  autograd::add_(param, d_p, -o.lr(), site);  // the parameter's one write
}

}  // namespace mutagrad::optim
