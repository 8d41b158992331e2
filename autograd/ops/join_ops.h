// Differentiable concatenation (join_ops.cc); also what multi-output views' backwards use.
//
//   Tensor c = mutagrad::cat({a, b}, 0);     // CatBackward0
//   Tensor s = mutagrad::stack({a, b}, 1);   // StackBackward0
#pragma once

#include "tensor/tensor.h"

namespace mutagrad {

// Tensors of one dtype whose sizes agree except along `dim`.
Tensor cat(TensorList tensors, int64_t dim = 0);
// Tensors of one shape, joined along a new dim.
Tensor stack(TensorList tensors, int64_t dim = 0);

}  // namespace mutagrad
