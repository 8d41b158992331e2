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

// ValueError with PyTorch's message if several elements of `t` share a memory location.
void assert_no_internal_overlap(const Tensor& t, const char* op);
// True when the two tensors' memory ranges intersect (a conservative test on bounds).
bool may_overlap(const Tensor& a, const Tensor& b);

}  // namespace mutagrad::native
