#include "tensor/native/index_ops.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

#include "tensor/backend.h"
#include "tensor/native/copy.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad::native {
namespace {

// A contiguous tensor of fresh storage (internal temporaries; no dependency on factories).
Tensor new_empty(IntArrayRef sizes, ScalarType dtype, Device device) {
  // Checked (Note [Size overflow]): an index into an expanded tensor can ask for a huge result.
  const int64_t nbytes = compute_storage_nbytes(sizes, element_size(dtype), "index");
  return Tensor(make_pooled<TensorImpl>(Storage::allocate(device, static_cast<size_t>(nbytes)),
                                        DimVector(sizes), contiguous_strides(sizes), 0, dtype,
                                        VersionCounter()));
}

// The same storage and version counter under another geometry. Used only for temporaries
// handed to kernels (expanded operands, nonzero columns), never returned to users.
Tensor restride(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  return Tensor(make_pooled<TensorImpl>(t.storage(), DimVector(sizes), DimVector(strides), offset,
                                        t.dtype(), t.version_counter()));
}

// `t` broadcast to `sizes` (is_expandable_to must hold): stride 0 on new or size-1 dims.
Tensor expand_to(const Tensor& t, IntArrayRef sizes) {
  if (t.sizes() == sizes) return t;
  DimVector strides(sizes.size(), 0);
  size_t lead = sizes.size() - static_cast<size_t>(t.dim());
  for (size_t i = 0; i < static_cast<size_t>(t.dim()); ++i) {
    strides[lead + i] = t.sizes()[i] == sizes[lead + i] ? t.strides()[i] : 0;
  }
  return restride(t, sizes, strides, t.storage_offset());
}

// Calls fn(offset) for every element of (sizes, strides), row-major, offsets in elements.
template <typename Fn>
void for_each_offset(IntArrayRef sizes, IntArrayRef strides, Fn&& fn) {
  int64_t n = compute_numel(sizes);
  if (n == 0) return;
  int64_t nd = static_cast<int64_t>(sizes.size());
  if (nd == 0) {
    fn(int64_t{0});
    return;
  }
  DimVector counter(sizes.size(), 0);
  int64_t inner = sizes[nd - 1];
  int64_t inner_stride = strides[nd - 1];
  int64_t base = 0;
  for (int64_t done = 0; done < n; done += inner) {
    for (int64_t k = 0; k < inner; ++k) fn(base + k * inner_stride);
    for (int64_t d = nd - 2; d >= 0; --d) {
      base += strides[d];
      if (++counter[d] < sizes[d]) break;
      base -= counter[d] * strides[d];
      counter[d] = 0;
    }
  }
}

std::string shapes_list(const std::vector<Tensor>& tensors) {
  std::ostringstream os;
  bool first = true;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    os << (first ? "" : ", ") << t.sizes();
    first = false;
  }
  return os.str();
}

// The first value of a CPU int64 tensor outside [lower, size) (row-major), or -1; lower is
// -size or 0. Runs only once the backend's screen (Backend::index_in_range) found one. The
// distance from `lower` is taken in uint64_t: an index near INT64_MAX minus a negative `lower`
// overflows int64_t (undefined; found by index_expression_fuzzer, docs/reliability.md).
int64_t first_out_of_bounds_cpu(const Tensor& idx, int64_t lower, int64_t size, int64_t* value) {
  const int64_t* data = idx.data_ptr<int64_t>();
  const uint64_t span = static_cast<uint64_t>(size - lower);
  int64_t pos = 0;
  int64_t found = -1;
  for_each_offset(idx.sizes(), idx.strides(), [&](int64_t off) {
    if (found < 0 && (static_cast<uint64_t>(data[off]) - static_cast<uint64_t>(lower)) >= span) {
      found = pos;
      *value = data[off];
    }
    ++pos;
  });
  return found;
}

// Note [Index validation on the device]
// An index tensor on a device is checked there before anything is written: one element-wise
// test, one reduction and one device-to-host copy of the verdict (a bool), so a write with
// advanced indices costs one synchronization on a GPU. That is the price of the strong
// guarantee: PyTorch instead asserts inside the kernel, after some elements may have been
// written, and the assert leaves the CUDA context unusable. Only when an index is out of range
// is the first offender (row-major order, as on the CPU) located, for the same message.
Tensor out_of_range_mask(const Tensor& flat, int64_t lower, int64_t size) {
  return binary(BinaryOp::kLogicalOr,
                binary(BinaryOp::kLt, flat, wrap_scalar(lower, kInt64, flat.device())),
                binary(BinaryOp::kGe, flat, wrap_scalar(size, kInt64, flat.device())));
}

int64_t first_out_of_bounds_on_device(const Tensor& idx, int64_t lower, int64_t size,
                                      int64_t* value) {
  const Tensor flat = reshape(contiguous(idx), {-1});
  const Tensor bad = out_of_range_mask(flat, lower, size);
  const int64_t pos = select(nonzero(bad), 0, 0).item<int64_t>();
  *value = select(flat, 0, pos).item<int64_t>();
  return pos;
}

// The single bool (or uint8, as torch) mask of `indices` (all other entries undefined), checked
// against the dims it covers and viewed as bool with trailing size-1 dims so that it broadcasts
// to self's shape; an undefined tensor when the list is not of that form.
Tensor fill_mask(const Tensor& self, TensorList indices) {
  const Tensor* mask = nullptr;
  int64_t at = 0;
  for (size_t p = 0; p < indices.size(); ++p) {
    if (!indices[p].defined()) continue;
    const bool is_mask = indices[p].dtype() == kBool || indices[p].dtype() == kUInt8;
    if (mask != nullptr || !is_mask || indices[p].dim() == 0 ||
        indices[p].device() != self.device()) {
      return Tensor();
    }
    mask = &indices[p];
    at = static_cast<int64_t>(p);
  }
  if (mask == nullptr) return Tensor();
  if (static_cast<int64_t>(indices.size()) - 1 + mask->dim() > self.dim()) {
    throw IndexError(too_many_indices_message(
        self.dim(), static_cast<int64_t>(indices.size()) - 1 + mask->dim()));
  }
  for (int64_t j = 0; j < mask->dim(); ++j) {
    if (mask->size(j) != self.size(at + j)) {
      throw IndexError(str("The shape of the mask ", mask->sizes(), " at index ", j,
                           " does not match the shape of the indexed tensor ", self.sizes(),
                           " at index ", at + j,
                           "; a mask must have exactly the sizes of the dims it indexes"));
    }
  }
  const Tensor as_bool = mask->dtype() == kBool ? *mask : to(*mask, kBool);
  DimVector sizes(as_bool.sizes());
  DimVector strides(as_bool.strides());
  for (int64_t d = at + as_bool.dim(); d < self.dim(); ++d) {
    sizes.push_back(1);
    strides.push_back(0);
  }
  return restride(as_bool, sizes, strides, as_bool.storage_offset());
}

}  // namespace

bool is_expandable_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  }
  return true;
}

std::string too_many_indices_message(int64_t ndim, int64_t got) {
  return str("too many indices for tensor of dimension ", ndim, " (got ", got, "); index at most ",
             ndim, " dims, or add dims first with None / unsqueeze()");
}

std::string out_of_bounds_message(int64_t index, int64_t dim, int64_t size, bool negative_wraps) {
  if (size == 0) {
    return str("index ", index, " is out of bounds for dimension ", dim,
               " with size 0; the dimension is empty, so no index is valid there");
  }
  if (!negative_wraps) {
    return str("index ", index, " is out of bounds for dimension ", dim, " with size ", size,
               "; valid indices are in [0, ", size - 1, "]",
               index < 0 ? str(" (this op does not count negative indices from the end, as "
                               "torch; to count from the end, add the size: index + ",
                               size, ")")
                         : std::string());
  }
  return str("index ", index, " is out of bounds for dimension ", dim, " with size ", size,
             "; valid indices are in [", -size, ", ", size - 1, "]");
}

DimVector strip_leading_ones(IntArrayRef sizes) {
  size_t first = 0;
  while (first < sizes.size() && sizes[first] == 1) ++first;
  return DimVector(IntArrayRef(sizes.data() + first, sizes.size() - first));
}

AdvancedIndex make_advanced_index(const Tensor& self, TensorList given_indices,
                                  KnownIndices given_known) {
  // uint8 index tensors are masks, as in PyTorch (which deprecates them for bool).
  std::vector<Tensor> masks;
  bool any_byte = false;
  for (const Tensor& t : given_indices) any_byte = any_byte || (t.defined() && t.dtype() == kUInt8);
  if (any_byte) {
    for (const Tensor& t : given_indices) {
      masks.push_back(t.defined() && t.dtype() == kUInt8 ? to(t, kBool) : t);
    }
  }
  TensorList indices = any_byte ? TensorList(masks) : given_indices;
  const int64_t ndim = self.dim();
  int64_t consumed = 0;
  for (const Tensor& t : indices) {
    consumed += (t.defined() && t.dtype() == kBool) ? t.dim() : 1;
  }
  if (consumed > ndim) throw IndexError(too_many_indices_message(ndim, consumed));

  for (const Tensor& t : indices) {
    if (!t.defined()) continue;
    if (t.dtype() != kInt64 && t.dtype() != kInt32 && t.dtype() != kBool) {
      throw IndexError(
          str("tensors used as indices must be long, int, byte or bool tensors; got a ",
              dtype_name(t.dtype()), " tensor. Convert it with .to(kInt64)"));
    }
    // As torch: index tensors on the CPU index tensors on any device (they are moved).
    if (t.device() != self.device() && !t.device().is_cpu()) {
      throw DeviceError(
          str("indices should be either on cpu or on the same device as the indexed "
              "tensor (",
              self.device(), "); got an index on ", t.device(), ". Move it with .to(",
              self.device(), ")"));
    }
    if (t.dtype() == kBool && t.dim() == 0) {
      throw IndexError(
          "a 0-dim bool index is only accepted by index() / set_item_ (x[{true}]), which add a "
          "dim for it; pass a mask with dims, or use x.index({...})");
    }
  }

  AdvancedIndex out;
  std::vector<Tensor>& list = out.indices;
  // Marks entry list.size() (the next one pushed) as known (Note [Indices known in range]).
  auto mark_known = [&](bool nonnegative) {
    const size_t at = list.size();
    if (at >= 64) return;
    out.known.in_range |= uint64_t{1} << at;
    if (nonnegative) out.known.nonnegative |= uint64_t{1} << at;
  };
  for (size_t q = 0; q < indices.size(); ++q) {
    const Tensor& given = indices[q];
    const Tensor t =
        given.defined() && given.device() != self.device() ? to(given, self.device()) : given;
    if (!t.defined()) {
      list.emplace_back();
    } else if (t.dtype() == kBool) {
      int64_t at = static_cast<int64_t>(list.size());
      for (int64_t j = 0; j < t.dim(); ++j) {
        if (t.size(j) != self.size(at + j)) {
          throw IndexError(str("The shape of the mask ", t.sizes(), " at index ", j,
                               " does not match the shape of the indexed tensor ", self.sizes(),
                               " at index ", at + j,
                               "; a mask must have exactly the sizes of the dims it indexes"));
        }
      }
      Tensor nz = nonzero(t);  // int64 [count, k]
      for (int64_t j = 0; j < t.dim(); ++j) {
        mark_known(/*nonnegative=*/true);  // coordinates of a mask of the dims' sizes
        list.push_back(
            restride(nz, {nz.size(0)}, {nz.stride(0)}, nz.storage_offset() + j * nz.stride(1)));
      }
    } else {
      if (given_known.has(q)) mark_known(given_known.has_nonnegative(q));
      list.push_back(t.dtype() == kInt64 ? t : to(t, kInt64));
    }
  }

  // Broadcast the index tensors together.
  bool any = false;
  DimVector shape;
  for (const Tensor& t : list) {
    if (!t.defined()) continue;
    if (!any) {
      shape = DimVector(t.sizes());
      any = true;
      continue;
    }
    size_t n = std::max(shape.size(), static_cast<size_t>(t.dim()));
    DimVector merged(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t a = i < n - shape.size() ? 1 : shape[i - (n - shape.size())];
      int64_t b = i < n - t.sizes().size() ? 1 : t.sizes()[i - (n - t.sizes().size())];
      if (a != b && a != 1 && b != 1) {
        throw IndexError(
            str("shape mismatch: indexing tensors could not be broadcast together "
                "with shapes ",
                shapes_list(list),
                "; index tensors must have equal sizes, or 1, in each trailing dim"));
      }
      merged[i] = a == 1 ? b : a;
    }
    shape = std::move(merged);
  }
  out.index_shape = shape;

  // Positions of the defined entries; adjacency decides where the index dims go.
  int64_t first = -1;
  int64_t last = -1;
  for (size_t p = 0; p < list.size(); ++p) {
    if (!list[p].defined()) continue;
    if (first < 0) first = static_cast<int64_t>(p);
    last = static_cast<int64_t>(p);
    ++out.num_defined;
  }
  out.adjacent = out.num_defined == 0 || last - first + 1 == out.num_defined;
  out.first_dim = std::max<int64_t>(first, 0);

  DimVector result;
  if (out.num_defined == 0) {
    result = DimVector(self.sizes());
  } else if (out.adjacent) {
    for (int64_t d = 0; d < first; ++d) result.push_back(self.size(d));
    for (int64_t s : shape) result.push_back(s);
    for (int64_t d = last + 1; d < ndim; ++d) result.push_back(self.size(d));
  } else {
    for (int64_t s : shape) result.push_back(s);
    for (int64_t d = 0; d < ndim; ++d) {
      bool indexed = d < static_cast<int64_t>(list.size()) && list[d].defined();
      if (!indexed) result.push_back(self.size(d));
    }
  }
  compute_numel(result, "index");  // ShapeError when the result's count overflows int64
  out.result_shape = std::move(result);

  // An index into an empty dim can be valid nowhere: PyTorch raises this before any other
  // check of the values (but only when the index selects something).
  if (compute_numel(shape) > 0) {
    for (size_t p = 0; p < list.size(); ++p) {
      if (list[p].defined() && self.size(static_cast<int64_t>(p)) == 0) {
        throw IndexOutOfRangeError(
            str("index is out of bounds for dimension ", p,
                " with size 0; the dimension is empty, so no index is valid there"));
      }
    }
  }

  out.unexpanded.resize(list.size());
  for (size_t p = 0; p < list.size(); ++p) {
    if (!list[p].defined()) continue;
    out.unexpanded[p] = list[p];
    list[p] = expand_to(list[p], shape);
  }
  return out;
}

bool check_index_bounds(const Tensor& self, const AdvancedIndex& index) {
  // As PyTorch: values are only checked when the result has elements (nothing is accessed
  // otherwise, e.g. x[idx, 4:4]).
  if (compute_numel(index.result_shape) == 0) return false;
  bool nonnegative = true;
  for (size_t p = 0; p < index.unexpanded.size(); ++p) {
    const Tensor& idx = index.unexpanded[p];
    if (!idx.defined() || idx.numel() == 0) continue;
    if (index.known.has(p)) {  // Note [Indices known in range]
      nonnegative = nonnegative && index.known.has_nonnegative(p);
      continue;
    }
    int64_t size = self.size(static_cast<int64_t>(p));
    // Screen first (a backend kernel); locate the offender only when there is one. [0, size)
    // first: the usual values, and the kernels skip the wrap when all are there (Note [Plain
    // loops] in tensor/cpu/index_loop.h). Negatives that wrap cost a second screen.
    Backend& backend = backend_for(idx.device());
    if (backend.index_in_range(idx, 0, size)) continue;
    const int64_t lower = index.negative_wraps ? -size : 0;
    if (lower < 0 && backend.index_in_range(idx, lower, size)) {
      nonnegative = false;
      continue;
    }
    int64_t value = 0;
    const int64_t pos = idx.device().is_cpu()
                            ? first_out_of_bounds_cpu(idx, lower, size, &value)
                            : first_out_of_bounds_on_device(idx, lower, size, &value);
    MG_INTERNAL_ASSERT(pos >= 0, "index_in_range and the search for the offender disagree");
    throw IndexOutOfRangeError(
        out_of_bounds_message(value, static_cast<int64_t>(p), size, index.negative_wraps));
  }
  return nonnegative;
}

Tensor index(const Tensor& self, TensorList indices, bool negative_wraps, KnownIndices known) {
  AdvancedIndex adv = make_advanced_index(self, indices, known);
  adv.negative_wraps = negative_wraps;
  Tensor out = new_empty(adv.result_shape, self.dtype(), self.device());
  // The CPU checks inside its gather loop for the price of a compare; a device waits.
  bool all_known = !self.device().is_cpu();
  for (size_t p = 0; p < adv.indices.size(); ++p) {
    all_known = all_known && (!adv.indices[p].defined() || adv.known.has(p));
  }
  if (all_known) {  // Note [Indices known in range]: no check, no wait for a device
    if (out.numel() > 0) backend_for(self.device()).index(out, self, adv.indices);
    return out;
  }
  // As PyTorch, values are only checked when the result has elements. A read checks them in
  // its kernel (only its fresh output is written); an offender is located for the message.
  if (out.numel() > 0 &&
      !backend_for(self.device())
           .index_checked(out, self, adv.indices, adv.unexpanded, negative_wraps)) {
    check_index_bounds(self, adv);
    MG_INTERNAL_ASSERT(false, "index_checked and check_index_bounds disagree");
  }
  return out;
}

// Note [Staged writes]
// The strong guarantee asks every index value to be checked before the first write, and the
// version bump (with its pre-write hook) to come between the checks and the write. For a write
// of many values into a small tensor that check was a pass of its own over the indices, as
// long as a third of the write (scatter_add_ of 1M values into 64K: the screen 0.30 ms, the
// write 0.45 ms, on one core of this VM). libtorch checks each value in its write loop, for the
// price of a compare and a never-taken branch, and leaves a partial write behind when one is
// out of range. So when self is small (at most kStagedBytes) next to its index values (their
// bytes at least kStageRatio times self's), prepare_index_put() writes into a contiguous copy
// of self with a checked kernel (Backend::index_put_checked: the CPU's checks in its loop) and
// keeps the copy; an offender drops it and throws as before, self untouched. After the bump,
// index_put_validated() copies the staged tensor into self: two passes over a tensor that
// fits in L2 in place of one over the indices. Values or indices that overlap self are read
// before self changes, as the unstaged write reads its copies of them. Only the CPU stages (a
// device kernel would need its own checked write), only a single write (scatter_reduce_ writes
// its plan twice and passes may_stage = false), and not while a collective is pending on self
// (the bump refuses the write then, and must say so before anything reads self).
constexpr int64_t kStagedBytes = int64_t{1} << 20;
constexpr int64_t kStageRatio = 4;

// Note [Operands read before the write]
// Every write of the indexing family reads its operands (values, index tensors, masks) as if
// they were copied before the write (docs/indexing.md, "Operands that alias the written
// tensor"). prepare_index_put() copies the index tensors and the fill mask that share memory
// with self, so the values it checks are the values every pass of the write reads: a write of
// more than one pass (scatter_reduce_ without include_self: its identity, then its values)
// cannot read an index that its first pass overwrote, and no index is used unchecked.
// index_put_validated() copies overlapping values at its pass; a caller that writes self
// between prepare_index_put() and a pass must copy the values itself, before its first write.
// A staged write (Note [Staged writes]) reads everything at prepare time. Only a self that
// provably has no internal overlap is staged: its staged copy gives elements that share memory
// separate slots, and the copy back would let the last slot in row-major order win rather than
// the last write.

namespace {

bool worth_staging(const Tensor& self, const AdvancedIndex& adv) {
  if (!self.device().is_cpu()) return false;
  if (is_pending(*self.unsafe_impl(), PendingAccess::kWrite)) return false;  // the bump refuses
  const int64_t bytes = self.numel() * self.element_size();
  if (bytes == 0 || bytes > kStagedBytes || compute_numel(adv.result_shape) == 0) return false;
  // Note [Operands read before the write]: a staged copy would separate shared elements.
  if (has_internal_overlap(self.sizes(), self.strides()) != MemOverlap::kNo) return false;
  int64_t index_bytes = 0;
  for (const Tensor& idx : adv.unexpanded) {
    if (idx.defined()) index_bytes += idx.numel() * static_cast<int64_t>(sizeof(int64_t));
  }
  return index_bytes >= kStageRatio * bytes;
}

// dst = src for a staged write, on the calling thread when both are contiguous: the write's
// loop then finds the copy in its own core's cache (a copy split between cores left half the
// lines in the other core's cache and made the loop 25% slower).
void copy_staged(const Tensor& dst, const Tensor& src) {
  if (dst.is_contiguous() && src.is_contiguous()) {
    std::memcpy(dst.raw_data(), src.raw_data(),
                static_cast<size_t>(dst.numel() * dst.element_size()));
  } else {
    backend_for(dst.device()).copy(dst, src);
  }
}

}  // namespace

AdvancedIndex prepare_index_put(const Tensor& self, TensorList indices, const Tensor& values,
                                bool accumulate, bool negative_wraps, bool may_stage,
                                KnownIndices known) {
  if (!accumulate && values.numel() == 1 && values.device().is_cpu()) {
    Tensor mask = fill_mask(self, indices);
    if (mask.defined()) {
      assert_no_internal_overlap(self, "index_put_");
      AdvancedIndex adv;
      // Note [Operands read before the write]: a mask sharing memory with self is copied here.
      adv.fill_mask = may_overlap(self, mask) ? clone(mask) : std::move(mask);
      return adv;
    }
  }
  AdvancedIndex adv = make_advanced_index(self, indices, known);
  if (!is_expandable_to(values.sizes(), adv.result_shape)) {
    throw ShapeError(str("shape mismatch: value tensor of shape ", values.sizes(),
                         " cannot be broadcast to indexing result of shape ",
                         IntArrayRef(adv.result_shape),
                         "; give values that shape, or sizes of 1 (or fewer dims) to broadcast"));
  }
  if (values.dtype() != self.dtype()) {
    throw DTypeError(str("Index put requires the source and destination dtypes match, got ",
                         legacy_type_name(self.dtype()), " for the destination and ",
                         legacy_type_name(values.dtype()),
                         " for the source. Convert the values first with .to(",
                         dtype_name(self.dtype()), ")"));
  }
  // A one-element CPU value is moved to self's device: torch does so for a 0-dim one
  // (x_cuda[idx] = tensor(1.)); we also for [1]-shaped ones, where torch raises (docs/cuda.md).
  if (!(values.numel() == 1 && values.device().is_cpu())) {
    check_same_device("index_put_", self.device(), values.device());
  }
  assert_no_internal_overlap(self, "index_put_");
  // Note [Operands read before the write]: index tensors sharing memory with self are copied
  // now, so the values checked below are the ones every later pass reads.
  for (size_t p = 0; p < adv.indices.size(); ++p) {
    if (adv.indices[p].defined() && may_overlap(self, adv.unexpanded[p])) {
      adv.unexpanded[p] = clone(adv.unexpanded[p]);
      adv.indices[p] = expand_to(adv.unexpanded[p], adv.index_shape);
    }
  }
  adv.negative_wraps = negative_wraps;
  if (may_stage && worth_staging(self, adv)) {  // Note [Staged writes]
    Tensor staged = new_empty(self.sizes(), self.dtype(), self.device());
    copy_staged(staged, self);
    if (backend_for(self.device())
            .index_put_checked(staged, adv.indices, expand_to(values, adv.result_shape),
                               adv.unexpanded, IndexPutDescriptor{accumulate}, negative_wraps)) {
      adv.staged = std::move(staged);
      adv.staged_accumulate = accumulate;
      return adv;
    }
    check_index_bounds(self, adv);
    MG_INTERNAL_ASSERT(false, "index_put_checked and check_index_bounds disagree");
  }
  adv.nonnegative = check_index_bounds(self, adv);
  return adv;
}

void index_put_(const Tensor& self, TensorList indices, const Tensor& values, bool accumulate,
                KnownIndices known) {
  index_put_validated(self, prepare_index_put(self, indices, values, accumulate, true, true, known),
                      values, accumulate);
}

void index_put_validated(const Tensor& self, const AdvancedIndex& index, const Tensor& values,
                         bool accumulate, const PendingBump* bump) {
  IndexPutDescriptor desc{accumulate};
  desc.bump = bump;
  index_put_validated(self, index, values, desc);
}

void index_put_validated(const Tensor& self, const AdvancedIndex& index, const Tensor& values,
                         const IndexPutDescriptor& desc) {
  if (index.fill_mask.defined()) {
    const Scalar value = values.item();
    desc.before_write();
    if (self.numel() == 0) return;
    backend_for(self.device()).masked_fill(self, expand_to(index.fill_mask, self.sizes()), value);
    return;
  }
  if (compute_numel(index.result_shape) == 0) {
    desc.before_write();
    return;
  }
  if (index.staged.defined()) {  // Note [Staged writes]
    MG_INTERNAL_ASSERT(desc.accumulate == index.staged_accumulate &&
                           (!desc.accumulate || desc.reduce == ReduceOp::kSum),
                       "a staged write replayed with other options");
    desc.before_write();
    copy_staged(self, index.staged);
    return;
  }
  // Values sharing memory with the destination are read as if copied first (the indices were
  // copied by prepare_index_put: Note [Operands read before the write]). Copied before the
  // bump, which the kernel fires after its own temporaries (Note [Allocate before the bump]).
  Tensor v = values.device() != self.device() ? to(values, self.device())
             : may_overlap(self, values)      ? clone(values)
                                              : values;
  IndexPutDescriptor d = desc;
  d.nonnegative = index.nonnegative;
  backend_for(self.device()).index_put(self, index.indices, expand_to(v, index.result_shape), d);
  desc.before_write();  // a kernel that wrote nothing did not fire it
}

void masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value,
                  const MutationSite* bump) {
  if (mask.dtype() != kBool) {
    throw DTypeError(str("masked_fill_ only supports boolean masks, but got mask with dtype ",
                         dtype_name(mask.dtype()), "; build it with a comparison or .to(kBool)"));
  }
  check_same_device("masked_fill_", self.device(), mask.device());
  if (!is_expandable_to(mask.sizes(), self.sizes())) {
    throw ShapeError(str("masked_fill_(): the mask of shape ", mask.sizes(),
                         " does not broadcast to the tensor's shape ", self.sizes(),
                         " (an in-place op keeps the tensor's shape); give the mask that shape "
                         "or sizes of 1 in the dims to broadcast"));
  }
  check_scalar_fits(value, self.dtype(), "masked_fill_");
  assert_no_internal_overlap(self, "masked_fill_");
  Tensor m = may_overlap(self, mask) ? clone(mask) : mask;
  if (bump != nullptr)
    self.version_counter().bump(*bump, self.unsafe_impl());  // every check passed
  if (self.numel() == 0) return;
  backend_for(self.device()).masked_fill(self, expand_to(m, self.sizes()), value);
}

IndexLoop make_index_loop(const Tensor& self, const std::vector<Tensor>& indices,
                          const Tensor& dense) {
  IndexLoop loop;
  const int64_t ndim = self.dim();
  int64_t first = -1;
  int64_t last = -1;
  int64_t count = 0;
  DimVector shape;
  for (size_t p = 0; p < indices.size(); ++p) {
    if (!indices[p].defined()) continue;
    if (first < 0) first = static_cast<int64_t>(p);
    last = static_cast<int64_t>(p);
    ++count;
    shape = DimVector(indices[p].sizes());
  }
  const bool adjacent = count == 0 || last - first + 1 == count;
  auto push_self = [&](int64_t d) {
    loop.sizes.push_back(self.size(d));
    loop.self_strides.push_back(self.stride(d));
    loop.is_index_dim.push_back(0);
  };
  int64_t index_start = 0;
  auto push_index_dims = [&] {
    index_start = static_cast<int64_t>(loop.sizes.size());
    for (int64_t s : shape) {
      loop.sizes.push_back(s);
      loop.self_strides.push_back(0);
      loop.is_index_dim.push_back(1);
    }
  };
  auto indexed = [&](int64_t d) {
    return d < static_cast<int64_t>(indices.size()) && indices[static_cast<size_t>(d)].defined();
  };
  if (count == 0) {
    for (int64_t d = 0; d < ndim; ++d) push_self(d);
  } else if (adjacent) {
    for (int64_t d = 0; d < first; ++d) push_self(d);
    push_index_dims();
    for (int64_t d = last + 1; d < ndim; ++d) push_self(d);
  } else {
    push_index_dims();
    for (int64_t d = 0; d < ndim; ++d) {
      if (!indexed(d)) push_self(d);
    }
  }
  MG_INTERNAL_ASSERT(dense.sizes() == IntArrayRef(loop.sizes), "indexing kernel: operand shape ",
                     dense.sizes(), " is not the indexed shape ", IntArrayRef(loop.sizes));
  loop.dense_strides = DimVector(dense.strides());
  for (size_t p = 0; p < indices.size(); ++p) {
    const Tensor& t = indices[p];
    if (!t.defined()) continue;
    MG_INTERNAL_ASSERT(t.dtype() == kInt64 && t.sizes() == IntArrayRef(shape),
                       "indexing kernel: index tensors must be int64 and expanded to one shape");
    IndexLoop::Operand op{t, DimVector(loop.sizes.size(), 0), self.size(static_cast<int64_t>(p)),
                          self.stride(static_cast<int64_t>(p))};
    for (size_t b = 0; b < shape.size(); ++b) {
      op.strides[static_cast<size_t>(index_start) + b] = t.strides()[b];
    }
    loop.idx.push_back(std::move(op));
  }
  if (loop.sizes.empty()) {  // a 0-dim R: one element
    loop.sizes.push_back(1);
    loop.self_strides.push_back(0);
    loop.dense_strides.push_back(0);
    loop.is_index_dim.push_back(1);
    for (IndexLoop::Operand& op : loop.idx) op.strides.push_back(0);
  }
  return loop;
}

}  // namespace mutagrad::native

namespace mutagrad {

namespace {

// Whether every value of each index tensor lies in its dim of self ([-size, size) when
// negative_wraps, else [0, size)): the screen of the default checked kernels below.
bool all_indices_in_range(Backend& backend, const Tensor& self,
                          const std::vector<Tensor>& unexpanded, bool negative_wraps) {
  for (size_t p = 0; p < unexpanded.size(); ++p) {
    const Tensor& idx = unexpanded[p];
    if (!idx.defined() || idx.numel() == 0) continue;
    const int64_t size = self.size(static_cast<int64_t>(p));
    if (!backend.index_in_range(idx, negative_wraps ? -size : 0, size)) return false;
  }
  return true;
}

}  // namespace

// The default checked gather, for backends whose kernel does not check: the screen, then index().
bool Backend::index_checked(const Tensor& out, const Tensor& self,
                            const std::vector<Tensor>& indices,
                            const std::vector<Tensor>& unexpanded, bool negative_wraps) {
  if (!all_indices_in_range(*this, self, unexpanded, negative_wraps)) return false;
  index(out, self, indices);
  return true;
}

// The default checked write, for backends whose kernel does not check: the screen, then
// index_put().
bool Backend::index_put_checked(const Tensor& dst, const std::vector<Tensor>& indices,
                                const Tensor& values, const std::vector<Tensor>& unexpanded,
                                const IndexPutDescriptor& desc, bool negative_wraps) {
  if (!all_indices_in_range(*this, dst, unexpanded, negative_wraps)) return false;
  IndexPutDescriptor screened = desc;
  screened.nonnegative = false;
  index_put(dst, indices, values, screened);
  return true;
}

// The default screen, for backends without a kernel of their own: Note [Index validation on
// the device].
bool Backend::index_in_range(const Tensor& idx, int64_t lower, int64_t size) {
  const Tensor flat = native::reshape(native::contiguous(idx), {-1});
  return !native::reduce(ReduceOp::kMax, native::out_of_range_mask(flat, lower, size), {}, false)
              .item<bool>();
}

}  // namespace mutagrad
