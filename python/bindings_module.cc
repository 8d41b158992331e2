// What mutagrad.nn.Module and nn.Parameter need from C++ (python/src/mutagrad/nn/modules/):
// Tensor._make_subclass (a Parameter is a Python subclass of mutagrad._C.Tensor), the names of
// parameters in stale-tensor errors and the module path of the write's call site.
//
//   p = mutagrad._C.Tensor._make_subclass(Parameter, data, True)
//   mutagrad._C._nn_module._set_tensor_name(p, "fc1.weight")
//   prev = mutagrad._C._nn_module._swap_module_label("features.2 (ReLU)")
#include "autograd/tensor_names.h"
#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

// Note [Parameter is a Tensor subclass]
// A Python subclass of the pybind11 class mutagrad._C.Tensor can hold a value only if C++
// constructs it: this allocates an instance of `cls`, puts a handle of data.detach() (same
// storage and version counter, a new TensorImpl, as torch's Parameter) in it, and records it as
// the wrapper of that TensorImpl (Note [One Python object per tensor]), so every later cast of
// the tensor (param_groups, x.grad's owner, hooks) returns this object, subclass and all, while
// it lives. Its own __dict__ (a Python subclass has one) keeps attributes as usual.
py::object make_subclass(const py::type& cls, const Tensor& data, bool requires_grad) {
  const py::detail::type_info* info = py::detail::get_type_info(typeid(Tensor));
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  if (PyType_IsSubtype(type, info->type) == 0) {
    throw py::type_error(
        str("_make_subclass: cls must be a subclass of mutagrad.Tensor, got ", type->tp_name));
  }
  Tensor value = data.detach();
  value.requires_grad_(requires_grad);
  py::object obj = py::reinterpret_steal<py::object>(py::detail::make_new_instance(type));
  auto* inst = reinterpret_cast<py::detail::instance*>(obj.ptr());
  py::detail::value_and_holder v_h = inst->get_value_and_holder(info);
  v_h.value_ptr() = new Tensor(std::move(value));
  v_h.type->init_instance(inst, nullptr);  // registers it and builds the TensorHolder
  tensor_wrappers::remember(obj);
  return obj;
}

}  // namespace

void bind_module_support(py::module_& m) {
  py::object tensor = m.attr("Tensor");
  tensor.attr("_make_subclass") =
      py::cpp_function([](const py::type& cls, const Tensor& data,
                          bool requires_grad) { return make_subclass(cls, data, requires_grad); },
                       py::arg("cls"), py::arg("data"), py::arg("require_grad") = false);
  tensor.attr("_make_subclass") = py::staticmethod(tensor.attr("_make_subclass"));

  py::module_ nn = m.def_submodule("_nn_module", "support for mutagrad.nn.Module");
  nn.def(
      "_set_tensor_name",
      [](const Tensor& t, const std::string& name) { autograd::set_tensor_name(t, name); },
      py::arg("tensor"), py::arg("name"),
      "Names t's memory in stale-tensor errors (Note [Tensor names]); '' removes the name.");
  nn.def(
      "_tensor_name",
      [](const Tensor& t) -> py::object {
        std::optional<std::string> name = autograd::tensor_name_of(t);
        return name ? py::object(py::str(*name)) : py::object(py::none());
      },
      py::arg("tensor"));
  nn.def("_swap_module_label", &swap_module_label, py::arg("label"),
         "Sets the calling thread's current module label (a str or None) and returns the "
         "previous one (Note [The module path of a write]).");
  nn.def("_set_package_dir", &set_package_dir, py::arg("path"));
}

}  // namespace mutagrad::python
