// Shape and stride arithmetic shared by every layer: numel, contiguity, broadcasting,
// dim wrapping, and the stride computation that decides whether view() can be a view.
//
//   DimVector out = broadcast_shapes({2, 1, 4}, {3, 1});   // [2, 3, 4]
//   int64_t d = wrap_dim(-1, 3, "sum");                     // 2
#pragma once

#include <cstdint>
#include <optional>

#include "tensor/small_vector.h"

namespace mutagrad {

// Note [Size overflow]
// Every element count, stride and byte count derived from sizes a caller gave is computed with
// overflow-checked arithmetic, and a result that int64 cannot hold is a ShapeError naming the op
// and the sizes (PyTorch: "numel: integer multiplication overflow", "Storage size calculation
// overflowed"), raised before anything is allocated. The product of the nonzero sizes must fit
// even when a 0 makes the tensor empty: its contiguous strides, and the offsets of slices along
// its other dims, are products of those sizes. (PyTorch 1.13 multiplies left to right, so it
// refuses [2^62, 4, 0] but accepts [0, 2^62, 4], whose strides then wrap.) Once sizes passed,
// their strides and in-range offsets fit in int64 too.

// The number of elements of `sizes`; ShapeError naming `op` when the product of the nonzero
// sizes exceeds int64.
int64_t compute_numel(IntArrayRef sizes, const char* op = "numel");
// The bytes of a contiguous tensor of `sizes` with `itemsize`-byte elements; ShapeError naming
// `op` when the count exceeds int64.
int64_t compute_storage_nbytes(IntArrayRef sizes, int64_t itemsize, const char* op);
// The bytes a strided geometry reaches from the storage's start: (storage_offset + 1 + the sum
// of (size - 1) * stride) * itemsize, 0 for an empty tensor. Sizes and strides must be
// non-negative. ShapeError naming `op` when the count exceeds int64.
int64_t compute_storage_nbytes(IntArrayRef sizes, IntArrayRef strides, int64_t itemsize,
                               int64_t storage_offset, const char* op);
// Row-major strides for `sizes` (in elements); the ShapeError of compute_numel for sizes it
// refuses (only then can a stride exceed int64).
DimVector contiguous_strides(IntArrayRef sizes, const char* op = "numel");
// True when the geometry is row-major contiguous (size-1 dims may have any stride).
bool compute_is_contiguous(IntArrayRef sizes, IntArrayRef strides);

// Maps a possibly negative dim into [0, ndim); IndexError naming `op` when out of range.
// A 0-dim tensor accepts dims -1 and 0, as in PyTorch.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

// NumPy/PyTorch broadcasting of two or more shapes; ShapeError naming `op` if they do not.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op = "broadcast");

// The strides a view of (sizes, strides) with shape `new_sizes` would have, or nullopt when
// no such view exists (the data would have to be copied). As PyTorch's computeStride.
std::optional<DimVector> compute_view_strides(IntArrayRef sizes, IntArrayRef strides,
                                              IntArrayRef new_sizes);

// Resolves one -1 in a requested shape against numel; ShapeError naming `op` if impossible.
DimVector infer_size(IntArrayRef requested, int64_t numel, const char* op);

// Memory overlap classification, as PyTorch's MemOverlap.
enum class MemOverlap { kNo, kYes, kTooHard };
// Whether several elements of one tensor share a memory location.
MemOverlap has_internal_overlap(IntArrayRef sizes, IntArrayRef strides);

}  // namespace mutagrad
