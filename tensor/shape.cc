#include "tensor/shape.h"

#include <algorithm>
#include <numeric>

#include "tensor/error.h"

namespace mutagrad {

int64_t compute_numel(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

bool compute_is_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  if (compute_numel(sizes) == 0) return true;  // an empty tensor is contiguous, as in PyTorch
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);
  if (dim < -n || dim >= n) {
    throw IndexError(str(op, "(): dimension out of range (expected to be in range of [", -n, ", ",
                         n - 1, "], but got ", dim, ")"));
  }
  return dim < 0 ? dim + n : dim;
}

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(str(op, "(): the size of tensor a (", da,
                           ") must match the size of tensor b (", db,
                           ") at non-singleton dimension ", i, "; shapes ", a, " and ", b,
                           " do not broadcast. Make the sizes equal or 1 in that dimension"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<DimVector> compute_view_strides(IntArrayRef sizes, IntArrayRef strides,
                                              IntArrayRef new_sizes) {
  DimVector new_strides(new_sizes.size());
  if (sizes.empty()) {
    for (auto& s : new_strides) s = 1;
    return new_strides;
  }
  int64_t numel = compute_numel(sizes);
  if (numel == 0) {
    if (sizes.equals(new_sizes)) return DimVector(strides);
    return contiguous_strides(new_sizes);
  }
  // Walk the old dims from the back in "chunks" of dims that are contiguous with each other;
  // each chunk must be covered exactly by a run of new dims.
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(sizes.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= sizes[tensor_d];
    if (tensor_d == 0 ||
        (sizes[tensor_d - 1] != 1 && strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

DimVector infer_size(IntArrayRef requested, int64_t numel, const char* op) {
  DimVector out(requested);
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer) {
        throw ShapeError(str(op, "(): only one dimension can be inferred, but the shape ",
                             requested, " has -1 at dims ", *infer, " and ", i));
      }
      infer = i;
    } else if (out[i] < 0) {
      throw ShapeError(str(op, "(): invalid shape dimension ", out[i], " in ", requested,
                           "; sizes must be non-negative (or -1 for one inferred dimension)"));
    } else {
      known *= out[i];
    }
  }
  if (infer) {
    if (known == 0 || numel % known != 0) {
      throw ShapeError(str(op, "(): shape '", requested, "' is invalid for input of size ", numel));
    }
    out[*infer] = numel / known;
  } else if (known != numel) {
    throw ShapeError(str(op, "(): shape '", requested, "' is invalid for input of size ", numel,
                         "; the sizes must multiply to ", numel));
  }
  return out;
}

MemOverlap has_internal_overlap(IntArrayRef sizes, IntArrayRef strides) {
  // Sort the non-trivial dims by stride; if every stride exceeds the span of all smaller
  // ones, no two elements meet. A zero stride on a dim of size > 1 certainly overlaps, unless
  // the tensor is empty: no elements, nothing to overlap (NumPy gives empty arrays 0 strides).
  for (int64_t size : sizes) {
    if (size == 0) return MemOverlap::kNo;
  }
  DimVector order;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] <= 1) continue;
    if (strides[i] == 0) return MemOverlap::kYes;
    order.push_back(static_cast<int64_t>(i));
  }
  std::sort(order.begin(), order.end(),
            [&](int64_t x, int64_t y) { return strides[x] < strides[y]; });
  int64_t span = 0;  // largest offset reachable with the dims seen so far
  for (int64_t d : order) {
    if (strides[d] <= span) return MemOverlap::kTooHard;
    span += (sizes[d] - 1) * strides[d];
  }
  return MemOverlap::kNo;
}

}  // namespace mutagrad
