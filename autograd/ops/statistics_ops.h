// Running and statistical reductions: cumsum, cumprod, all, any, count_nonzero, var, std, norm,
// logsumexp (forward + backward nodes in statistics_ops.cc, PyTorch's names and formulas).
//
//   Tensor c = mutagrad::cumsum(x, 1);                   // CumsumBackward0
//   Tensor v = mutagrad::var(x, {0}, /*correction=*/1);  // VarBackward0 (unbiased)
//   Tensor n = mutagrad::norm(x, 2.0, {1});              // NormBackward1
//   bool ok = mutagrad::all(x.ge(zeros_like(x))).item<bool>();
//
// cumsum/cumprod fold each line in order (floating values in double, as PyTorch's CPU), the
// same bits on every backend. An empty `dims` means every dim.
#pragma once

#include <optional>

#include "tensor/tensor.h"

namespace mutagrad {

// dtype: the result's (default: int64 for bool and integer inputs, else self's).
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
// Bool results, not differentiable. all of nothing is true, any of nothing false.
Tensor all(const Tensor& self);
Tensor all(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& self);
Tensor any(const Tensor& self, int64_t dim, bool keepdim = false);
// int64 count of the nonzero elements over `dims`.
Tensor count_nonzero(const Tensor& self, IntArrayRef dims = {});
// Floating dtypes only: sum((x - mean)^2) / max(0, N - correction) (correction 1: unbiased).
Tensor var(const Tensor& self, IntArrayRef dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& self, IntArrayRef dims = {}, double correction = 1, bool keepdim = false);
// The p-norm over `dims` (p = 0, 1, 2, inf, -inf or any other real), floating dtypes only.
Tensor norm(const Tensor& self, double p = 2, IntArrayRef dims = {}, bool keepdim = false);
// |self - other| <= atol + rtol * |other| elementwise (and equal values, infinities included;
// NaN equals NaN when equal_nan), PyTorch's isclose: both of one dtype. allclose: all of it.
Tensor isclose(const Tensor& self, const Tensor& other, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false);
bool allclose(const Tensor& self, const Tensor& other, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
// Same shape and equal values.
bool equal(const Tensor& self, const Tensor& other);
// log(sum(exp(x))) over `dims`, computed as m + log(sum(exp(x - m))) with m the maximum.
Tensor logsumexp(const Tensor& self, IntArrayRef dims, bool keepdim = false);

}  // namespace mutagrad
