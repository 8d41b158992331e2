// Parameter initialisation as torch.nn.init: in-place writes through the mutation engine (one
// version bump each, recorded with the caller's file:line), under no-grad, so they apply to
// leaves that require grad. Random draws come from the given Generator (seeded: the same seed
// gives the same parameters on every platform).
//
//   Generator gen(0);
//   Tensor w = empty({128, 64}).requires_grad_();     // [out_features, in_features]
//   nn::init::kaiming_uniform_(w, gen, std::sqrt(5.0)); // torch.nn.Linear's weight init
//   nn::init::uniform_(b, gen, -bound, bound);
//   nn::init::zeros_(b);
#pragma once

#include <string_view>
#include <utility>

#include "tensor/native/factories.h"
#include "tensor/tensor.h"

namespace mutagrad::nn::init {

// torch.nn.init.calculate_gain: "linear", "conv*", "sigmoid" 1; "tanh" 5/3; "relu" sqrt(2);
// "leaky_relu" sqrt(2 / (1 + param^2)) (param: the negative slope, default 0.01); "selu" 3/4.
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);
// (fan_in, fan_out) of a weight of >= 2 dims: size(1) and size(0), times the receptive field
// (the product of the dims after the first two).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

// Uniform in [a, b) / normal(mean, std), in place.
Tensor& uniform_(Tensor& tensor, Generator& gen, double a = 0.0, double b = 1.0,
                 CallSite site = CallSite::current());
Tensor& normal_(Tensor& tensor, Generator& gen, double mean = 0.0, double std = 1.0,
                CallSite site = CallSite::current());
Tensor& zeros_(Tensor& tensor, CallSite site = CallSite::current());
Tensor& ones_(Tensor& tensor, CallSite site = CallSite::current());
// Uniform in [-bound, bound), bound = gain(nonlinearity, a) * sqrt(3 / fan); mode "fan_in" or
// "fan_out".
Tensor& kaiming_uniform_(Tensor& tensor, Generator& gen, double a = 0.0,
                         std::string_view mode = "fan_in",
                         std::string_view nonlinearity = "leaky_relu",
                         CallSite site = CallSite::current());
// Uniform in [-bound, bound), bound = gain * sqrt(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& tensor, Generator& gen, double gain = 1.0,
                        CallSite site = CallSite::current());

}  // namespace mutagrad::nn::init
