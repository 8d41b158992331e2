// mutagrad._C: the extension module, in the manner of torch._C. Each bind_* function lives
// in the file of its family (convert.cc, bindings_print.cc, bindings_tensor.cc,
// bindings_operators.cc, bindings_ops.cc, bindings_indexing.cc, bindings_autograd.cc).
#include "python/bindings.h"

namespace mutagrad::python {

void bind_errors(py::module_& m) {
  // IndexError stays IndexError; every other mutagrad::Error (ValueError included: torch
  // raises RuntimeError for nearly all of those conditions, e.g. zeros(-1), permute(0, 0),
  // an in-place write to overlapping memory) is a RuntimeError with the message unchanged.
  // The few places where torch raises TypeError or ValueError (item() of many elements, a
  // slice step <= 0, ragged nested lists, unsupported index or value types) raise those
  // Python types directly from the bindings.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  (void)m;
}

}  // namespace mutagrad::python

PYBIND11_MODULE(_C, m) {
  using namespace mutagrad::python;
  m.doc() = "mutagrad's C++ core; use the `mutagrad` package";
  bind_errors(m);
  bind_dtypes(m);
  bind_nodes(m);
  bind_tensor(m);
  bind_operators(m);
  bind_ops(m);
  bind_indexing(m);
  bind_autograd(m);
}
