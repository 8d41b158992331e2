// Activation layers: ReLU, Tanh, Sigmoid, Softmax, LogSoftmax (LeakyReLU, GELU, SiLU: in
// nn/activation_nn_ops.h), with
// torch.nn's options and repr. The functional forms are the ops' (autograd/ops/).
//
//   auto act = std::make_shared<nn::ReLU>(/*inplace=*/true);   // x.relu_(): one tracked write
//   auto sm = std::make_shared<nn::LogSoftmax>(/*dim=*/1);
//
// An inplace layer writes its input through the mutation engine: a graph that saved the input
// (or its output) refuses it at backward with the stale-tensor error, as in torch.
#pragma once

#include <string>

#include "nn/module.h"

namespace mutagrad::nn {

class ReLU : public Module {
 public:
  explicit ReLU(bool inplace = false) : Module("ReLU"), inplace_(inplace) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return inplace_ ? "inplace=True" : ""; }

 private:
  bool inplace_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& input) override { return input.tanh(); }

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) override { return input.sigmoid(); }

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// Along `dim` (required: torch's implicit dim is deprecated).
class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : Module("Softmax"), dim_(dim) {}
  Tensor forward(const Tensor& input) override { return input.softmax(dim_); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim_); }

 private:
  int64_t dim_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : Module("LogSoftmax"), dim_(dim) {}
  Tensor forward(const Tensor& input) override { return input.log_softmax(dim_); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim_); }

 private:
  int64_t dim_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

}  // namespace mutagrad::nn
