// SGD with momentum, dampening, Nesterov, weight decay and maximize: torch.optim.SGD 1.13's
// single-tensor update, in place (see optimizer.h).
//
//   optim::SGD opt(params, optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
//   loss.backward();
//   opt.step();        // p -= lr * (g + momentum * buf) for each p, one bump each
//   opt.zero_grad();
#pragma once

#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace mutagrad::optim {

class SGDOptions final : public OptimizerOptions {
 public:
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double v) { return lr_ = v, *this; }
  SGDOptions& momentum(double v) { return momentum_ = v, *this; }
  SGDOptions& dampening(double v) { return dampening_ = v, *this; }
  SGDOptions& weight_decay(double v) { return weight_decay_ = v, *this; }
  SGDOptions& nesterov(bool v) { return nesterov_ = v, *this; }
  SGDOptions& maximize(bool v) { return maximize_ = v, *this; }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<SGDOptions>(*this);
  }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void validate(const char* optimizer) const override;

 protected:
  std::vector<Field> fields() override;

 private:
  double lr_;
  double momentum_ = 0;
  double dampening_ = 0;
  double weight_decay_ = 0;
  bool nesterov_ = false;
  bool maximize_ = false;
};

class SGD final : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& defaults);
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);
  const char* name() const override { return "SGD"; }

 protected:
  bool accepts(const OptimizerOptions& options) const override;
  void update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
              ParamState& state, const MutationSite& site) override;
  const char* step_op() const override { return "SGD.step"; }
};

}  // namespace mutagrad::optim
