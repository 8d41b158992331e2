// One Python object per tensor: the pybind11 caster of mutagrad::Tensor returns the Python
// object that already wraps the same TensorImpl, if one is alive, as torch does.
//
//   v = x.narrow(0, 1, 2)
//   v._base is x           # True: the base's own object
//   x.grad is x.grad       # True
//
// Included by python/bindings.h, before any binding casts a Tensor (every translation unit
// must see this specialization, or the One Definition Rule breaks).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "tensor/tensor.h"

namespace mutagrad::python {

// Note [One Python object per tensor]
// torch keeps a PyObject slot in each TensorImpl, so `v._base is x` and `x.grad is x.grad`.
// Our Tensor is a handle, and pybind11 would wrap a fresh copy of the handle at every return.
// So the caster keeps a table TensorImpl* -> the Tensor inside the Python object that wraps it
// (owned wrappers only: made by copying or moving a handle). A cast first looks there; the
// entry is trusted only while pybind11 still has a live instance at that address whose handle
// points to the same TensorImpl (so an address reused after a death never returns a wrong
// object). The table does not keep the object alive (as torch's slot, a dead wrapper is made
// again at the next cast; attributes of the old one are not kept). The holder's deleter removes
// the entry when the object dies. All of it runs with the GIL held.
namespace tensor_wrappers {
// A new reference to the live Python object wrapping t's TensorImpl, or a null handle.
pybind11::handle find(const Tensor& t);
// Records `obj`, a Python Tensor object that owns its handle, as the wrapper of its TensorImpl.
void remember(pybind11::handle obj);
// `value` (the handle inside a dying Python object) no longer wraps its TensorImpl.
void forget(const Tensor* value);
}  // namespace tensor_wrappers

// The holder of mutagrad._C.Tensor objects (bindings_tensor.cc): forgets the wrapper on death.
struct TensorWrapperDeleter {
  void operator()(Tensor* value) const {
    tensor_wrappers::forget(value);
    delete value;
  }
};
using TensorHolder = std::unique_ptr<Tensor, TensorWrapperDeleter>;

}  // namespace mutagrad::python

namespace pybind11::detail {

template <>
class type_caster<mutagrad::Tensor> : public type_caster_base<mutagrad::Tensor> {
  using Base = type_caster_base<mutagrad::Tensor>;

 public:
  static handle cast(const mutagrad::Tensor& src, return_value_policy policy, handle parent) {
    if (handle found = mutagrad::python::tensor_wrappers::find(src)) return found;
    if (policy == return_value_policy::automatic ||
        policy == return_value_policy::automatic_reference) {
      policy = return_value_policy::copy;
    }
    return remember(Base::cast(&src, policy, parent), policy);
  }
  static handle cast(mutagrad::Tensor&& src, return_value_policy /*policy*/, handle parent) {
    if (handle found = mutagrad::python::tensor_wrappers::find(src)) return found;
    return remember(Base::cast(&src, return_value_policy::move, parent), return_value_policy::move);
  }
  static handle cast(const mutagrad::Tensor* src, return_value_policy policy, handle parent) {
    if (src != nullptr) {
      if (handle found = mutagrad::python::tensor_wrappers::find(*src)) return found;
    }
    if (policy == return_value_policy::automatic) policy = return_value_policy::take_ownership;
    return remember(Base::cast(src, policy, parent), policy);
  }

 private:
  // Only objects that own their handle are remembered (a reference wrapper may outlive it).
  static handle remember(handle obj, return_value_policy policy) {
    if (obj && (policy == return_value_policy::copy || policy == return_value_policy::move ||
                policy == return_value_policy::take_ownership)) {
      mutagrad::python::tensor_wrappers::remember(obj);
    }
    return obj;
  }
};

}  // namespace pybind11::detail
