// mutagrad._C: the extension module, in the manner of torch._C. Each bind_* function lives
// in the file of its family (convert.cc, bindings_tensor.cc, bindings_ops.cc,
// bindings_indexing.cc, bindings_autograd.cc).
#include "python/bindings.h"

namespace mutagrad::python {

void bind_errors(py::module_& m) {
  // IndexError stays IndexError and ValueError stays ValueError (torch raises those for the
  // same conditions); every other mutagrad::Error is a RuntimeError with the message unchanged.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
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
  bind_tensor(m);
  bind_ops(m);
  bind_indexing(m);
  bind_autograd(m);
}
