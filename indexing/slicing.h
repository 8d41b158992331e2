// The lowering of an index list (PyTorch's applySlicing): Path A entries become view ops on
// the tensor, Path B entries (index tensors, masks, bools) are collected for one advanced index.
//
//   Sliced s = apply_slicing(x, {1, Slice(), idx}, ViewMode::kDifferentiable);
//   // s.tensor is x.select(0, 1) (a view); s.indices == {undefined, idx}: x[1][:, idx]
//   Tensor y = s.has_advanced() ? autograd::index(s.tensor, s.indices) : s.tensor;
#pragma once

#include <cstdint>
#include <vector>

#include "indexing/tensor_index.h"
#include "tensor/tensor.h"

namespace mutagrad::indexing {

// Which view ops build the Path A chain: the differentiable members (x.select, ...: the result
// can carry autograd history) or the raw mutagrad::native ones (for writes that record none).
enum class ViewMode : int8_t { kDifferentiable, kNative };

struct Sliced {
  Tensor tensor;  // self after the Path A view ops (self itself when there were none)
  // Path B, in PyTorch's layout (the one native::make_advanced_index takes): entries index
  // the leading dims of `tensor` in order, undefined = a dim taken whole, and a k-dim mask sits
  // in one slot and covers k dims. Empty when there is no Path B entry.
  std::vector<Tensor> indices;
  bool has_advanced() const { return !indices.empty(); }
};

// Dims the list addresses: integers, slices and index tensors 1 each, a mask its ndim; None,
// Ellipsis and bools none. Throws IndexError when it exceeds self's dims.
int64_t count_specified_dims(ArrayRef<TensorIndex> indices);

// Validates every Path A entry (IndexError for an out-of-range integer or a dim that does not
// exist, ValueError for a step <= 0) and applies it. Index tensors are validated later, by the
// advanced index itself.
Sliced apply_slicing(const Tensor& self, ArrayRef<TensorIndex> indices, ViewMode mode);

}  // namespace mutagrad::indexing
