// CPU kernels of the indexing family: gather (index), scatter (index_put) and masked_fill.
// CpuBackend's index / index_put / masked_fill overrides call these; arguments are validated
// by mutagrad::native (tensor/native/index_ops.h) and follow the conventions of Backend::index.
//
//   cpu::index_kernel(out, self, adv.indices, true);         // out = self[indices]
//   cpu::index_put_kernel(dst, adv.indices, values, {true});  // dst[indices] += values
//   cpu::masked_fill_kernel(dst, mask, 0.0);
//
// Determinism: every destination element is written by exactly one thread, in index order, so
// results are bitwise identical for any thread count (see docs/indexing.md).
#pragma once

#include <vector>

#include "tensor/backend.h"
#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {

// out (contiguous, the indexed shape) = self[indices]. Index values may be negative (they wrap).
// False when a value lies outside [-size, size) (negative_wraps) or [0, size): out is then
// unspecified (Note [Bounds checked in the loop]).
bool index_kernel(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices,
                  bool negative_wraps);
// dst[indices] = values (or combined by desc.reduce when accumulating); values already expanded
// to the indexed shape.
void index_put_kernel(const Tensor& dst, const std::vector<Tensor>& indices, const Tensor& values,
                      const IndexPutDescriptor& desc);
// index_put_kernel on values not screened yet, into a tensor the caller drops on failure (Note
// [Staged writes] in tensor/native/index_ops.cc): false when a value lies outside [-size,
// size) (negative_wraps) or [0, size); dst is then partly written, no memory outside it touched.
bool index_put_checked_kernel(const Tensor& dst, const std::vector<Tensor>& indices,
                              const Tensor& values, const IndexPutDescriptor& desc,
                              bool negative_wraps);
// dst[mask] = value; mask (bool) already expanded to dst's shape (tensor/cpu/masked_fill.cc).
void masked_fill_kernel(const Tensor& dst, const Tensor& mask, const Scalar& value);

// How many threads these kernels may use (default: the hardware's, at most 8). Results do not
// depend on it; tests vary it to show that.
void set_indexing_num_threads(int n);
int indexing_num_threads();

}  // namespace mutagrad::cpu
