// mutagrad._C._func: func::capture, the Graph IR and functionalize (func/), for
// python/src/mutagrad/func/__init__.py.
#include <pybind11/stl.h>

#include "func/func.h"
#include "python/bindings.h"

namespace mutagrad::python {

namespace {

std::vector<Tensor> tensors_of(const py::args& args) {
  std::vector<Tensor> out;
  for (const py::handle& a : args) out.push_back(a.cast<Tensor>());
  return out;
}

// A Python callable as a func::Program: a Tensor result is a list of one.
func::Program program_of(py::function fn) {
  return [fn = std::move(fn)](const std::vector<Tensor>& inputs) {
    py::tuple args(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) args[i] = py::cast(inputs[i]);
    py::object result = fn(*args);
    std::vector<Tensor> out;
    if (py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result)) {
      for (const py::handle& r : result) out.push_back(r.cast<Tensor>());
    } else {
      out.push_back(result.cast<Tensor>());
    }
    return out;
  };
}

func::Remove remove_of(const std::string& remove) {
  if (remove == "mutations") return func::Remove::kMutations;
  if (remove == "mutations_and_views") return func::Remove::kMutationsAndViews;
  throw ValueError(
      str("functionalize(): remove must be \"mutations\" or "
          "\"mutations_and_views\", got \"",
          remove, "\""));
}

}  // namespace

void bind_func(py::module_& m) {
  py::module_ f = m.def_submodule("_func", "func::capture and func::functionalize");
  static py::exception<func::CaptureError> capture_error(f, "CaptureError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const func::CaptureError& e) {
      // .op names the op refused (Note [Naming an uncovered op] in func/capture.cc).
      py::object error = py::reinterpret_borrow<py::object>(capture_error)(e.what());
      error.attr("op") = e.op();
      PyErr_SetObject(capture_error.ptr(), error.ptr());
    }
  });
  py::class_<func::Graph>(f, "Graph")
      .def_property_readonly("code", &func::Graph::code)
      .def("num_inplace", &func::Graph::num_inplace)
      .def("ops",
           [](const func::Graph& g) {
             std::vector<std::string> ops;
             for (const func::Node& n : g.nodes) ops.push_back(n.op);
             return ops;
           })
      .def(
          "functionalize",
          [](const func::Graph& g, const std::string& remove) {
            return func::functionalize(g, remove_of(remove));
          },
          py::arg("remove") = "mutations")
      .def_property_readonly("outputs", [](const func::Graph& g) { return g.outputs; })
      .def_property_readonly("constants", [](const func::Graph& g) { return g.constants; })
      .def("__call__", [](const func::Graph& g, py::args args) { return g(tensors_of(args)); });
  // Malformed code is a Python ValueError (the argument's value), as Python's own parsers say.
  f.def(
      "parse",
      [](const std::string& code, const std::map<int64_t, Tensor>& constants) {
        try {
          return func::parse_graph(code, constants);
        } catch (const ValueError& e) {
          throw py::value_error(e.what());
        }
      },
      py::arg("code"), py::arg("constants") = std::map<int64_t, Tensor>{});
  f.def("capture", [](py::function fn, py::args inputs) {
    return func::capture(program_of(std::move(fn)), tensors_of(inputs));
  });
}

}  // namespace mutagrad::python
