// nn::init: see init_ops.h. Each helper draws its values into a fresh tensor, then writes them
// with one copy_/fill_ under no-grad: one bump, the caller's call site, history untouched.
#include "autograd/ops/init_ops.h"

#include <cmath>
#include <string>

#include "autograd/grad_mode.h"
#include "autograd/ops/binary_ops.h"

namespace mutagrad::nn::init {
namespace {

void check_floating(const Tensor& t, const char* op) {
  if (!t.defined() || !t.is_floating_point()) {
    throw DTypeError(str(op, "(): expected a defined floating point tensor, got ",
                         t.defined() ? dtype_name(t.dtype()) : "an undefined tensor",
                         "; initialise float32 or float64 parameters"));
  }
}

// Uniform in [a, b) of t's shape, dtype and device.
Tensor draw_uniform(const Tensor& t, Generator& gen, double a, double b) {
  Tensor r = rand(t.sizes(), gen, TensorOptions(t.dtype()).device(t.device()));
  return r * (b - a) + a;
}

Tensor& write(Tensor& t, const Tensor& values, CallSite site) {
  autograd::NoGradGuard no_grad;
  t.copy_(values, site);
  return t;
}

}  // namespace

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" ||
      nonlinearity.substr(0, 4) == "conv") {
    return 1.0;
  }
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "selu") return 3.0 / 4.0;
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  throw ValueError(str("calculate_gain(): unsupported nonlinearity '", nonlinearity,
                       "'; expected linear, conv1d/2d/3d, sigmoid, tanh, relu, leaky_relu or "
                       "selu"));
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  if (tensor.dim() < 2) {
    throw ShapeError(
        str("calculate_fan_in_and_fan_out(): fan in and fan out can not be computed "
            "for a tensor with fewer than 2 dimensions (shape ",
            tensor.sizes(), "); pass a weight of shape [out, in, ...]"));
  }
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

Tensor& uniform_(Tensor& tensor, Generator& gen, double a, double b, CallSite site) {
  check_floating(tensor, "uniform_");
  if (!(a <= b)) {
    throw ValueError(str("uniform_(): expected a <= b, got a=", a, " b=", b));
  }
  return write(tensor, draw_uniform(tensor, gen, a, b), site);
}

Tensor& normal_(Tensor& tensor, Generator& gen, double mean, double std, CallSite site) {
  check_floating(tensor, "normal_");
  if (!(std >= 0)) throw ValueError(str("normal_(): expected std >= 0, got std=", std));
  Tensor r = randn(tensor.sizes(), gen, TensorOptions(tensor.dtype()).device(tensor.device()));
  return write(tensor, r * std + mean, site);
}

Tensor& zeros_(Tensor& tensor, CallSite site) {
  autograd::NoGradGuard no_grad;
  tensor.fill_(0, site);
  return tensor;
}

Tensor& ones_(Tensor& tensor, CallSite site) {
  autograd::NoGradGuard no_grad;
  tensor.fill_(1, site);
  return tensor;
}

Tensor& kaiming_uniform_(Tensor& tensor, Generator& gen, double a, std::string_view mode,
                         std::string_view nonlinearity, CallSite site) {
  check_floating(tensor, "kaiming_uniform_");
  if (mode != "fan_in" && mode != "fan_out") {
    throw ValueError(
        str("kaiming_uniform_(): mode '", mode, "' not supported; expected 'fan_in' or 'fan_out'"));
  }
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const int64_t fan = mode == "fan_in" ? fan_in : fan_out;
  if (tensor.numel() == 0) return tensor;  // torch: "Initializing zero-element tensors is a no-op"
  const double bound = calculate_gain(nonlinearity, a) * std::sqrt(3.0 / static_cast<double>(fan));
  return write(tensor, draw_uniform(tensor, gen, -bound, bound), site);
}

Tensor& xavier_uniform_(Tensor& tensor, Generator& gen, double gain, CallSite site) {
  check_floating(tensor, "xavier_uniform_");
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return write(tensor, draw_uniform(tensor, gen, -bound, bound), site);
}

}  // namespace mutagrad::nn::init
