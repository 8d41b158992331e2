// Raw copy, fill and conversion ops: validation, broadcasting and overlap handling, then the
// device's backend. See tensor/native/copy.h.
#include "tensor/native/copy.h"

#include <algorithm>

#include "tensor/backend.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad::native {
namespace {

// [first byte, one past the last byte) that `t` can touch; empty tensors touch nothing.
std::pair<const char*, const char*> byte_range(const Tensor& t) {
  const char* begin = static_cast<const char*>(t.unsafe_impl()->data());
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.sizes()[d] - 1) * t.strides()[d];
  return {begin, begin + (last + 1) * t.element_size()};
}

bool same_geometry(const Tensor& a, const Tensor& b) {
  return a.unsafe_impl()->data() == b.unsafe_impl()->data() && a.dtype() == b.dtype() &&
         a.sizes() == b.sizes() && a.strides() == b.strides();
}

// The backend that runs a copy between two devices: the non-CPU one when they differ.
Backend& copy_backend(const Tensor& dst, const Tensor& src) {
  return backend_for(dst.device().is_cpu() ? src.device() : dst.device());
}

// A copy between the CPU and a device moves one contiguous block of the source's dtype (Note
// [Transfers] in cuda/cuda_backend.cc); the device-side block it would otherwise allocate in
// the backend is made here, by the caller, before the write's bump: a device source that is not
// contiguous is made contiguous on its device, a CPU source whose destination is not a
// contiguous block of its dtype is moved to the device first (the backend then copies on it).
Tensor stage_transfer(const Tensor& dst, const Tensor& src) {
  if (dst.device() == src.device()) return src;
  if (dst.device().is_cpu())
    return src.device().is_cpu() || src.is_contiguous() ? src : contiguous(src);
  if (!src.device().is_cpu()) return src;
  if (dst.is_contiguous() && dst.dtype() == src.dtype()) return src;
  return to(src, dst.device());
}

}  // namespace

void assert_no_internal_overlap(const Tensor& t, const char* op) {
  if (has_internal_overlap(t.sizes(), t.strides()) == MemOverlap::kYes) {
    throw ValueError(str(op,
                         "(): unsupported operation: more than one element of the written-to "
                         "tensor refers to a single memory location. Please clone() the tensor "
                         "before performing the operation."));
  }
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.numel() == 0 || b.numel() == 0) return false;
  if (!a.storage().is_same(b.storage())) return false;
  auto ra = byte_range(a), rb = byte_range(b);
  return ra.first < rb.second && rb.first < ra.second;
}

void copy_(const Tensor& dst, const Tensor& src, const MutationSite* bump) {
  DimVector shape = broadcast_shapes(dst.sizes(), src.sizes(), "copy_");
  if (IntArrayRef(shape) != dst.sizes()) {
    throw ShapeError(str("copy_(): the source of shape ", src.sizes(),
                         " cannot be broadcast to the destination's shape ", dst.sizes(),
                         "; the source needs at most as many dims as the destination and sizes "
                         "equal to the destination's or 1"));
  }
  assert_no_internal_overlap(dst, "copy_");
  // Every temporary before the bump (Note [In-place writes bump after validation]).
  Tensor source = src;
  const bool write = dst.numel() > 0 && !same_geometry(dst, src);  // not a copy onto itself
  if (write) {
    if (may_overlap(dst, src)) source = clone(src);  // as if src were read first
    if (!source.sizes().equals(dst.sizes())) source = expand(source, dst.sizes());
    source = stage_transfer(dst, source);
  }
  if (bump != nullptr) dst.version_counter().bump(*bump, dst.unsafe_impl());  // every check passed
  if (write) copy_backend(dst, source).copy(dst, source);
}

void fill_(const Tensor& dst, const Scalar& value, const MutationSite* bump) {
  const char* op = bump != nullptr && bump->op != nullptr ? bump->op : "fill_";
  check_scalar_fits(value, dst.dtype(), op);
  assert_no_internal_overlap(dst, op);
  if (bump != nullptr) dst.version_counter().bump(*bump, dst.unsafe_impl());  // every check passed
  if (dst.numel() == 0) return;
  backend_for(dst.device()).fill(dst, value);
}

Tensor clone(const Tensor& self) {
  Tensor out = empty(self.sizes(), TensorOptions(self.dtype()).device(self.device()));
  if (self.numel() > 0) backend_for(self.device()).copy(out, self);
  return out;
}

Tensor contiguous(const Tensor& self) { return self.is_contiguous() ? self : clone(self); }

Tensor to(const Tensor& self, ScalarType dtype) {
  if (self.dtype() == dtype) return self;
  Tensor out = empty(self.sizes(), TensorOptions(dtype).device(self.device()));
  if (self.numel() > 0) backend_for(self.device()).copy(out, self);
  return out;
}

OpmathOutput::OpmathOutput(const Tensor& out) : out_(out) {
  if (!has_kernels(out.dtype())) {
    scratch_ = empty(out.sizes(), TensorOptions(opmath_dtype(out.dtype())).device(out.device()));
  }
}

void OpmathOutput::finish() const {
  if (scratch_.defined() && out_.numel() > 0) backend_for(out_.device()).copy(out_, scratch_);
}

Tensor to(const Tensor& self, Device device, std::optional<ScalarType> dtype) {
  const ScalarType dt = dtype.value_or(self.dtype());
  if (self.device() == device && self.dtype() == dt) return self;
  Tensor out = empty(self.sizes(), TensorOptions(dt).device(device));
  if (self.numel() > 0) copy_backend(out, self).copy(out, self);
  return out;
}

}  // namespace mutagrad::native
