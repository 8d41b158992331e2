// Internal to optim/: a + alpha * b out of place, rounded as torch's CPU add(other, alpha=)
// (a fused multiply-add; Note [Fused add with alpha] in tensor/native/scalar_inplace.h), for
// torch's `d_p = d_p.add(param, alpha=weight_decay)`. The in-place forms (buf.add_(g, alpha))
// take that fused path themselves.
//
//   Tensor d_p = detail::axpy(grad, param, weight_decay);
#pragma once

#include "mutagrad.h"

namespace mutagrad::optim::detail {

Tensor axpy(const Tensor& a, const Tensor& b, double alpha);

}  // namespace mutagrad::optim::detail
