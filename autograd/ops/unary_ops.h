// Differentiable element-wise unary ops (forward + backward nodes in unary_ops.cc).
//
//   Tensor y = mutagrad::sigmoid(x);      // y.grad_fn()->name() == "SigmoidBackward0"
//   Tensor z = x.pow(2).clamp(0.0, 1.0);  // PowBackward0, then ClampBackward1
//   Tensor m = -x;                         // NegBackward0
#pragma once

#include <optional>

#include "tensor/tensor.h"

namespace mutagrad {

Tensor neg(const Tensor& self);
Tensor abs(const Tensor& self);
Tensor exp(const Tensor& self);
Tensor log(const Tensor& self);
Tensor sqrt(const Tensor& self);
Tensor sin(const Tensor& self);
Tensor cos(const Tensor& self);
Tensor tanh(const Tensor& self);
Tensor sigmoid(const Tensor& self);
Tensor relu(const Tensor& self);
Tensor pow(const Tensor& self, const Scalar& exponent);
// min <= x <= max elementwise; either bound may be absent (not both).
Tensor clamp(const Tensor& self, std::optional<Scalar> min,
             std::optional<Scalar> max = std::nullopt);
// Not differentiable: bool result.
Tensor logical_not(const Tensor& self);
// -1, 0 or 1 of self's dtype; not differentiable (its derivative is zero almost everywhere).
Tensor sign(const Tensor& self);

Tensor operator-(const Tensor& self);
Tensor operator!(const Tensor& self);

}  // namespace mutagrad
