// Differentiable matrix products (forward + backward nodes in linalg_ops.cc).
//
//   Tensor c = mutagrad::matmul(a, b);   // 2-D x 2-D: MmBackward0
//   Tensor d = mutagrad::matmul(x, v);   // any other shapes: MatmulBackward0
//
// PyTorch decomposes matmul into mm/bmm/mv/dot plus views; we record one node instead:
// MmBackward0 for two matrices (PyTorch's name), MatmulBackward0 for every other case
// (vectors, batches, broadcast batch dims). Both formulas are written with matmul itself.
#pragma once

#include "tensor/tensor.h"

namespace mutagrad {

Tensor matmul(const Tensor& self, const Tensor& other);
// 2-D x 2-D of one dtype only, as torch.mm ("self must be a matrix"; no promotion).
Tensor mm(const Tensor& self, const Tensor& other);

namespace detail {
// Internal: the products' shared checks (linalg_ops.cc, products_ops.cc). DTypeError "expected
// scalar type Double but found Float" when the dtypes differ; ShapeError "<name> must be a
// matrix".
void check_same_dtype(const char* op, const Tensor& self, const Tensor& other);
void check_matrix(const char* op, const char* name, const Tensor& t);
}  // namespace detail

}  // namespace mutagrad
