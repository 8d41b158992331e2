// mutagrad._C autograd entry points: grad/backward, gradcheck, and the functional transforms
// (vjp, jvp, vhp, hvp, jacobian, hessian) over Python callables. mutagrad/autograd/*.py adapts
// them to torch's signatures and return conventions.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <vector>

#include "python/bindings.h"

namespace mutagrad::python {
namespace {

using autograd::VariableList;

VariableList tensors_from(const py::list& items) {
  VariableList out;
  for (py::handle h : items) out.push_back(optional_tensor(h));
  return out;
}

py::list to_py(const VariableList& ts) {
  py::list out;
  for (const Tensor& t : ts) out.append(wrap_tensor(t));
  return out;
}

// A Python callable f(*inputs) -> Tensor | tuple of Tensors as a TensorFunction.
autograd::TensorFunction as_function(py::function fn) {
  return [fn](const VariableList& inputs) -> VariableList {
    py::tuple args(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) args[i] = py::cast(inputs[i]);
    py::object r = fn(*args);
    VariableList out;
    if (py::isinstance<Tensor>(r)) {
      out.push_back(r.cast<Tensor>());
    } else {
      for (py::handle h : r) out.push_back(h.cast<Tensor>());
    }
    return out;
  };
}

py::tuple functional_result(const autograd::FunctionalResult& r) {
  return py::make_tuple(to_py(r.outputs), to_py(r.result));
}

}  // namespace

void bind_autograd(py::module_& m) {
  m.def("_autograd_grad",
        [](const py::list& outputs, const py::list& inputs, const py::list& grad_outputs,
           bool retain_graph, bool create_graph, bool allow_unused) {
          VariableList outs = tensors_from(outputs), ins = tensors_from(inputs),
                       gos = tensors_from(grad_outputs);
          return to_py(autograd::grad(outs, ins, gos, retain_graph, create_graph, allow_unused));
        });
  m.def("_autograd_backward", [](const py::list& tensors, const py::list& grad_tensors,
                                 bool retain_graph, bool create_graph) {
    VariableList outs = tensors_from(tensors), gos = tensors_from(grad_tensors);
    autograd::backward(outs, gos, retain_graph, create_graph);
  });
  m.def("_gradcheck", [](py::function fn, const py::list& inputs, double eps, double atol,
                         double rtol, bool raise_exception, bool second_order) {
    autograd::GradcheckOptions options;
    options.eps = eps;
    options.atol = atol;
    options.rtol = rtol;
    VariableList ins = tensors_from(inputs);
    autograd::GradcheckResult r = second_order
                                      ? autograd::gradgradcheck(as_function(fn), ins, options)
                                      : autograd::gradcheck(as_function(fn), ins, options);
    if (!r.ok() && raise_exception) throw py::value_error("gradcheck failed:\n" + r.report());
    return r.ok();
  });

  // Functional transforms: each returns (outputs, result) as lists; jacobian/hessian return
  // a list of lists ([output][input] for jacobian, [input][input] for hessian).
  m.def("_vjp", [](py::function fn, const py::list& inputs, const py::list& v, bool create_graph) {
    return functional_result(
        autograd::vjp(as_function(fn), tensors_from(inputs), tensors_from(v), create_graph));
  });
  m.def("_jvp", [](py::function fn, const py::list& inputs, const py::list& v, bool create_graph) {
    return functional_result(
        autograd::jvp(as_function(fn), tensors_from(inputs), tensors_from(v), create_graph));
  });
  m.def("_vhp", [](py::function fn, const py::list& inputs, const py::list& v, bool create_graph) {
    return functional_result(
        autograd::vhp(as_function(fn), tensors_from(inputs), tensors_from(v), create_graph));
  });
  m.def("_hvp", [](py::function fn, const py::list& inputs, const py::list& v, bool create_graph) {
    return functional_result(
        autograd::hvp(as_function(fn), tensors_from(inputs), tensors_from(v), create_graph));
  });
  m.def("_jacobian", [](py::function fn, const py::list& inputs, bool create_graph) {
    py::list out;
    for (const VariableList& row :
         autograd::jacobian(as_function(fn), tensors_from(inputs), create_graph)) {
      out.append(to_py(row));
    }
    return out;
  });
  m.def("_hessian", [](py::function fn, const py::list& inputs, bool create_graph) {
    py::list out;
    for (const VariableList& row :
         autograd::hessian(as_function(fn), tensors_from(inputs), create_graph)) {
      out.append(to_py(row));
    }
    return out;
  });
}

}  // namespace mutagrad::python
