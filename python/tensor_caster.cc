// The table of Note [One Python object per tensor] (python/tensor_caster.h).
#include "python/tensor_caster.h"

#include <unordered_map>

namespace mutagrad::python::tensor_wrappers {
namespace {

namespace py = pybind11;

// TensorImpl -> the handle inside its Python wrapper. Never destroyed: wrappers may die during
// interpreter shutdown, after static destructors ran.
std::unordered_map<const TensorImpl*, const Tensor*>& table() {
  static auto* t = new std::unordered_map<const TensorImpl*, const Tensor*>();
  return *t;
}

const py::detail::type_info* tensor_type() {
  static const py::detail::type_info* info = py::detail::get_type_info(typeid(Tensor));
  return info;
}

}  // namespace

py::handle find(const Tensor& t) {
  if (!t.defined()) return py::handle();
  auto& wrappers = table();
  const auto it = wrappers.find(t.unsafe_impl());
  if (it == wrappers.end()) return py::handle();
  // A live instance at that address (a new reference), and still a handle of this TensorImpl.
  py::handle obj = py::detail::find_registered_python_instance(
      const_cast<Tensor*>(it->second), tensor_type());  // NOLINT: pybind11 takes void*
  if (obj && it->second->unsafe_impl() == t.unsafe_impl()) return obj;
  obj.dec_ref();
  wrappers.erase(it);
  return py::handle();
}

void remember(py::handle obj) {
  auto* inst = reinterpret_cast<py::detail::instance*>(obj.ptr());
  const auto* value =
      static_cast<const Tensor*>(inst->get_value_and_holder(tensor_type()).value_ptr());
  if (value == nullptr || !value->defined()) return;
  table()[value->unsafe_impl()] = value;
}

void forget(const Tensor* value) {
  if (value == nullptr || !value->defined()) return;
  auto& wrappers = table();
  const auto it = wrappers.find(value->unsafe_impl());
  if (it != wrappers.end() && it->second == value) wrappers.erase(it);
}

}  // namespace mutagrad::python::tensor_wrappers
