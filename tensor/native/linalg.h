// Raw matrix products (no autograd).
//
//   Tensor c = native::matmul(a, b);   // [m, k] @ [k, n] -> [m, n]; batched [..., m, k] too
#pragma once

#include "tensor/tensor.h"

namespace mutagrad::native {

// As torch.matmul: 1-D @ 1-D is a dot product, 1-D operands get a dim added and removed,
// batch dims broadcast. Both operands must share a floating dtype (or are promoted).
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace mutagrad::native
