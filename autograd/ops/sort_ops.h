// Sorting and search: sort, argsort, msort, topk, kthvalue (differentiable in the values:
// SortBackward0/1, TopkBackward0, KthvalueBackward0, the gradient scattered to the indices),
// and unique, bincount, searchsorted (not differentiable). torch 1.13's semantics.
//
//   auto [values, indices] = mutagrad::sort(x, /*dim=*/-1, /*descending=*/true);
//   auto [top, where] = mutagrad::topk(x, 3);                 // the 3 largest along the last dim
//   Tensor pos = mutagrad::searchsorted(edges, x);            // int64 insertion positions
//
// Every sort is stable (ties keep index order) with NaN greater than every number, on every
// backend (Note [Sorting lines on the device] in cuda/sort.cu); topk and kthvalue pick from
// that order, so their indices among equal values can differ from PyTorch's (docs/python.md).
#pragma once

#include <optional>
#include <tuple>
#include <utility>

#include "tensor/tensor.h"

namespace mutagrad {

// torch.sort: SortBackward0, or SortBackward1 when `stable` is given (torch's stable= overload).
std::pair<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false,
                               std::optional<bool> stable = std::nullopt);
Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false, bool stable = false);
// sort along dim 0, values only (SortBackward0).
Tensor msort(const Tensor& self);
// The k largest (smallest) along `dim`, in sorted order; 0 <= k <= size(dim), else ValueError.
std::pair<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1, bool largest = true,
                               bool sorted = true);
// The k-th smallest (1-based) along `dim`; 1 <= k <= size(dim), else ValueError.
std::pair<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim = -1,
                                   bool keepdim = false);
// The sorted distinct values of the flattened self; inverse (self's shape): the position of each
// element's value in them; counts: how often each occurs. NaNs are distinct from each other.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self);
// Counts (int64) or summed weights (float32 weights: float32, else float64) of each value of a
// 1-D non-negative integer self; length max(max(self) + 1, minlength).
Tensor bincount(const Tensor& self, const std::optional<Tensor>& weights = std::nullopt,
                int64_t minlength = 0);
// torch.searchsorted (see native::searchsorted).
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false,
                    bool right = false);

}  // namespace mutagrad
