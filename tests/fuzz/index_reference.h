// A naive reference evaluator of PyTorch's indexing rules, written without any call into
// indexing/ or the index kernels: it walks the index list over plain (sizes, strides, offset)
// triples and lists, element by element, the storage offsets that self[indices] addresses.
//
//   RefIndex r = reference_index(x, {Slice(1, None), idx});
//   if (r.ok) { r.shape; r.offsets; r.is_view; }   // x[1:, idx]: shape and where each element is
//   else { r.error; }                                // why PyTorch would raise
//
// The rules are PyTorch 1.13's with mutagrad's documented extensions (docs/indexing.md, "Where
// mutagrad goes beyond PyTorch 1.13"): a k-dim mask covers k dims of the list, int32 index
// tensors are accepted, and a uint8 index tensor is a mask.
#pragma once

#include <string>
#include <vector>

#include "indexing/tensor_index.h"
#include "tensor/tensor.h"

namespace mutagrad::fuzz {

struct RefIndex {
  bool ok = false;
  std::string error;  // why not ok
  std::vector<int64_t> shape;
  // Storage offset (in elements of self's storage) of each element of the result, row-major.
  std::vector<int64_t> offsets;
  // Whether PyTorch returns a view (only basic entries) rather than a copy.
  bool is_view = false;
};

// self[indices] (Python's __getitem__ / __setitem__ addressing).
RefIndex reference_index(const Tensor& self, ArrayRef<indexing::TensorIndex> indices);
// The elements index_put_(self, indices, ...) addresses: entries apply to dims 0, 1, ... of
// self; an undefined entry takes its dim whole; a 0-dim bool entry is an error (mutagrad's raw
// index_put_ rejects it); a list without index tensors addresses all of self.
RefIndex reference_index_put(const Tensor& self, const std::vector<Tensor>& indices);

// PyTorch's rule for a value written into a result of shape `target`: the value's leading
// size-1 dims are dropped (set_item only, `strip_leading_ones`), then it must broadcast to
// `target`. Returns, for each element of `target` (row-major), the element of the value
// (row-major in the value's own shape), or false if it does not broadcast.
bool reference_broadcast(const std::vector<int64_t>& value_shape,
                         const std::vector<int64_t>& target, bool strip_leading_ones,
                         std::vector<int64_t>* value_index);

}  // namespace mutagrad::fuzz
