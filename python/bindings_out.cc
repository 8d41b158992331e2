// mutagrad._C._write_out: the out= step of the module functions that take out= (mutagrad/_out.py
// wraps them: mutagrad.add(a, b, out=o) computes a + b, then calls this). torch's checks, resize
// and a tracked write through autograd::write_outs (autograd/ops/out_ops.h); the resize warning
// is a Python UserWarning, issued before anything is written (an error filter leaves out as it
// was).
#include <pybind11/stl.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "autograd/ops/out_ops.h"
#include "python/bindings.h"

namespace mutagrad::python {
namespace {

// The caller's file, kept for the process (a MutationSite's file outlives the call). Guarded by
// the GIL.
const char* intern_file(const std::string& file) {
  static auto* names = new std::unordered_set<std::string>();
  return names->emplace(file).first->c_str();
}

std::string type_name(py::handle h) { return py::str(h.get_type().attr("__name__")); }

// result: a Tensor or a tuple (a return_types namedtuple) of them; out: a Tensor, or a tuple or
// list of as many; exact: per output, whether out's dtype must be the result's.
py::object write_out(const std::string& op, py::object result, py::object out,
                     const std::vector<bool>& exact, const std::string& file, int line) {
  using autograd::OutDType;
  std::vector<autograd::OutWrite> writes;
  const auto rule = [&](size_t i) {
    return i < exact.size() && exact[i] ? OutDType::kExact : OutDType::kCastable;
  };
  const bool single = py::isinstance<Tensor>(result);
  if (single) {
    if (!py::isinstance<Tensor>(out)) {
      throw py::type_error(str(op, "(): argument 'out' must be Tensor, not ", type_name(out)));
    }
    writes.push_back({out.cast<Tensor>(), result.cast<Tensor>(), rule(0)});
  } else {
    const py::tuple results = result.cast<py::tuple>();
    const bool sequence = py::isinstance<py::tuple>(out) || py::isinstance<py::list>(out);
    if (!sequence || py::len(out) != results.size()) {
      throw py::type_error(str(op, "(): argument 'out' must be a tuple of ", results.size(),
                               " Tensors, not ", type_name(out),
                               sequence ? str(" of length ", py::len(out)) : std::string()));
    }
    const py::sequence outs = out.cast<py::sequence>();
    for (size_t i = 0; i < results.size(); ++i) {
      if (!py::isinstance<Tensor>(outs[i])) {
        throw py::type_error(str(op, "(): argument 'out' must be a tuple of Tensors, but element ",
                                 i, " is ", type_name(outs[i])));
      }
      writes.push_back({outs[i].cast<Tensor>(), results[i].cast<Tensor>(), rule(i)});
    }
  }
  const auto warn = [](const std::string& message) {
    // stacklevel 2: the line that called mutagrad.<op>, above _out.py's wrapper.
    if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2) != 0) throw py::error_already_set();
  };
  autograd::write_outs(op.c_str(), writes, CallSite{intern_file(file), line}, warn);
  if (single) return out;
  const py::tuple outs(py::sequence(out).size());
  for (size_t i = 0; i < outs.size(); ++i) outs[i] = py::sequence(out)[i];
  // A namedtuple result (return_types.sort) gives the same type of the outs, as torch.
  if (py::hasattr(result, "_fields")) return result.get_type()(*outs);
  return std::move(outs);
}

}  // namespace

void bind_out(py::module_& m) {
  m.def("_write_out", &write_out, py::arg("op"), py::arg("result"), py::arg("out"),
        py::arg("exact"), py::arg("file"), py::arg("line"),
        "Writes an op's result into out= as torch (mutagrad/_out.py).");
}

}  // namespace mutagrad::python
