// Adam and AdamW (amsgrad, weight decay, maximize): torch.optim.Adam/AdamW 1.13's single-tensor
// update, in place (see optimizer.h). Adam adds weight_decay * p to the gradient; AdamW decays
// the parameter itself (p *= 1 - lr * weight_decay), its default weight_decay is 1e-2.
//
//   optim::Adam opt(params, optim::AdamOptions(1e-3).betas({0.9, 0.98}).amsgrad(true));
//   optim::AdamW opt2(params, optim::AdamWOptions(1e-3).weight_decay(1e-2));
//   opt2.step();   // state "step", "exp_avg", "exp_avg_sq" (+ "max_exp_avg_sq") per parameter
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "optim/optimizer.h"

namespace mutagrad::optim {

namespace detail {
// The options Adam and AdamW share; `Derived` is the concrete options type (builders return it).
template <typename Derived>
class AdamOptionsBase : public OptimizerOptions {
 public:
  Derived& lr(double v) { return lr_ = v, self(); }
  Derived& betas(std::pair<double, double> v) {
    beta1_ = v.first;
    beta2_ = v.second;
    return self();
  }
  Derived& eps(double v) { return eps_ = v, self(); }
  Derived& weight_decay(double v) { return weight_decay_ = v, self(); }
  Derived& amsgrad(bool v) { return amsgrad_ = v, self(); }
  Derived& maximize(bool v) { return maximize_ = v, self(); }
  double lr() const { return lr_; }
  std::pair<double, double> betas() const { return {beta1_, beta2_}; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool amsgrad() const { return amsgrad_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void validate(const char* optimizer) const override;

 protected:
  AdamOptionsBase(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}
  std::vector<Field> fields() override {
    return {{"lr", &lr_, nullptr},
            {"beta1", &beta1_, nullptr},
            {"beta2", &beta2_, nullptr},
            {"eps", &eps_, nullptr},
            {"weight_decay", &weight_decay_, nullptr},
            {"amsgrad", nullptr, &amsgrad_},
            {"maximize", nullptr, &maximize_}};
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  double lr_;
  double beta1_ = 0.9;
  double beta2_ = 0.999;
  double eps_ = 1e-8;
  double weight_decay_;
  bool amsgrad_ = false;
  bool maximize_ = false;
};
}  // namespace detail

class AdamOptions final : public detail::AdamOptionsBase<AdamOptions> {
 public:
  explicit AdamOptions(double lr = 1e-3) : AdamOptionsBase(lr, 0.0) {}
};

class AdamWOptions final : public detail::AdamOptionsBase<AdamWOptions> {
 public:
  explicit AdamWOptions(double lr = 1e-3) : AdamOptionsBase(lr, 1e-2) {}
};

class Adam final : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& defaults);
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults);
  const char* name() const override { return "Adam"; }

 protected:
  bool accepts(const OptimizerOptions& options) const override;
  void update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
              ParamState& state, const MutationSite& site) override;
  const char* step_op() const override { return "Adam.step"; }
};

class AdamW final : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& defaults);
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults);
  const char* name() const override { return "AdamW"; }

 protected:
  bool accepts(const OptimizerOptions& options) const override;
  void update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
              ParamState& state, const MutationSite& site) override;
  const char* step_op() const override { return "AdamW.step"; }
};

}  // namespace mutagrad::optim
