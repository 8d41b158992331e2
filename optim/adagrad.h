// Adagrad (lr decay, weight decay, initial accumulator value, eps, maximize): torch.optim.Adagrad
// 1.13's single-tensor update, in place (see optimizer.h).
//
//   optim::Adagrad opt(params, optim::AdagradOptions(1e-2).lr_decay(1e-3));
//   opt.step();   // state "step" (a float32 0-dim tensor) and "sum"
//
// Note [Adagrad's state exists before the first step]
// As torch 1.13, the constructor creates every parameter's state ("step" = 0, "sum" filled with
// its group's initial_accumulator_value), so state_dict() lists it before any step. A group
// added later by add_param_group gets its state then too (torch 1.13 would raise a KeyError at
// the next step).
#pragma once

#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace mutagrad::optim {

class AdagradOptions final : public OptimizerOptions {
 public:
  explicit AdagradOptions(double lr = 1e-2) : lr_(lr) {}
  AdagradOptions& lr(double v) { return lr_ = v, *this; }
  AdagradOptions& lr_decay(double v) { return lr_decay_ = v, *this; }
  AdagradOptions& weight_decay(double v) { return weight_decay_ = v, *this; }
  AdagradOptions& initial_accumulator_value(double v) {
    return initial_accumulator_value_ = v, *this;
  }
  AdagradOptions& eps(double v) { return eps_ = v, *this; }
  AdagradOptions& maximize(bool v) { return maximize_ = v, *this; }
  double lr() const { return lr_; }
  double lr_decay() const { return lr_decay_; }
  double weight_decay() const { return weight_decay_; }
  double initial_accumulator_value() const { return initial_accumulator_value_; }
  double eps() const { return eps_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdagradOptions>(*this);
  }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void validate(const char* optimizer) const override;

 protected:
  std::vector<Field> fields() override;

 private:
  double lr_;
  double lr_decay_ = 0;
  double weight_decay_ = 0;
  double initial_accumulator_value_ = 0;
  double eps_ = 1e-10;
  bool maximize_ = false;
};

class Adagrad final : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults);
  Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults);
  const char* name() const override { return "Adagrad"; }

 protected:
  bool accepts(const OptimizerOptions& options) const override;
  void update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
              ParamState& state, const MutationSite& site) override;
  const char* step_op() const override { return "Adagrad.step"; }
  void on_group_added(ParamGroup& group) override;
};

}  // namespace mutagrad::optim
