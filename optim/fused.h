// Internal to optim/: a + alpha * b rounded as torch's CPU add(other, alpha=) (a fused
// multiply-add), for the updates whose torch form is `x.add_(y, alpha=...)`.
//
//   buf.mul_(momentum);
//   buf.copy_(detail::axpy(buf, d_p, 1 - dampening));
//
// Note [Matching torch's fused add]
// torch 1.13's CPU kernel for add/sub with alpha is vec::fmadd(b, alpha, a): one rounding.
// mutagrad's add(other, alpha) rounds alpha * b and then the sum (two roundings); over 25
// optimizer steps the difference grows past 1e-6 relative where parameters cancel. axpy
// computes float32 in float64 (the product of two floats is exact there; the double rounding
// of the sum differs from an FMA with probability ~2^-29) and float64 as a + alpha * b (within
// an ulp of torch's). alpha == 1 needs no product, and is a plain add.
#pragma once

#include "mutagrad.h"

namespace mutagrad::optim::detail {

Tensor axpy(const Tensor& a, const Tensor& b, double alpha);

}  // namespace mutagrad::optim::detail
