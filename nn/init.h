// nn::init: torch.nn.init's in-place initialisers. Those the layers' reset_parameters use
// live with the ops (autograd/ops/init_ops.h: uniform_, normal_, zeros_, ones_,
// kaiming_uniform_, xavier_uniform_, calculate_gain, calculate_fan_in_and_fan_out); this
// header adds the rest with the same contract: one tracked in-place write each (one version
// bump with the caller's file:line), under no-grad, draws from the given Generator.
//
//   Generator gen(0);
//   nn::init::kaiming_normal_(w, gen, 0.0, "fan_out", "relu");
//   nn::init::constant_(b, 0.1);
#pragma once

#include <string_view>

#include "mutagrad.h"

namespace mutagrad::nn::init {

// Every element `value`.
Tensor& constant_(Tensor& tensor, double value, CallSite site = CallSite::current());
// Normal(0, std), std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& tensor, Generator& gen, double gain = 1.0,
                       CallSite site = CallSite::current());
// Normal(0, std), std = gain(nonlinearity, a) / sqrt(fan); mode "fan_in" or "fan_out".
Tensor& kaiming_normal_(Tensor& tensor, Generator& gen, double a = 0.0,
                        std::string_view mode = "fan_in",
                        std::string_view nonlinearity = "leaky_relu",
                        CallSite site = CallSite::current());

}  // namespace mutagrad::nn::init
