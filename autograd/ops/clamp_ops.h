// clamp with tensor bounds (ClampBackward0); the scalar-bound forms are unary ops (unary_ops.h).
//
//   Tensor y = mutagrad::clamp(x, lo, hi);        // lo <= y <= hi elementwise, broadcasting
//   Tensor z = mutagrad::clamp(x, lo, Tensor());  // one bound: the other undefined
//
// Forward and derivatives as PyTorch 1.13: min(max(x, lo), hi) (NaN in any operand gives NaN;
// lo > hi gives hi), the gradient reaching x where lo <= x <= hi, lo where x < lo < hi, hi where
// x > hi or hi < lo.
#pragma once

#include "tensor/tensor.h"

namespace mutagrad {

Tensor clamp(const Tensor& self, const Tensor& min, const Tensor& max);

}  // namespace mutagrad
