#include "tensor/tensor.h"

#include "tensor/shape.h"

namespace mutagrad {

int64_t Tensor::size(int64_t dim) const {
  return impl_->sizes()[static_cast<size_t>(wrap_dim(dim, this->dim(), "size"))];
}

int64_t Tensor::stride(int64_t dim) const {
  return impl_->strides()[static_cast<size_t>(wrap_dim(dim, this->dim(), "stride"))];
}

Scalar Tensor::item() const {
  if (numel() != 1) {
    throw ValueError(str("item(): a Tensor with ", numel(), " elements (shape ", sizes(),
                         ") cannot be converted to a Scalar; only one-element tensors can. "
                         "Index or reduce it first"));
  }
  if (!device().is_cpu()) {
    throw DeviceError(str("item(): the tensor is on ", device(), "; copy it to the CPU first"));
  }
  return dispatch_dtype(dtype(), [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    return Scalar(*static_cast<const T*>(impl_->data()));
  });
}

}  // namespace mutagrad
