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

// Where an arithmetic kernel writes a result of `out`'s dtype: `out` itself when that dtype has
// kernels, else a fresh tensor of its opmath dtype that finish() rounds into `out`.
//
//   OpmathOutput k(out);
//   backend.binary(op, k.get(), to_opmath(a), to_opmath(b));
//   k.finish();
class OpmathOutput {
 public:
  explicit OpmathOutput(const Tensor& out);
  const Tensor& get() const { return kernel_out_; }
  void finish() const;

 private:
  Tensor out_;
  Tensor kernel_out_;
};

// ValueError with PyTorch's message if several elements of `t` share a memory location.
void assert_no_internal_overlap(const Tensor& t, const char* op);
// True when the two tensors' memory ranges intersect (a conservative test on bounds).
bool may_overlap(const Tensor& a, const Tensor& b);

}  // namespace mutagrad::native
