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

int64_t compute_numel(IntArrayRef sizes);
// Row-major strides for `sizes` (in elements).
DimVector contiguous_strides(IntArrayRef sizes);
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
