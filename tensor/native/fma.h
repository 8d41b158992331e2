// PyTorch's fused multiply-adds: add/sub with alpha, addcmul and lerp on float32/float64, each
// multiply-add rounded once, on every backend.
//
//   Tensor r = native::fma(FmaOp::kAddAlpha, x, y, Tensor(), 0.5, kFloat32);  // x + 0.5 * y
//
// Note [Torch's fused multiply-adds]
// PyTorch's CPU kernels for add(other, alpha=), addcmul and lerp (both of its sides) are
// written with vec::fmadd, and its CUDA kernels' `a + alpha * b` is contracted by nvcc: each
// multiply-add is one fused operation, rounded once. Measured on 100,000 random float32 and
// float64 elements against torch 1.13, and against 1.13 and 2.15 on a constructed case (x = 1 +
// 2^-23, alpha = 1 + 2^-15, y = 2^-24 (1 - 2^-15): the exact sum lies just below a float
// midpoint, where a sum rounded to double first lands) and in
// tests/python/fused_multiply_add_test.py: torch gives the FMA on every element of
// same-shaped operands, in place or not, with torch.optim's SGD too. (A size-1 operand
// broadcast over a float64 tensor is not uniform in torch 1.13: some positions of its vector
// loop's tail round twice.)
//
// We computed these as separate ops before (alpha * y, then the sum), so that 10-27 % of
// random elements were an ulp away from torch's (add with alpha 15-19 %, float64 addcmul 10 %,
// lerp 23-27 %), and a float32 add_ or addcmul_ of one shape through double (the product is
// exact there, but the sum rounds twice: the constructed case above). Now every backend takes
// Backend::fma: __builtin_fma on the CPU (a vfmadd in the AVX2 and AVX-512 builds of
// tensor/cpu/vec_kernels_impl.h, libm's correctly rounded fma in the baseline build), the
// device's __fma_rn on CUDA. An FMA is exact before its one rounding, so every build and backend
// gives the same bits, and torch's. value converts to the dtype first (alpha.to<float>()).
//
// float16 and bfloat16 keep their composed formulas: torch rounds their steps differently by
// version (1.13 rounds alpha and addcmul's steps to the dtype, 2.x computes in float). index_add_
// with alpha keeps alpha * source, then the sum, as torch's 1-D index_add_ does (1.13 and 2.15;
// its N-D one adds each slice with add_(alpha), an FMA). lerp takes the small weight's side for
// |weight| < 0.5, as torch 2.x (1.13: for weight < 0.5; docs/torch-versions.md).
#pragma once

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad::native {

// Whether `compute` has Backend::fma's kernels (float32, float64).
inline bool has_fma(ScalarType compute) { return compute == kFloat32 || compute == kFloat64; }

// op(a, b, c, value) (FmaOp in tensor/backend.h) into a new tensor of the operands' broadcast
// shape and dtype `compute` (float32 or float64), on their common device; c undefined where
// the op takes `value`. The caller has checked the dtypes.
Tensor fma(FmaOp op, const Tensor& a, const Tensor& b, const Tensor& c, double value,
           ScalarType compute);

// self = op(self, b, c, value) in place, all of self's float32/float64 dtype, shape and device,
// none partially overlapping self (is_axpy_fast / is_addcmul_fast in scalar_inplace.h): checks
// (value fits, no internal overlap), bumps with `bump` when not null, writes.
void fma_inplace(FmaOp op, const Tensor& self, const Tensor& b, const Tensor& c, double value,
                 const MutationSite* bump);

}  // namespace mutagrad::native
