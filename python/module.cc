// mutagrad._C: the extension module, in the manner of torch._C. Each bind_* function lives
// in the file of its family (errors.cc, convert.cc, bindings_print.cc, bindings_tensor.cc,
// bindings_operators.cc, bindings_ops.cc, bindings_indexing.cc, bindings_device.cc,
// bindings_autograd.cc).
#include "python/bindings.h"

namespace mutagrad::python {
void bind_serialize(py::module_& m);   // bindings_serialize.cc: checkpoints
void bind_func(py::module_& m);        // bindings_func.cc: func.capture / functionalize
void bind_func_tools(py::module_& m);  // bindings_func_tools.cc: func.verify / reports
}  // namespace mutagrad::python

PYBIND11_MODULE(_C, m) {
  using namespace mutagrad::python;
  m.doc() = "mutagrad's C++ core; use the `mutagrad` package";
  m.attr("__version__") = mutagrad::version();  // version.bzl, as libmutagrad and the wheel
  bind_errors(m);
  bind_dtypes(m);
  bind_nodes(m);
  bind_tensor(m);
  bind_operators(m);
  bind_ops(m);
  bind_random(m);
  bind_math(m);
  bind_stats(m);
  bind_nn(m);
  bind_sort(m);
  bind_shape(m);
  bind_indexing(m);
  bind_device(m);  // after bind_tensor: adds Tensor.to / cuda / cpu, and the _cuda submodule
  bind_autograd(m);
  bind_optim(m);
  bind_distributed(m);
  bind_inspect(m);
  bind_module_support(m);      // after bind_tensor
  bind_out(m);                 // _write_out, for mutagrad/_out.py
  bind_serialize(m);           // mutagrad.save / load and mutagrad.safetensors
  bind_func(m);                // mutagrad.func (func/)
  bind_func_tools(m);          // after bind_func: verify, reports, pictures
  install_argument_errors(m);  // last: it wraps every function defined above
}
