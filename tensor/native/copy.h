// Raw copy, fill and conversion ops (no autograd). The writers bump the version only when given
// a MutationSite: see Note [In-place writes bump after validation] in tensor/native/pointwise.h.
//
//   native::copy_(dst, src);     // broadcasting src to dst, converting dtype, overlap-safe
//   native::fill_(dst, 0.5);
//   Tensor c = native::contiguous(x);
#pragma once

#include "tensor/tensor.h"

namespace mutagrad::native {

// dst = src: src broadcasts to dst's shape, dtypes convert, any strides. When src overlaps
// dst's memory, the result is as if src were copied first. ShapeError if src does not
// broadcast; ValueError if dst has elements that share memory (an expanded tensor).
void copy_(const Tensor& dst, const Tensor& src, const MutationSite* bump = nullptr);
// Every element of dst = value (converted to dst's dtype). Same internal-overlap rule;
// ValueError when the value does not fit dst's dtype (check_scalar_fits).
void fill_(const Tensor& dst, const Scalar& value, const MutationSite* bump = nullptr);
// A contiguous copy with the same values.
Tensor clone(const Tensor& self);
// self when already contiguous, a contiguous copy otherwise.
Tensor contiguous(const Tensor& self);
// self when already of `dtype`, a converted copy otherwise.
Tensor to(const Tensor& self, ScalarType dtype);
// self when already on `device` (and of `dtype`, when given), else a contiguous copy there:
// the transfer between the CPU and a CUDA device is the device backend's copy.
Tensor to(const Tensor& self, Device device, std::optional<ScalarType> dtype = std::nullopt);

// `self` in the dtype its arithmetic kernels compute in (Note [Reduced dtypes], tensor/dtype.h):
// float16/bfloat16 as float32, uint8/int8/int16 as int32; self itself for the other dtypes.
inline Tensor to_opmath(const Tensor& self) { return native::to(self, opmath_dtype(self.dtype())); }

// `self` converted to `dtype`, in the form an arithmetic kernel reads it: through `dtype`
// itself first when that is a reduced dtype, so a wider operand wraps or rounds as PyTorch's
// operand conversion does (an int32 0-dim -2 meeting a uint8 tensor is 254), then to_opmath.
inline Tensor to_compute(const Tensor& self, ScalarType dtype) {
  return to_opmath(native::to(self, dtype));
}

// Note [Borrowed operands]
// A Tensor handle's copy costs two atomic reference-count updates (the copy, then its
// destruction). An element-wise op's operand went through conversions that each return their
// input when there is nothing to do (to the op's device, its dtype, its opmath dtype, its
// shape), and its output through OpmathOutput: a tiny `a + b` made ten handle copies, twenty
// locked instructions, which were 45 % of binary_impl's own samples. MaybeOwned borrows its
// input when a step changes nothing and owns the new tensor when it does:
//
//   const MaybeOwned c = to_compute_maybe(a, kFloat32);  // borrows a when a is float32 already
//   const MaybeOwned e = expand_to_maybe(*c, shape);      // may point into c: c must outlive e
//   backend.binary(op, out, *e, ...);
//
// A borrowed tensor must outlive the MaybeOwned, and a MaybeOwned that another one borrows from
// must not move.
class MaybeOwned {
 public:
  static MaybeOwned borrowed(const Tensor& t) { return MaybeOwned(&t, Tensor()); }
  static MaybeOwned borrowed(const Tensor&& t) = delete;  // a temporary would dangle
  static MaybeOwned owned(Tensor t) { return MaybeOwned(nullptr, std::move(t)); }
  // Not copied or moved (returned by value only as a prvalue): one that another borrows from
  // must stay where it is.
  MaybeOwned(const MaybeOwned&) = delete;
  MaybeOwned& operator=(const MaybeOwned&) = delete;
  const Tensor& operator*() const { return borrowed_ != nullptr ? *borrowed_ : owned_; }
  const Tensor* operator->() const { return &**this; }

 private:
  MaybeOwned(const Tensor* borrowed, Tensor owned)
      : borrowed_(borrowed), owned_(std::move(owned)) {}
  const Tensor* borrowed_;
  Tensor owned_;
};

// to(self, dtype) and to_compute(self, dtype), borrowing self when it is the result.
inline MaybeOwned to_maybe(const Tensor& self, ScalarType dtype) {
  return self.dtype() == dtype ? MaybeOwned::borrowed(self)
                               : MaybeOwned::owned(native::to(self, dtype));
}
inline MaybeOwned to_compute_maybe(const Tensor& self, ScalarType dtype) {
  if (self.dtype() == dtype && opmath_dtype(dtype) == dtype) return MaybeOwned::borrowed(self);
  return MaybeOwned::owned(to_compute(self, dtype));
}
MaybeOwned to_maybe(const Tensor&& self, ScalarType dtype) = delete;
MaybeOwned to_compute_maybe(const Tensor&& self, ScalarType dtype) = delete;

// Where an arithmetic kernel writes a result of `out`'s dtype: `out` itself when that dtype has
// kernels, else a fresh tensor of its opmath dtype that finish() rounds into `out`. `out` must
// outlive it (it is borrowed: Note [Borrowed operands]).
//
//   OpmathOutput k(out);
//   backend.binary(op, k.get(), to_opmath(a), to_opmath(b));
//   k.finish();
class OpmathOutput {
 public:
  explicit OpmathOutput(const Tensor& out);
  explicit OpmathOutput(const Tensor&& out) = delete;  // a temporary would dangle
  const Tensor& get() const { return scratch_.defined() ? scratch_ : out_; }
  void finish() const;

 private:
  const Tensor& out_;
  Tensor scratch_;  // undefined when out_ has kernels
};

// ValueError with PyTorch's message if several elements of `t` share a memory location.
void assert_no_internal_overlap(const Tensor& t, const char* op);
// True when the two tensors' memory ranges intersect (a conservative test on bounds).
bool may_overlap(const Tensor& a, const Tensor& b);

}  // namespace mutagrad::native
