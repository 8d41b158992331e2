// Differentiable element-wise binary ops with broadcasting and type promotion, their operators,
// and the (non-differentiable) comparisons. Forward + backward nodes in binary_ops.cc.
//
//   Tensor c = a * b + 1.0;           // MulBackward0, then AddBackward1
//   Tensor d = 2.0 / a;               // DivBackward0 (2.0 wrapped as a 0-dim tensor)
//   Tensor m = mutagrad::where(a > b, a, b);   // WhereBackward0; a > b is a bool tensor
#pragma once

#include <optional>
#include <string_view>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad {

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
// other - self * alpha (PyTorch's rsub: Python's `2 - x`).
Tensor rsub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor mul(const Tensor& self, const Tensor& other);
Tensor mul(const Tensor& self, const Scalar& other);
Tensor div(const Tensor& self, const Tensor& other);
Tensor div(const Tensor& self, const Scalar& other);
Tensor pow(const Tensor& self, const Tensor& exponent);
Tensor pow(const Scalar& self, const Tensor& exponent);
Tensor maximum(const Tensor& self, const Tensor& other);
Tensor minimum(const Tensor& self, const Tensor& other);
// cond ? self : other, all three broadcast together; cond is bool.
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other);
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other);

// Comparisons and logical ops: bool results, never differentiable.
Tensor eq(const Tensor& self, const Tensor& other);
Tensor ne(const Tensor& self, const Tensor& other);
Tensor lt(const Tensor& self, const Tensor& other);
Tensor le(const Tensor& self, const Tensor& other);
Tensor gt(const Tensor& self, const Tensor& other);
Tensor ge(const Tensor& self, const Tensor& other);
Tensor eq(const Tensor& self, const Scalar& other);
Tensor ne(const Tensor& self, const Scalar& other);
Tensor lt(const Tensor& self, const Scalar& other);
Tensor le(const Tensor& self, const Scalar& other);
Tensor gt(const Tensor& self, const Scalar& other);
Tensor ge(const Tensor& self, const Scalar& other);
// Rounded division (PyTorch's definitions, integer results for integers; an integer divisor of
// 0 is an error, checked before anything is written): remainder has the divisor's sign
// (Python's %), fmod the dividend's, floor_divide is Python's //, and div with rounding_mode
// "trunc" / "floor" rounds the quotient (zero gradients: DivBackward2/3).
Tensor remainder(const Tensor& self, const Tensor& other);
Tensor remainder(const Tensor& self, const Scalar& other);
Tensor remainder(const Scalar& self, const Tensor& other);
Tensor fmod(const Tensor& self, const Tensor& other);
Tensor fmod(const Tensor& self, const Scalar& other);
Tensor floor_divide(const Tensor& self, const Tensor& other);
Tensor floor_divide(const Tensor& self, const Scalar& other);
Tensor floor_divide(const Scalar& self, const Tensor& other);
Tensor fmod(const Scalar& self, const Tensor& other);
// The angle of (other, self) in (-pi, pi]; float-only (Atan2Backward0).
Tensor atan2(const Tensor& self, const Tensor& other);
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode);
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string_view> rounding_mode);
// Integer (and bool) bit operations; shifts by a count outside [0, bits) give 0 (left) or the
// sign fill (right).
Tensor bitwise_and(const Tensor& self, const Tensor& other);
Tensor bitwise_or(const Tensor& self, const Tensor& other);
Tensor bitwise_xor(const Tensor& self, const Tensor& other);
Tensor bitwise_left_shift(const Tensor& self, const Tensor& other);
Tensor bitwise_right_shift(const Tensor& self, const Tensor& other);
Tensor logical_xor(const Tensor& self, const Tensor& other);
// A bit op (kBitwiseAnd/Or/Xor, kShiftLeft/Right) with a Python-style number on either side.
Tensor bitwise(BinaryOp op, const Tensor& self, const Scalar& other);
Tensor bitwise(BinaryOp op, const Scalar& self, const Tensor& other);
Tensor logical_and(const Tensor& self, const Tensor& other);
Tensor logical_or(const Tensor& self, const Tensor& other);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);

Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);

}  // namespace mutagrad
