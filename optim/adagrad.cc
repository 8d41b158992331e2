// Adagrad: see adagrad.h.
#include "optim/adagrad.h"

#include "autograd/ops/ternary_ops.h"
#include "optim/checks.h"
#include "optim/fused.h"

namespace mutagrad::optim {

using detail::check_option;

namespace {

void init_state(const Tensor& param, const AdagradOptions& o, ParamState& state) {
  state["step"] = zeros({}, TensorOptions(kFloat32));  // torch.tensor(0.)
  state["sum"] = full_like(param, o.initial_accumulator_value());
}

}  // namespace

void AdagradOptions::validate(const char* optimizer) const {
  check_option(lr_ >= 0, optimizer, "lr", lr_, ">= 0");
  check_option(lr_decay_ >= 0, optimizer, "lr_decay", lr_decay_, ">= 0");
  check_option(weight_decay_ >= 0, optimizer, "weight_decay", weight_decay_, ">= 0");
  check_option(initial_accumulator_value_ >= 0, optimizer, "initial_accumulator_value",
               initial_accumulator_value_, ">= 0");
  check_option(eps_ >= 0, optimizer, "eps", eps_, ">= 0");
}

std::vector<OptimizerOptions::Field> AdagradOptions::fields() {
  return {{"lr", &lr_, nullptr},
          {"lr_decay", &lr_decay_, nullptr},
          {"weight_decay", &weight_decay_, nullptr},
          {"initial_accumulator_value", &initial_accumulator_value_, nullptr},
          {"eps", &eps_, nullptr},
          {"maximize", nullptr, &maximize_}};
}

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults)
    : Adagrad(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults)
    : Optimizer(defaults.clone()) {
  add_groups(std::move(groups));
}

// Note [Adagrad's state exists before the first step]
void Adagrad::on_group_added(ParamGroup& group) {
  for (const Tensor& p : group.params()) {
    init_state(p, static_cast<const AdagradOptions&>(group.options()), state(p));
  }
}

bool Adagrad::accepts(const OptimizerOptions& options) const {
  return dynamic_cast<const AdagradOptions*>(&options) != nullptr;
}

// torch 1.13's _single_tensor_adagrad (dense gradients).
void Adagrad::update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                     ParamState& state, const MutationSite& site) {
  const auto& o = static_cast<const AdagradOptions&>(options);
  if (!state["step"].defined() || !state["sum"].defined()) init_state(param, o, state);
  Tensor& step_t = state["step"];
  step_t.add_(1);
  const double step = step_t.item<double>();
  Tensor g = o.maximize() ? grad.neg() : grad;
  if (o.weight_decay() != 0) g = g.add(param, o.weight_decay());
  const double clr = o.lr() / (1 + (step - 1) * o.lr_decay());
  Tensor& sum = state["sum"];
  sum.addcmul_(g, g, 1);
  Tensor std = sum.sqrt().add_(o.eps());
  autograd::addcdiv_(param, g, std, -clr, site);  // the parameter's one write
}

}  // namespace mutagrad::optim
