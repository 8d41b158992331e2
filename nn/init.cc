// nn::init's remaining initialisers (nn/init.h), each one write through the ops' own.
#include "nn/init.h"

#include <cmath>

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

}  // namespace mutagrad::nn::init
