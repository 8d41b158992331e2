// nn::init: torch.nn.init's in-place initialisers. Those the layers' reset_parameters use
// live with the ops (autograd/ops/init_ops.h: uniform_, normal_, zeros_, ones_,
// kaiming_uniform_, xavier_uniform_, calculate_gain, calculate_fan_in_and_fan_out); this
// header adds the rest with the same contract: one tracked in-place write each (one version
// bump with the caller's file:line), under no-grad, draws from the given Generator.
//
//   Generator gen(0);
//   nn::init::kaiming_normal_(w, gen, 0.0, "fan_out", "relu");
//   nn::init::constant_(b, 0.1);
//   nn::init::orthogonal_(w, gen);                  // Q^T Q = I over w viewed as [size(0), -1]
//
// trunc_normal_ and orthogonal_ compute into scratch memory and copy it in once, with the ops
// and in the order of python/src/mutagrad/nn/init.py, so the same seed gives the same bits as
// the Python package's (tests/nn/init_test.cc checks it). Every check runs before the write: a
// refused call changes neither the tensor nor its version.
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

// N(mean, std) restricted to [a, b]: a uniform draw in [2 cdf(a') - 1, 2 cdf(b') - 1] through
// erfinv (the inverse CDF), scaled, shifted and clamped to [a, b]. ValueError unless std > 0 and
// a < b; DTypeError for a non-floating tensor.
Tensor& trunc_normal_(Tensor& tensor, Generator& gen, double mean = 0.0, double std = 1.0,
                      double a = -2.0, double b = 2.0, CallSite site = CallSite::current());
// The identity matrix (ones on the diagonal) in a 2-D tensor of any dtype; ShapeError otherwise.
Tensor& eye_(Tensor& tensor, CallSite site = CallSite::current());
// A (semi-)orthogonal matrix times gain in `tensor` viewed as [size(0), numel / size(0)]: the Q
// of a float64 normal draw's QR decomposition with R's diagonal positive (Gram-Schmidt, twice
// per column), converted to the tensor's dtype. ShapeError below 2 dims; zero elements: no-op.
Tensor& orthogonal_(Tensor& tensor, Generator& gen, double gain = 1.0,
                    CallSite site = CallSite::current());

}  // namespace mutagrad::nn::init
