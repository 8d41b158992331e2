// Raw sorting and search (no autograd): a stable sort of each line along a dim, and
// searchsorted (tensor/sort_order.h's order; kernels in tensor/cpu/sort.cc and cuda/sort.cu).
//
//   auto [values, indices] = native::sort(x, -1, /*descending=*/false);
//   Tensor pos = native::searchsorted(edges, x, /*out_int32=*/false, /*right=*/false);
#pragma once

#include <utility>

#include "tensor/tensor.h"

namespace mutagrad::native {

// (values, int64 indices) of self's shape, each line along `dim` sorted stably (ties keep
// index order; NaN last ascending, first descending). A 0-dim self gives (self, 0).
std::pair<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending);
// For each element of `values`, its insertion position in the last-dim lines of `sorted`
// (1-D, or values' leading dims with its own last dim), int64 (int32 with out_int32). Both are
// compared in their promoted dtype. A 0-dim `values` gives a 0-dim result.
Tensor searchsorted(const Tensor& sorted, const Tensor& values, bool out_int32, bool right);

}  // namespace mutagrad::native
