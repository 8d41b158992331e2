#include "tensor/shape.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <sstream>

#include "tensor/error.h"

namespace mutagrad {

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The product of `sizes` (0 when any size is 0), or -1 when the product of the nonzero sizes
// exceeds int64 (Note [Size overflow]). Not a std::optional: GCC returns one through a byte
// store and a word load of the same stack slot, a store-forwarding stall on every tensor built
// (7 % of a small sum's serial time, docs/performance/cpu-kernels.md, session 11).
int64_t checked_product(IntArrayRef sizes) {
  int64_t n = 1;
  bool any_zero = false;
  for (int64_t s : sizes) {
    any_zero |= s == 0;
    if (__builtin_mul_overflow(n, std::max<int64_t>(s, 1), &n)) return -1;
  }
  return any_zero ? 0 : n;
}

[[noreturn]] void throw_numel_overflow(IntArrayRef sizes, const char* op) {
  throw ShapeError(str(op, "(): the sizes ", sizes,
                       " multiply to more than int64 can count (numel: integer multiplication "
                       "overflow); the product of the nonzero sizes must be at most ",
                       kInt64Max, ". Use smaller sizes"));
}

[[noreturn]] void throw_storage_overflow(IntArrayRef sizes, const IntArrayRef* strides,
                                         int64_t itemsize, const char* op) {
  std::ostringstream msg;
  msg << op << "(): Storage size calculation overflowed with sizes=" << sizes;
  if (strides != nullptr) msg << " and strides=" << *strides;
  msg << ": with " << itemsize << "-byte elements the tensor would take more than " << kInt64Max
      << " bytes (or more than int64 can count elements). Use smaller sizes";
  if (strides != nullptr) msg << " or strides";
  throw ShapeError(msg.str());
}

}  // namespace

int64_t compute_numel(IntArrayRef sizes, const char* op) {
  const int64_t n = checked_product(sizes);
  if (n < 0) throw_numel_overflow(sizes, op);
  return n;
}

int64_t compute_storage_nbytes(IntArrayRef sizes, int64_t itemsize, const char* op) {
  const int64_t numel = checked_product(sizes);
  int64_t nbytes = 0;
  if (numel < 0 || __builtin_mul_overflow(numel, itemsize, &nbytes)) {
    throw_storage_overflow(sizes, nullptr, itemsize, op);
  }
  return nbytes;
}

int64_t compute_storage_nbytes(IntArrayRef sizes, IntArrayRef strides, int64_t itemsize,
                               int64_t storage_offset, const char* op) {
  if (compute_numel(sizes, op) == 0) return 0;
  bool overflow = __builtin_add_overflow(storage_offset, 1, &storage_offset);
  int64_t needed = storage_offset;  // elements: the last one reachable + 1
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t span = 0;
    overflow |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &span);
    overflow |= __builtin_add_overflow(needed, span, &needed);
  }
  int64_t nbytes = 0;
  overflow |= __builtin_mul_overflow(needed, itemsize, &nbytes);
  if (overflow) throw_storage_overflow(sizes, &strides, itemsize, op);
  return nbytes;
}

DimVector contiguous_strides(IntArrayRef sizes, const char* op) {
  DimVector strides(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = acc;
    if (i > 0 && __builtin_mul_overflow(acc, std::max<int64_t>(sizes[i], 1), &acc)) {
      throw_numel_overflow(sizes, op);  // compute_numel refuses these sizes too
    }
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
  // tensor_numel stays within numel; a stride times it that overflows int64 (a geometry only
  // as_strided can make) is no stride of this tensor, and no stride a view could have.
  for (int64_t tensor_d = static_cast<int64_t>(sizes.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= sizes[tensor_d];
    bool chunk_ends = tensor_d == 0;
    if (!chunk_ends && sizes[tensor_d - 1] != 1) {
      int64_t chunk_stride = 0;
      chunk_ends = __builtin_mul_overflow(tensor_numel, chunk_base_stride, &chunk_stride) ||
                   strides[tensor_d - 1] != chunk_stride;
    }
    if (chunk_ends) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        if (__builtin_mul_overflow(view_numel, chunk_base_stride, &new_strides[view_d]) ||
            __builtin_mul_overflow(view_numel, new_sizes[view_d], &view_numel)) {
          return std::nullopt;
        }
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
  bool overflow = false;
  bool any_zero = false;
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
      any_zero |= out[i] == 0;
      overflow |= __builtin_mul_overflow(known, std::max<int64_t>(out[i], 1), &known);
    }
  }
  if (overflow) {  // Note [Size overflow]
    throw ShapeError(str(op, "(): shape '", requested, "' is invalid for input of size ", numel,
                         ": the product of its sizes overflows int64 (numel: integer "
                         "multiplication overflow); the sizes must multiply to ",
                         numel));
  }
  if (any_zero) known = 0;
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
