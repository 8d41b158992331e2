// Raw matrix products (no autograd).
//
//   Tensor c = native::matmul(a, b);   // [m, k] @ [k, n] -> [m, n]; batched [..., m, k] too
#pragma once

#include "tensor/tensor.h"

namespace mutagrad::native {

// As torch.matmul: 1-D @ 1-D is a dot product, 1-D operands get a dim added and removed,
// batch dims broadcast. Both operands must share a floating dtype (or are promoted).
Tensor matmul(const Tensor& a, const Tensor& b);

// How the last two dims of a (batched) matrix map onto a BLAS: row-major (unit column stride)
// or transposed (unit row stride: the row-major matrix of its transpose), with the leading
// dimension. Used by the CPU (Eigen) and CUDA (cuBLAS) matmul kernels.
struct MatrixLayout {
  bool transposed = false;
  int64_t ld = 0;
};
// False when neither a row nor a column of `t`'s matrices is contiguous, or rows overlap: the
// kernel then copies `t` to contiguous first.
bool matrix_layout(const Tensor& t, MatrixLayout* layout);

}  // namespace mutagrad::native
