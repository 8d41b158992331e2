// LeakyReLU, GELU, SiLU (nn/activation_nn_ops.h).
#include "nn/activation_nn_ops.h"

#include "autograd/ops/nn_ops.h"

namespace mutagrad::nn {

Tensor LeakyReLU::forward(const Tensor& input) {
  if (!inplace_) return leaky_relu(input, negative_slope_);
  Tensor x = input;
  return leaky_relu_(x, negative_slope_, write_site());
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

Tensor ELU::forward(const Tensor& input) {
  if (!inplace_) return elu(input, alpha_);
  Tensor x = input;
  return elu_(x, alpha_, write_site());
}

std::string ELU::extra_repr() const {
  return "alpha=" + python_float_repr(alpha_) + (inplace_ ? ", inplace=True" : "");
}

Tensor Softplus::forward(const Tensor& input) { return softplus(input, beta_, threshold_); }

namespace {

std::string int_or_float(double v) {
  return v == static_cast<double>(static_cast<int64_t>(v)) ? std::to_string(static_cast<int64_t>(v))
                                                           : python_float_repr(v);
}

}  // namespace

std::string Softplus::extra_repr() const {
  return "beta=" + int_or_float(beta_) + ", threshold=" + int_or_float(threshold_);
}

}  // namespace mutagrad::nn
