// Raw view ops (see tensor/native/views.h): geometry arithmetic only, never a data copy
// (except reshape, which copies when no view exists). Semantics and messages follow PyTorch.
#include "tensor/native/views.h"

#include <algorithm>

#include "tensor/native/copy.h"
#include "tensor/shape.h"

namespace mutagrad::native {
namespace {

// A new TensorImpl over self's storage with the given geometry, sharing self's version
// counter; its view base is the root base (self's base if self is a view, else self).
Tensor make_view(const Tensor& self, DimVector sizes, DimVector strides, int64_t storage_offset) {
  auto impl = make_pooled<TensorImpl>(self.storage(), std::move(sizes), std::move(strides),
                                      storage_offset, self.dtype(), self.version_counter());
  const std::shared_ptr<TensorImpl>& base = self.impl_ptr()->view_base();
  impl->set_view_base(base ? base : self.impl_ptr());
  return Tensor(std::move(impl));
}

DimVector to_dims(IntArrayRef a) { return DimVector(a); }

// The stride of a new size-1 dim inserted before dim `d`: sizes[d] * strides[d] (1 past the
// last dim), as PyTorch. It never addresses an element, so where that product overflows int64
// (huge sizes with huge as_strided strides) any value does: 1.
int64_t new_dim_stride(IntArrayRef sizes, IntArrayRef strides, int64_t d) {
  const size_t i = static_cast<size_t>(d);
  int64_t stride = 1;
  if (i < sizes.size() && __builtin_mul_overflow(sizes[i], strides[i], &stride)) stride = 1;
  return stride;
}

}  // namespace

Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                  std::optional<int64_t> storage_offset) {
  if (sizes.size() != strides.size()) {
    throw ShapeError(str("as_strided(): mismatch in length of strides and shape: sizes ", sizes,
                         " have ", sizes.size(), " entries but strides ", strides, " have ",
                         strides.size(), "; pass one stride per dimension"));
  }
  for (int64_t s : sizes) {
    if (s < 0) {
      throw ValueError(str("as_strided(): Trying to create tensor with negative dimension ", s,
                           ": ", sizes, "; sizes must be non-negative"));
    }
  }
  for (int64_t s : strides) {
    if (s < 0) {
      throw ValueError(
          str("as_strided(): Negative strides are not supported at the moment, got "
              "strides: ",
              strides, "; use flip() on a copy instead"));
    }
  }
  int64_t offset = storage_offset.value_or(self.storage_offset());
  if (offset < 0) {
    throw ValueError(str("as_strided(): invalid storage offset ", offset,
                         "; the storage offset must be non-negative"));
  }
  // Bytes the view reaches; ShapeError when that count overflows (Note [Size overflow]).
  const int64_t item = self.element_size();
  const int64_t needed_bytes = compute_storage_nbytes(sizes, strides, item, offset, "as_strided");
  const int64_t have_bytes = static_cast<int64_t>(self.storage().nbytes());
  if (needed_bytes > have_bytes) {
    throw ValueError(str("as_strided(): sizes ", sizes, ", strides ", strides, ", storage offset ",
                         offset, ", and itemsize ", item, " requiring a storage size of ",
                         needed_bytes, " are out of bounds for storage of size ", have_bytes,
                         "; every element the view reaches must lie inside the storage"));
  }
  return make_view(self, to_dims(sizes), to_dims(strides), offset);
}

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  if (self.dim() == 0) {
    throw IndexError("select() cannot be applied to a 0-dim tensor.");
  }
  int64_t d = wrap_dim(dim, self.dim(), "select");
  int64_t size = self.sizes()[d];
  if (index < -size || index >= size) {
    throw IndexOutOfRangeError(str("select(): index ", index, " out of range for tensor of size ",
                                   self.sizes(), " at dimension ", d, "; expected an index in [",
                                   -size, ", ", size - 1, "]"));
  }
  if (index < 0) index += size;
  DimVector sizes = to_dims(self.sizes());
  DimVector strides = to_dims(self.strides());
  int64_t offset = self.storage_offset() + index * strides[d];
  sizes.erase(d);
  strides.erase(d);
  return make_view(self, std::move(sizes), std::move(strides), offset);
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step) {
  if (self.dim() == 0) {
    throw IndexError("slice() cannot be applied to a 0-dim tensor.");
  }
  if (step <= 0) {
    throw ValueError(str("slice(): step must be greater than zero, got step ", step,
                         "; negative steps are not supported (use flip() on a copy)"));
  }
  int64_t d = wrap_dim(dim, self.dim(), "slice");
  int64_t size = self.sizes()[d];
  // Python slice clamping: wrap negatives once, then clamp into [0, size], stop >= start.
  int64_t b = start.value_or(0);
  int64_t e = stop.value_or(size);
  if (b < 0) b += size;
  if (e < 0) e += size;
  b = std::clamp<int64_t>(b, 0, size);
  e = std::clamp<int64_t>(e, b, size);
  DimVector sizes = to_dims(self.sizes());
  DimVector strides = to_dims(self.strides());
  int64_t offset = self.storage_offset() + b * strides[d];
  sizes[d] = e == b ? 0 : (e - b - 1) / step + 1;  // ceil((e - b) / step), no overflow
  // Overflows only for a huge step, which leaves at most one element: its stride is unused.
  if (__builtin_mul_overflow(strides[d], step, &strides[d])) strides[d] = 1;
  return make_view(self, std::move(sizes), std::move(strides), offset);
}

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  if (self.dim() == 0) {
    throw ShapeError("narrow() cannot be applied to a 0-dim tensor.");
  }
  int64_t d = wrap_dim(dim, self.dim(), "narrow");
  int64_t size = self.sizes()[d];
  // As PyTorch: start may equal size (an empty narrow at the end); otherwise it wraps.
  if (start != size) {
    if (start < -size || start >= size) {
      throw IndexOutOfRangeError(str("narrow(): start out of range (expected to be in range of [",
                                     -size, ", ", size, "], but got ", start, ")"));
    }
    if (start < 0) start += size;
  }
  if (length < 0 || length > size - start) {  // PyTorch: RuntimeError; a bad start: IndexError
    throw ShapeError(str("narrow(): start (", start, ") + length (", length,
                         ") exceeds dimension size (", size, ") of dimension ", d,
                         "; length must be in [0, ", size - start, "]"));
  }
  return slice(self, d, start, start + length, 1);
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  int64_t n = self.dim();
  if (static_cast<int64_t>(dims.size()) != n) {
    throw ShapeError(str(
        "permute(): number of dimensions in the tensor input does not match the "
        "length of the desired ordering of dimensions i.e. input.dim() = ",
        n, " is not equal to len(dims) = ", dims.size(), "; pass a permutation of [0, ", n, ")"));
  }
  DimVector sizes(static_cast<size_t>(n));
  DimVector strides(static_cast<size_t>(n));
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n, "permute");
    if (seen[d]) {
      throw ValueError(str("permute(): duplicate dims are not allowed: dim ", d,
                           " appears twice in ", dims, "; pass a permutation of [0, ", n, ")"));
    }
    seen[d] = true;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  int64_t a = wrap_dim(dim0, self.dim(), "transpose");
  int64_t b = wrap_dim(dim1, self.dim(), "transpose");
  DimVector sizes = to_dims(self.sizes());
  DimVector strides = to_dims(self.strides());
  if (self.dim() > 0) {
    std::swap(sizes[a], sizes[b]);
    std::swap(strides[a], strides[b]);
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor t(const Tensor& self) {
  if (self.dim() > 2) {
    throw ShapeError(str("t() expects a tensor with <= 2 dimensions, but self is ", self.dim(),
                         "D; use transpose(dim0, dim1) or permute() instead"));
  }
  if (self.dim() < 2) return alias(self);
  return transpose(self, 0, 1);
}

Tensor expand(const Tensor& self, IntArrayRef sizes) {
  int64_t ndim = self.dim();
  int64_t n = static_cast<int64_t>(sizes.size());
  if (n < ndim) {
    throw ShapeError(str("expand(torch.", legacy_type_name(self.dtype()), "Tensor{", self.sizes(),
                         "}, size=", sizes, "): the number of sizes provided (", n,
                         ") must be greater or equal to the number of dimensions in the tensor (",
                         ndim, ")"));
  }
  DimVector out_sizes(static_cast<size_t>(n));
  DimVector out_strides(static_cast<size_t>(n));
  // As PyTorch's inferExpandGeometry: walk from the last dim; new leading dims act as size 1.
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t offset = n - 1 - i;
    int64_t d = ndim - 1 - offset;
    int64_t size = d >= 0 ? self.sizes()[d] : 1;
    int64_t stride = d >= 0 ? self.strides()[d] : new_dim_stride(out_sizes, out_strides, i + 1);
    int64_t target = sizes[i];
    if (target == -1) {
      if (d < 0) {
        throw ShapeError(
            str("The expanded size of the tensor (-1) isn't allowed in a leading, "
                "non-existing dimension ",
                i, ". Target sizes: ", sizes, ". Tensor sizes: ", self.sizes(),
                "; give the new leading dimension an explicit size"));
      }
      target = size;
    }
    if (target < 0) {
      throw ValueError(str("expand(): invalid size ", target, " at dimension ", i, " in ", sizes,
                           "; sizes must be non-negative (or -1 to keep a size)"));
    }
    if (size != target) {
      if (size != 1) {
        throw ShapeError(str("The expanded size of the tensor (", target,
                             ") must match the existing size (", size,
                             ") at non-singleton dimension ", i, ".  Target sizes: ", sizes,
                             ".  Tensor sizes: ", self.sizes()));
      }
      size = target;
      stride = 0;
    }
    out_sizes[i] = size;
    out_strides[i] = stride;
  }
  compute_numel(out_sizes, "expand");  // ShapeError when the count overflows int64
  return make_view(self, std::move(out_sizes), std::move(out_strides), self.storage_offset());
}

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim() + 1, "unsqueeze");
  DimVector sizes = to_dims(self.sizes());
  DimVector strides = to_dims(self.strides());
  int64_t stride = new_dim_stride(sizes, strides, d);
  sizes.insert(d, 1);
  strides.insert(d, stride);
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor squeeze(const Tensor& self) {
  DimVector sizes;
  DimVector strides;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (self.sizes()[i] == 1) continue;
    sizes.push_back(self.sizes()[i]);
    strides.push_back(self.strides()[i]);
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor squeeze(const Tensor& self, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim(), "squeeze");
  DimVector sizes = to_dims(self.sizes());
  DimVector strides = to_dims(self.strides());
  if (self.dim() > 0 && sizes[d] == 1) {
    sizes.erase(d);
    strides.erase(d);
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor view(const Tensor& self, IntArrayRef sizes) {
  DimVector shape = infer_size(sizes, self.numel(), "view");
  std::optional<DimVector> strides = compute_view_strides(self.sizes(), self.strides(), shape);
  if (!strides) {
    throw ShapeError(
        str("view size is not compatible with input tensor's size and stride (at "
            "least one dimension spans across two contiguous subspaces). Use "
            ".reshape(...) instead. (sizes ",
            self.sizes(), ", strides ", self.strides(), ", requested shape ", shape, ")"));
  }
  return make_view(self, std::move(shape), std::move(*strides), self.storage_offset());
}

Tensor reshape(const Tensor& self, IntArrayRef sizes) {
  DimVector shape = infer_size(sizes, self.numel(), "reshape");
  std::optional<DimVector> strides = compute_view_strides(self.sizes(), self.strides(), shape);
  if (strides) {
    return make_view(self, std::move(shape), std::move(*strides), self.storage_offset());
  }
  // No view exists: a contiguous copy (own storage and version counter), given the new shape.
  Tensor copy = clone(self);
  DimVector copy_strides = contiguous_strides(shape);
  copy.unsafe_impl()->set_geometry(std::move(shape), std::move(copy_strides),
                                   copy.storage_offset());
  return copy;
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return reshape(self, {1});
  int64_t s = wrap_dim(start_dim, self.dim(), "flatten");
  int64_t e = wrap_dim(end_dim, self.dim(), "flatten");
  if (s > e) {
    throw ValueError(
        str("flatten() has invalid args: start_dim cannot come after end_dim (start_dim ", s,
            ", end_dim ", e, ")"));
  }
  if (s == e) return self;  // as PyTorch: the same tensor, not a new view
  DimVector shape;
  for (int64_t i = 0; i < s; ++i) shape.push_back(self.sizes()[i]);
  const IntArrayRef merged(self.sizes().data() + s, static_cast<size_t>(e - s + 1));
  shape.push_back(compute_numel(merged, "flatten"));
  for (int64_t i = e + 1; i < self.dim(); ++i) shape.push_back(self.sizes()[i]);
  return reshape(self, shape);
}

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  int64_t d1 = wrap_dim(dim1, self.dim(), "diagonal");
  int64_t d2 = wrap_dim(dim2, self.dim(), "diagonal");
  if (d1 == d2) {
    throw ValueError(str("diagonal(): diagonal dimensions cannot be identical ", dim1, ", ", dim2,
                         "; pass two different dims"));
  }
  int64_t size1 = self.sizes()[d1];
  int64_t size2 = self.sizes()[d2];
  int64_t diag_size = offset >= 0 ? std::max<int64_t>(std::min(size1, size2 - offset), 0)
                                  : std::max<int64_t>(std::min(size1 + offset, size2), 0);
  int64_t storage_offset = self.storage_offset();
  if (diag_size > 0) {
    storage_offset += offset >= 0 ? offset * self.strides()[d2] : -offset * self.strides()[d1];
  }
  int64_t diag_stride = self.strides()[d1] + self.strides()[d2];
  DimVector sizes = to_dims(self.sizes());
  DimVector strides = to_dims(self.strides());
  sizes.erase(std::max(d1, d2));
  strides.erase(std::max(d1, d2));
  sizes.erase(std::min(d1, d2));
  strides.erase(std::min(d1, d2));
  sizes.push_back(diag_size);
  strides.push_back(diag_stride);
  return make_view(self, std::move(sizes), std::move(strides), storage_offset);
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  if (self.dim() == 0) {
    throw IndexError(str("unbind(): Dimension specified as ", dim,
                         " but tensor has no dimensions; unbind needs at least a 1-D tensor"));
  }
  int64_t d = wrap_dim(dim, self.dim(), "unbind");
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(self.sizes()[d]));
  for (int64_t i = 0; i < self.sizes()[d]; ++i) out.push_back(select(self, d, i));
  return out;
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  if (self.dim() == 0) {
    throw IndexError("split(): split expects at least a 1-dimensional tensor");
  }
  if (split_size < 0) {
    throw ValueError(
        str("split expects split_size be non-negative, but got split_size=", split_size));
  }
  int64_t d = wrap_dim(dim, self.dim(), "split");
  int64_t dim_size = self.sizes()[d];
  if (split_size == 0 && dim_size != 0) {
    throw ValueError(
        str("split_size can only be 0 if dimension size is 0, but got dimension size "
            "of ",
            dim_size));
  }
  int64_t num_splits =
      split_size == 0 ? 1 : std::max<int64_t>((dim_size + split_size - 1) / split_size, 1);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(num_splits));
  for (int64_t i = 0; i < num_splits; ++i) {
    int64_t start = i * split_size;
    int64_t length = std::min(split_size, dim_size - start);
    out.push_back(narrow(self, d, start, length));
  }
  return out;
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  if (self.dim() == 0) {
    throw IndexError("split_with_sizes(): expects at least a 1-dimensional tensor");
  }
  int64_t d = wrap_dim(dim, self.dim(), "split_with_sizes");
  int64_t dim_size = self.sizes()[d];
  int64_t total = 0;
  bool overflow = false;
  for (int64_t s : split_sizes) {
    if (s < 0) {
      throw ValueError(
          str("split_with_sizes expects split_sizes have only non-negative entries, "
              "but got split_sizes=",
              split_sizes));
    }
    // A sum past int64 cannot be dim_size either (Note [Size overflow] in tensor/shape.h).
    overflow |= __builtin_add_overflow(total, s, &total);
  }
  if (overflow || total != dim_size) {
    throw ShapeError(str("split_with_sizes expects split_sizes to sum exactly to ", dim_size,
                         " (input tensor's size at dimension ", d,
                         "), but got split_sizes=", split_sizes));
  }
  std::vector<Tensor> out;
  out.reserve(split_sizes.size());
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(narrow(self, d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  if (self.dim() == 0) {
    throw IndexError("chunk expects at least a 1-dimensional tensor");
  }
  if (chunks <= 0) {
    throw ValueError(str("chunk expects `chunks` to be greater than 0, got: ", chunks));
  }
  int64_t d = wrap_dim(dim, self.dim(), "chunk");
  int64_t dim_size = self.sizes()[d];
  int64_t split_size = (dim_size + chunks - 1) / chunks;
  if (split_size == 0 && dim_size == 0) {
    // split() would give one chunk; PyTorch keeps the requested number of empty chunks.
    std::vector<int64_t> sizes(static_cast<size_t>(chunks), 0);
    return split_with_sizes(self, sizes, d);
  }
  return split(self, split_size, d);
}

Tensor alias(const Tensor& self) {
  return make_view(self, to_dims(self.sizes()), to_dims(self.strides()), self.storage_offset());
}

Tensor detach(const Tensor& self) {
  return Tensor(make_pooled<TensorImpl>(self.storage(), to_dims(self.sizes()),
                                        to_dims(self.strides()), self.storage_offset(),
                                        self.dtype(), self.version_counter()));
}

Tensor variable_data(const Tensor& self) {
  return Tensor(make_pooled<TensorImpl>(self.storage(), to_dims(self.sizes()),
                                        to_dims(self.strides()), self.storage_offset(),
                                        self.dtype(), VersionCounter()));
}

}  // namespace mutagrad::native
