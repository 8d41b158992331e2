// Raw element-wise ops with broadcasting and PyTorch's type promotion (no autograd).
//
//   Tensor c = native::binary(BinaryOp::kAdd, a, b);        // a + b, broadcast and promoted
//   Tensor d = native::binary(BinaryOp::kMul, a, Scalar(2)); // a Python-scalar operand
//   native::binary_out(BinaryOp::kAdd, a, a, b);            // in place: a += b
#pragma once

#include <optional>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad::native {

// Note [In-place writes bump after validation]
// The native writers (unary_out, binary_out, copy_, fill_, masked_fill_) take the in-place op's
// MutationSite. They run every check first and allocate every temporary (Note [Allocate before
// the bump] in tensor/version_counter.h), then bump out's version counter exactly once with
// that site, then write: a write that raises leaves data and version as they were, and a saved
// tensor never looks stale because of a write that did not happen. Null: no bump (an output
// the caller just allocated, or a caller that bumps itself after its own validation).

// The dtype PyTorch computes `a op b` in: categories first (bool < int < float), and within the
// winning category dimensioned tensors win over 0-dim tensors, which win over scalars.
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, const Scalar& b);
// The dtype `a op b` computes in, given the promoted dtype of its operands (true division of
// integers gives float32). Throws DTypeError for an op the dtype does not support.
ScalarType binary_compute_dtype(BinaryOp op, ScalarType promoted);

// Unary ops. Float-only ops (exp, log, sqrt, sin, cos, tanh, sigmoid) promote integer and bool
// inputs to float32, as PyTorch. neg of a bool tensor is a DTypeError.
Tensor unary(UnaryOp op, const Tensor& self, const UnaryArgs& args = {});
// Whether `op` is float-only (its integer and bool inputs promote to float32).
bool is_float_only(UnaryOp op);
// clamp's bounds as UnaryArgs; ValueError naming `op` when both are missing.
UnaryArgs clamp_args(const std::optional<Scalar>& min, const std::optional<Scalar>& max,
                     const char* op);
// round's decimals (none when 0) and nan_to_num's three replacements (defaults: 0, the dtype's
// largest and lowest finite values; integer dtypes pass through, so nothing to fill).
UnaryArgs round_args(int64_t decimals);
// polygamma's order n (checked by the op: n >= 0).
UnaryArgs polygamma_args(int64_t n);
UnaryArgs nan_to_num_args(ScalarType dtype, std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf);
// out = op(self) where out has self's shape; out may be self (in place). DTypeError if the
// result dtype cannot be cast to out's dtype (PyTorch's "result type Float can't be cast to
// the desired output type Long").
// `bump`: see Note [In-place writes bump after validation].
void unary_out(UnaryOp op, const Tensor& out, const Tensor& self, const UnaryArgs& args = {},
               const MutationSite* bump = nullptr);

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor binary(BinaryOp op, const Tensor& a, const Scalar& b);
// out = a op b; out must already have the broadcast shape (in-place ops pass out = a).
// `bump`: see Note [In-place writes bump after validation].
void binary_out(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                const MutationSite* bump = nullptr);
// DTypeError when binary op `op` does not take operands of dtypes a and b (PyTorch's checks:
// bitwise ops and shifts on floats, remainder of two bools, subtraction with a bool, ...).
void check_binary_dtypes(BinaryOp op, ScalarType a, ScalarType b);
// PyTorch's alpha_check for add/sub with alpha != 1 on operands promoting to `dtype`: a bool
// alpha needs a bool result, a floating alpha a floating result. DTypeError naming `op`.
void check_alpha(ScalarType dtype, const Scalar& alpha, const char* op);
// other * alpha in `dtype` (the promoted dtype of the add/sub), as PyTorch computes
// self + alpha * other: alpha converts to that dtype, it never promotes it.
Tensor scale_by_alpha(const Tensor& other, const Scalar& alpha, ScalarType dtype);

// cond ? a : b with broadcasting over all three; cond must be bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// The coordinates of the nonzero elements: int64 [count, ndim], row-major order.
Tensor nonzero(const Tensor& self);

// A tensor holding `value` as a 0-dim tensor of `dtype` on `device` (a wrapped number).
// ValueError naming `op` when the value does not fit the dtype (check_scalar_fits).
Tensor wrap_scalar(const Scalar& value, ScalarType dtype, Device device,
                   const char* op = "wrap_scalar");

}  // namespace mutagrad::native
