// Gradient clipping in place, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_ 1.13.
//
//   Tensor total = optim::clip_grad_norm_(params, /*max_norm=*/1.0);       // 2-norm
//   optim::clip_grad_norm_(params, 5.0, std::numeric_limits<double>::infinity());
//   optim::clip_grad_value_(params, 0.5);   // every grad element into [-0.5, 0.5]
//
// Parameters without a gradient are skipped. The gradients are written in place (one bump
// each); the parameters are not touched.
#pragma once

#include <vector>

#include "mutagrad.h"

namespace mutagrad::optim {

// Scales the gradients so that the norm of all of them together (the norm of their norms)
// is at most max_norm: each is multiplied by min(1, max_norm / (total + 1e-6)). Returns the
// total norm before clipping (a 0-dim tensor; 0 when no parameter has a gradient). norm_type
// inf: the largest absolute element. error_if_nonfinite: ValueError (nothing scaled) when the
// total is nan or inf.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace mutagrad::optim
