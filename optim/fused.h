// Internal to optim/: the pieces the optimizers share.
//
//   Tensor d_p = detail::axpy(grad, param, weight_decay);  // torch's d_p.add(param, alpha=wd)
//   if (detail::fusable(param, {&grad, &exp_avg, &exp_avg_sq})) { ... one pass ... }
#pragma once

#include <initializer_list>

#include "mutagrad.h"

namespace mutagrad::optim::detail {

// a + alpha * b out of place, rounded as torch's CPU add(other, alpha=) (a fused multiply-add;
// Note [Fused add with alpha] in tensor/native/scalar_inplace.h), for torch's
// `d_p = d_p.add(param, alpha=weight_decay)`. The in-place forms (buf.add_(g, alpha)) take
// that fused path themselves.
Tensor axpy(const Tensor& a, const Tensor& b, double alpha);

// Whether a step may run as one pass over the parameter (Note [Fused optimizer steps] in
// tensor/cpu/fused_optim.h): outside every forward-AD level, a contiguous float32/float64 CPU
// parameter, and operands (gradient, state) of its dtype, sizes and layout that share no memory
// with it or with each other. Otherwise the optimizer takes its op-by-op path.
bool fusable(const Tensor& param, std::initializer_list<const Tensor*> operands);

// Bumps each tensor once for a fused step, with the step's site, before anything is written.
void bump_for_step(std::initializer_list<const Tensor*> written, const MutationSite& site);

}  // namespace mutagrad::optim::detail
