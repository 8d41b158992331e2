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
// clamp with one bound (ClampMinBackward0 / ClampMaxBackward0, as PyTorch).
Tensor clamp_min(const Tensor& self, const Scalar& min);
Tensor clamp_max(const Tensor& self, const Scalar& max);
// Not differentiable: bool result.
Tensor logical_not(const Tensor& self);
// -1, 0 or 1 of self's dtype (0 for NaN, as torch 1.13); SignBackward0 gives zeros.
Tensor sign(const Tensor& self);
// Float-only (integers compute in float32, as torch): RsqrtBackward0, Exp2Backward0, ...
Tensor rsqrt(const Tensor& self);
Tensor exp2(const Tensor& self);
Tensor expm1(const Tensor& self);
Tensor log1p(const Tensor& self);
Tensor log2(const Tensor& self);
Tensor log10(const Tensor& self);
// Rounding: integers pass through (bool is refused, as torch); zero gradients.
Tensor floor(const Tensor& self);
Tensor ceil(const Tensor& self);
Tensor trunc(const Tensor& self);
// Half to even, at 10^-decimals (decimals != 0: floating dtypes only).
Tensor round(const Tensor& self, int64_t decimals = 0);
Tensor frac(const Tensor& self);  // self - trunc(self), floating only
// NaN -> nan (0), +inf -> posinf (the dtype's max), -inf -> neginf (its lowest).
Tensor nan_to_num(const Tensor& self, std::optional<double> nan = 0.0,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
// Bool results (not differentiable).
Tensor isnan(const Tensor& self);
Tensor isinf(const Tensor& self);
Tensor isfinite(const Tensor& self);
// ~x: integers and bool (not floating).
Tensor bitwise_not(const Tensor& self);
// Float-only special functions (integers compute in the default dtype): TanBackward0,
// ErfBackward0, ErfinvBackward0 (NaN outside [-1, 1]), LgammaBackward0 (log|Gamma|),
// DigammaBackward0, PolygammaBackward0 (the n-th derivative of digamma, n >= 0; ValueError
// otherwise), ReciprocalBackward0 (1 / x).
Tensor tan(const Tensor& self);
Tensor erf(const Tensor& self);
Tensor erfinv(const Tensor& self);
Tensor lgamma(const Tensor& self);
Tensor digamma(const Tensor& self);
Tensor polygamma(int64_t n, const Tensor& self);
Tensor reciprocal(const Tensor& self);
// self * self as torch's pow(self, 2) (PowBackward0); bool gives int64, as torch.
Tensor square(const Tensor& self);

Tensor operator-(const Tensor& self);
Tensor operator!(const Tensor& self);

}  // namespace mutagrad
