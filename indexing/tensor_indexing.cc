// The indexing members of Tensor (declared in tensor/tensor.h) and the proxy of x[{...}].
// See Note [Tensor methods across layers] in docs/notes/layers.md.
#include "indexing/get_set.h"
#include "indexing/proxy.h"
#include "tensor/tensor.h"

namespace mutagrad {

Tensor Tensor::index(ArrayRef<indexing::TensorIndex> indices) const {
  return indexing::get_item(*this, indices);
}

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return indexing::get_item(*this,
                            ArrayRef<indexing::TensorIndex>(indices.begin(), indices.size()));
}

Tensor& Tensor::set_item_(ArrayRef<indexing::TensorIndex> indices, const Tensor& value,
                          CallSite site) {
  indexing::set_item_(*this, indices, value, site);
  return *this;
}

Tensor& Tensor::set_item_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value,
                          CallSite site) {
  indexing::set_item_(*this, ArrayRef<indexing::TensorIndex>(indices.begin(), indices.size()),
                      value, site);
  return *this;
}

Tensor& Tensor::set_item_(ArrayRef<indexing::TensorIndex> indices, const Scalar& value,
                          CallSite site) {
  indexing::set_item_(*this, indices, value, site);
  return *this;
}

Tensor& Tensor::set_item_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value,
                          CallSite site) {
  indexing::set_item_(*this, ArrayRef<indexing::TensorIndex>(indices.begin(), indices.size()),
                      value, site);
  return *this;
}

Tensor& Tensor::index_put_(TensorList indices, const Tensor& values, bool accumulate,
                           CallSite site) {
  indexing::index_put_(*this, indices, values, accumulate, site);
  return *this;
}

indexing::TensorIndexProxy Tensor::operator[](
    std::initializer_list<indexing::TensorIndex> indices) {
  return indexing::TensorIndexProxy(this, indices);
}

namespace indexing {

TensorIndexProxy&& TensorIndexProxy::operator=(ValueAt<Tensor> v) && {
  set_item_(*self_, indices_, v.value, v.site);
  return std::move(*this);
}

TensorIndexProxy&& TensorIndexProxy::operator=(ValueAt<Scalar> v) && {
  set_item_(*self_, indices_, v.value, v.site);
  return std::move(*this);
}

Tensor TensorIndexProxy::get() const { return get_item(*self_, indices_); }

}  // namespace indexing
}  // namespace mutagrad
