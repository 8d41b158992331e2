// Differentiable reductions (forward + backward nodes in reduce_ops.cc), and sum_to.
//
//   Tensor s = mutagrad::sum(x);               // SumBackward0
//   Tensor m = mutagrad::mean(x, {0}, true);   // MeanBackward1, keepdim
//   Tensor r = mutagrad::sum_to(g, {3, 1});    // g summed over broadcast dims down to [3, 1]
#pragma once

#include <optional>
#include <utility>

#include "tensor/tensor.h"

namespace mutagrad {

Tensor sum(const Tensor& self);
Tensor sum(const Tensor& self, IntArrayRef dims, bool keepdim = false);
Tensor mean(const Tensor& self);
Tensor mean(const Tensor& self, IntArrayRef dims, bool keepdim = false);
Tensor prod(const Tensor& self);
Tensor prod(const Tensor& self, IntArrayRef dims, bool keepdim = false);
// Over everything (MaxBackward1: ties share the gradient evenly), or over dims (as amax).
Tensor max(const Tensor& self);
Tensor max(const Tensor& self, IntArrayRef dims, bool keepdim = false);
Tensor min(const Tensor& self);
Tensor min(const Tensor& self, IntArrayRef dims, bool keepdim = false);
Tensor amax(const Tensor& self, IntArrayRef dims, bool keepdim = false);
Tensor amin(const Tensor& self, IntArrayRef dims, bool keepdim = false);
// Not differentiable (int64 result).
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// PyTorch's max(dim) / min(dim): (values, indices of the first extremum) along `dim`. The
// gradient of the values goes to those indices only (MaxBackward0 / MinBackward0), unlike
// max(dims) above (amax), which shares it among ties.
std::pair<Tensor, Tensor> max_dim(const Tensor& self, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min_dim(const Tensor& self, int64_t dim, bool keepdim = false);

// `t` summed over the dims in which `shape` was broadcast to t's shape (differentiable).
// `shape` must broadcast to t.sizes().
Tensor sum_to(const Tensor& t, IntArrayRef shape);

}  // namespace mutagrad
