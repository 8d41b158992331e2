// Products with torch's signatures and checks (forward + backward nodes in products_ops.cc;
// mm and matmul are in linalg_ops.h).
//
//   Tensor c = mutagrad::bmm(a, b);                   // [B, n, k] x [B, k, m]: BmmBackward0
//   Tensor y = mutagrad::addmm(bias, x, w, 1, 0.5);   // bias + 0.5 * x @ w: AddmmBackward0
//   Tensor t = mutagrad::einsum("bij,bjk->bik", {a, b});
//
// bmm, mv, dot and addmm, like mm, take operands of one dtype (torch's "expected scalar type
// Double but found Float"); outer and the einsum terms that only multiply promote, as torch's
// composites do. bmm/mv/dot/addmm record their own node; outer (MulBackward0), inner and einsum
// record the nodes of the ops they are made of (reshape, permute, mul, sum, bmm), as in torch.
#pragma once

#include <string_view>

#include "tensor/tensor.h"

namespace mutagrad {

// [B, n, k] x [B, k, m] -> [B, n, m]; no broadcasting of the batch dim.
Tensor bmm(const Tensor& self, const Tensor& mat2);
// [n, k] x [k] -> [n].
Tensor mv(const Tensor& self, const Tensor& vec);
// [k] x [k] -> a 0-dim tensor.
Tensor dot(const Tensor& self, const Tensor& other);
// Sums over the last dim of both: [..., k] x [..., k] -> self's leading dims + other's.
Tensor inner(const Tensor& self, const Tensor& other);
// [n] x [m] -> [n, m] (self.reshape({n, 1}) * vec2).
Tensor outer(const Tensor& self, const Tensor& vec2);
// beta * self + alpha * (mat1 @ mat2), self broadcast to [n, m]. With beta == 0, self's values
// are ignored (nan and inf in it do not propagate), as torch.
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
// Einstein summation: subscripts [a-zA-Z] per operand separated by ',', an optional '...' per
// operand (broadcast dims), an optional '->' output (implicit: '...' then the subscripts seen
// once, A-Z before a-z). A subscript repeated within an operand takes its diagonal; sizes of
// one subscript broadcast across operands.
Tensor einsum(std::string_view equation, TensorList operands);

}  // namespace mutagrad
