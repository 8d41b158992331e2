// RMSprop (alpha, eps, weight decay, momentum, centered, maximize): torch.optim.RMSprop 1.13's
// single-tensor update, in place (see optimizer.h).
//
//   optim::RMSprop opt(params, optim::RMSpropOptions(1e-2).momentum(0.9).centered(true));
//   opt.step();   // state "step", "square_avg" (+ "momentum_buffer", "grad_avg")
#pragma once

#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace mutagrad::optim {

class RMSpropOptions final : public OptimizerOptions {
 public:
  explicit RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  RMSpropOptions& lr(double v) { return lr_ = v, *this; }
  RMSpropOptions& alpha(double v) { return alpha_ = v, *this; }
  RMSpropOptions& eps(double v) { return eps_ = v, *this; }
  RMSpropOptions& weight_decay(double v) { return weight_decay_ = v, *this; }
  RMSpropOptions& momentum(double v) { return momentum_ = v, *this; }
  RMSpropOptions& centered(bool v) { return centered_ = v, *this; }
  RMSpropOptions& maximize(bool v) { return maximize_ = v, *this; }
  double lr() const { return lr_; }
  double alpha() const { return alpha_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  double momentum() const { return momentum_; }
  bool centered() const { return centered_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<RMSpropOptions>(*this);
  }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void validate(const char* optimizer) const override;

 protected:
  std::vector<Field> fields() override;

 private:
  double lr_;
  double alpha_ = 0.99;
  double eps_ = 1e-8;
  double weight_decay_ = 0;
  double momentum_ = 0;
  bool centered_ = false;
  bool maximize_ = false;
};

class RMSprop final : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults);
  RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults);
  const char* name() const override { return "RMSprop"; }

 protected:
  bool accepts(const OptimizerOptions& options) const override;
  void update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
              ParamState& state, const MutationSite& site) override;
  const char* step_op() const override { return "RMSprop.step"; }
};

}  // namespace mutagrad::optim
