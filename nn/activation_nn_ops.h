// LeakyReLU, GELU, SiLU, ELU, Softplus: the activation layers over autograd/ops/nn_ops.h's
// functional forms, with torch.nn's options and repr (the others: nn/activation.h).
//
//   auto act = std::make_shared<nn::GELU>("tanh");
//   auto leaky = std::make_shared<nn::LeakyReLU>(0.2, /*inplace=*/true);   // leaky_relu_
#pragma once

#include <string>

#include "nn/module.h"

namespace mutagrad::nn {

// x for x > 0, negative_slope * x otherwise (inplace: leaky_relu_).
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01, bool inplace = false)
      : Module("LeakyReLU"), negative_slope_(negative_slope), inplace_(inplace) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  double negative_slope_;
  bool inplace_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// approximate: "none" (erf) or "tanh"; anything else is a ValueError at construction.
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return "approximate='" + approximate_ + "'"; }

 private:
  std::string approximate_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// x * sigmoid(x). (torch's inplace option is not offered: there is no silu_ op.)
class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& input) override;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// x for x > 0, alpha * (exp(x) - 1) otherwise (inplace: elu_).
class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0, bool inplace = false)
      : Module("ELU"), alpha_(alpha), inplace_(inplace) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  double alpha_;
  bool inplace_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// log(1 + exp(beta x)) / beta, and x where beta x > threshold. The repr prints an integral
// beta or threshold as an integer (torch's defaults, ints in Python: "beta=1, threshold=20").
class Softplus : public Module {
 public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0)
      : Module("Softplus"), beta_(beta), threshold_(threshold) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  double beta_, threshold_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

}  // namespace mutagrad::nn
