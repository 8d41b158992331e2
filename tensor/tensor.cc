#include "tensor/tensor.h"

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tensor/read_hook.h"
#include "tensor/shape.h"

namespace mutagrad {

int64_t Tensor::size(int64_t dim) const {
  return impl_->sizes()[static_cast<size_t>(wrap_dim(dim, this->dim(), "size"))];
}

int64_t Tensor::stride(int64_t dim) const {
  return impl_->strides()[static_cast<size_t>(wrap_dim(dim, this->dim(), "stride"))];
}

Scalar Tensor::item() const {
  notify_host_read(*impl_, "item");  // Note [Read hook]
  if (numel() != 1) {
    throw ValueError(str("item(): a Tensor with ", numel(), " elements (shape ", sizes(),
                         ") cannot be converted to a Scalar; only one-element tensors can. "
                         "Index or reduce it first"));
  }
  if (!device().is_cpu()) {  // one explicit device-to-host copy of the element
    Tensor host = empty({}, dtype());
    native::copy_(host, native::reshape(*this, {}));
    return host.item();
  }
  return dispatch_dtype(dtype(), [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    return Scalar(*static_cast<const T*>(impl_->data()));
  });
}

void Tensor::throw_device_access(const char* accessor) const {
  throw DeviceError(str(accessor, "(): the tensor is on ", device(),
                        "; host code cannot read device memory. Copy it to the CPU first "
                        "(.cpu() or .to(kCPU)); see Note [Host code never reads device memory]"));
}

}  // namespace mutagrad
