// Raw reductions over all dims or some, with keepdim (no autograd).
//
//   Tensor s = native::reduce(ReduceOp::kSum, x, {}, false);      // all dims, 0-dim result
//   Tensor m = native::reduce(ReduceOp::kMean, x, {0, 2}, true);  // keep reduced dims as 1
//   Tensor i = native::argmax(x, 1, false);
#pragma once

#include <optional>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad::native {

// An empty `dims` reduces every dim. sum/prod of bool or int give int64 (as PyTorch); mean
// needs a floating dtype; max/min of an empty reduction is an IndexError.
Tensor reduce(ReduceOp op, const Tensor& self, IntArrayRef dims, bool keepdim);
// The running sum (kSum) or product (kProd) along `dim`: PyTorch's cumsum / cumprod. The result
// has `dtype` (default: int64 for bool and integer inputs, else self's); floating values
// accumulate in double, as PyTorch's CPU kernels.
Tensor scan(ReduceOp op, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype);
// Index of the first maximum along `dim`, or over the flattened tensor when dim is nullopt.
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim);
// Index of the first minimum, likewise.
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim);

}  // namespace mutagrad::native
