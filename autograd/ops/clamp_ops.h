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
// In place (torch's clamp_/clip_ with tensor bounds): one tracked write (check_inplace, one
// bump with `site`, ClampBackward0 as self's history, CopySlices through a view). The bounds
// broadcast to self's shape and the result must cast to self's dtype; a refused call changes
// nothing.
const Tensor& clamp_(const Tensor& self, const Tensor& min, const Tensor& max,
                     CallSite site = CallSite::current());

}  // namespace mutagrad
