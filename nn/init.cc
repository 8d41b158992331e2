// nn::init's remaining initialisers (nn/init.h), each one write through the ops' own.
#include "nn/init.h"

#include <cmath>
#include <vector>

namespace mutagrad::nn::init {

Tensor& constant_(Tensor& tensor, double value, CallSite site) {
  NoGradGuard no_grad;
  return tensor.fill_(value, site);
}

Tensor& xavier_normal_(Tensor& tensor, Generator& gen, double gain, CallSite site) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return normal_(tensor, gen, 0.0, std, site);
}

Tensor& kaiming_normal_(Tensor& tensor, Generator& gen, double a, std::string_view mode,
                        std::string_view nonlinearity, CallSite site) {
  if (mode != "fan_in" && mode != "fan_out") {
    throw ValueError(
        str("kaiming_normal_(): mode '", mode, "' not supported; expected 'fan_in' or 'fan_out'"));
  }
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  if (tensor.numel() == 0) return tensor;  // torch: a no-op on zero-element tensors
  const int64_t fan = mode == "fan_in" ? fan_in : fan_out;
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  return normal_(tensor, gen, 0.0, std, site);
}

namespace {

void check_floating(const Tensor& t, const char* op) {
  if (!t.defined() || !t.is_floating_point()) {
    throw DTypeError(str(op, "(): expected a defined floating point tensor, got ",
                         t.defined() ? dtype_name(t.dtype()) : "an undefined tensor",
                         "; initialise float32 or float64 parameters"));
  }
}

}  // namespace

Tensor& trunc_normal_(Tensor& tensor, Generator& gen, double mean, double std, double a, double b,
                      CallSite site) {
  check_floating(tensor, "trunc_normal_");
  if (!(std > 0) || !(a < b)) {
    throw ValueError(str("trunc_normal_(): expected std > 0 and a < b, got std=", std, " a=", a,
                         " b=", b, "; pass a non-empty interval and a positive std"));
  }
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double lo = cdf((a - mean) / std);
  const double hi = cdf((b - mean) / std);
  NoGradGuard no_grad;
  // Note: the scratch tensor's writes are not the parameter's; `tensor` is written once.
  Tensor scratch = empty_like(tensor);
  scratch.uniform_(2 * lo - 1, 2 * hi - 1, gen);
  scratch.erfinv_();
  scratch.mul_(std * std::sqrt(2.0));
  scratch.add_(mean);
  scratch.clamp_(a, b);
  return tensor.copy_(scratch, site);
}

Tensor& eye_(Tensor& tensor, CallSite site) {
  if (!tensor.defined() || tensor.dim() != 2) {
    throw ShapeError(str("eye_(): only tensors with 2 dimensions are supported, got ",
                         tensor.defined() ? str("shape ", tensor.sizes()) : "an undefined tensor",
                         "; pass a matrix"));
  }
  NoGradGuard no_grad;
  Tensor eye = mutagrad::eye(tensor.size(0), tensor.size(1),
                             TensorOptions(tensor.dtype()).device(tensor.device()));
  return tensor.copy_(eye, site);
}

Tensor& orthogonal_(Tensor& tensor, Generator& gen, double gain, CallSite site) {
  check_floating(tensor, "orthogonal_");
  if (tensor.dim() < 2) {
    throw ShapeError(
        str("orthogonal_(): only tensors with 2 or more dimensions are supported, "
            "got shape ",
            tensor.sizes(), "; pass a weight of shape [out, in, ...]"));
  }
  if (tensor.numel() == 0) return tensor;
  const int64_t rows = tensor.size(0);
  const int64_t cols = tensor.numel() / rows;
  NoGradGuard no_grad;
  Tensor draw = empty({rows, cols}, TensorOptions(kFloat64).device(tensor.device()));
  draw.normal_(0.0, 1.0, gen);
  const Tensor m = rows < cols ? draw.t() : draw;
  // Gram-Schmidt, each column orthogonalised twice against those before ("twice is enough").
  std::vector<Tensor> columns;
  for (int64_t j = 0; j < m.size(1); ++j) {
    Tensor v = m.select(1, j).clone();
    if (!columns.empty()) {
      const Tensor q = stack(columns, 1);
      for (int pass = 0; pass < 2; ++pass) v = v - q.matmul(q.t().matmul(v));
    }
    columns.push_back(v / v.norm());
  }
  Tensor q = stack(columns, 1);
  if (rows < cols) q = q.t();
  return tensor.copy_((q * gain).reshape(tensor.sizes()).to(tensor.dtype()), site);
}

}  // namespace mutagrad::nn::init
