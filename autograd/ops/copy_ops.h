// Differentiable copies: clone, contiguous, to(dtype / device), masked_fill (copy_ops.cc).
//
//   Tensor c = x.t().contiguous();          // CloneBackward0 (a copy was needed)
//   Tensor d = x.to(kFloat64);              // ToCopyBackward0
//   Tensor g = x.cuda();                    // ToCopyBackward0, the gradient comes back to x's
//   device Tensor e = x.masked_fill(x < 0, 0.0);   // MaskedFillBackward0
#pragma once

#include "tensor/tensor.h"

namespace mutagrad {

Tensor clone(const Tensor& self);
Tensor contiguous(const Tensor& self);
Tensor to(const Tensor& self, ScalarType dtype);
// A copy on `device` (and of `dtype`), or self when both already match (ToCopyBackward0).
Tensor to(const Tensor& self, Device device, std::optional<ScalarType> dtype = std::nullopt);
// A copy of self (broadcast with mask) where mask is true holds value.
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
// value: a 0-dim tensor, differentiable (MaskedFillBackward1).
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);

}  // namespace mutagrad
