// The in-place scalar fast path: x.add_(2.0), x.mul_(0.9), ... on a float32/float64 tensor
// without wrapping the scalar in a tensor.
//
//   if (native::is_scalar_inplace_fast(BinaryOp::kMul, x, 0.9)) {
//     native::binary_scalar_inplace(BinaryOp::kMul, x, 0.9, &site);   // checks, bumps, writes
//   }
//
// Note [Scalar in-place fast path]
// The general binary_out path wraps a Scalar operand as a 0-dim tensor, expands it and
// converts it: three tensor handles (heap allocations) per call, most of a tiny op's time.
// Optimizers and training loops call mul_/add_ with a number several times per parameter per
// step. For the four arithmetic ops on a float32/float64 tensor the result dtype is the
// tensor's (a number never promotes a floating tensor), so no conversion or output tensor is
// needed either: the backend writes `x op value` in place (Backend::binary_scalar_inplace; the
// CPU's loops over contiguous memory, other layouts and devices wrap the value as before).
// The checks, the single version bump with the op's MutationSite and the autograd history are
// the caller's as for every in-place op. The result equals the general path's bit for bit
// (the same value converted to the same dtype, the same operation).
#pragma once

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad::native {

// Whether `self op= value` may take the fast path: kAdd/kSub/kMul/kDiv, self float32 or
// float64, value a number that is not a bool.
inline bool is_scalar_inplace_fast(BinaryOp op, const Tensor& self, const Scalar& value) {
  const bool arithmetic =
      op == BinaryOp::kAdd || op == BinaryOp::kSub || op == BinaryOp::kMul || op == BinaryOp::kDiv;
  const ScalarType t = self.dtype();
  return arithmetic && (t == kFloat32 || t == kFloat64) && !value.is_bool();
}

// self = self op value. Checks (the value fits self's dtype, no internal overlap), then bumps
// with `bump` (when not null; Note [In-place writes bump after validation] in pointwise.h),
// then writes. Requires is_scalar_inplace_fast(op, self, value).
void binary_scalar_inplace(BinaryOp op, const Tensor& self, const Scalar& value,
                           const MutationSite* bump);

// Whether self = self + alpha * other may be written in place without temporaries
// (native::fma_inplace with FmaOp::kAddAlpha, or kLerp with a number weight): float32/float64,
// other of self's dtype, shape and device, not partially overlapping self.
bool is_axpy_fast(const Tensor& self, const Tensor& other);
// The same for two operands (addcmul_, addcdiv_, lerp_ with a weight tensor).
bool is_addcmul_fast(const Tensor& self, const Tensor& t1, const Tensor& t2);
// self = self + (value * t1) / t2 (addcdiv_), under the same conditions (is_addcmul_fast).
void addcdiv_inplace(const Tensor& self, const Tensor& t1, const Tensor& t2, double value,
                     const MutationSite* bump);

}  // namespace mutagrad::native
