// LeakyReLU, GELU, SiLU (nn/activation_nn_ops.h).
#include "nn/activation_nn_ops.h"

#include "autograd/ops/nn_ops.h"

namespace mutagrad::nn {

Tensor LeakyReLU::forward(const Tensor& input) {
  if (!inplace_) return leaky_relu(input, negative_slope_);
  Tensor x = input;
  return leaky_relu_(x, negative_slope_);
}

std::string LeakyReLU::extra_repr() const {
  return "negative_slope=" + python_float_repr(negative_slope_) +
         (inplace_ ? ", inplace=True" : "");
}

GELU::GELU(std::string approximate) : Module("GELU"), approximate_(std::move(approximate)) {
  if (approximate_ != "none" && approximate_ != "tanh") {
    throw ValueError(str("GELU: approximate must be 'none' or 'tanh', got '", approximate_, "'"));
  }
}

Tensor GELU::forward(const Tensor& input) { return gelu(input, approximate_); }

Tensor SiLU::forward(const Tensor& input) { return silu(input); }

}  // namespace mutagrad::nn
