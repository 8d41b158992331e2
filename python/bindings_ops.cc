// Module-level functions of mutagrad._C: factories (tensor, zeros, ones, ...; device= as
// torch; the random ones are in bindings_random.cc), math functions, where/matmul,
// unbind/split/chunk and grad mode.
#include <pybind11/stl.h>

#include "cuda/cuda.h"
#include "python/bindings.h"

namespace mutagrad::python {
namespace {

Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

ScalarType dtype_or(py::handle dtype, ScalarType fallback) {
  return to_dtype(dtype).value_or(fallback);
}

// A factory taking *sizes, dtype=None, device=None, requires_grad=False.
template <typename F>
void def_sized(py::module_& m, const char* name, F make) {
  m.def(
      name,
      [make, name](py::args sizes, py::object dtype, py::object device, bool requires_grad) {
        TensorOptions options = TensorOptions(dtype_or(dtype, default_dtype()))
                                    .device(to_device(device, name).value_or(kCPU));
        return finish(make(sizes_from_args(sizes, name), options), requires_grad);
      },
      py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
}

// A *_like factory taking (other, dtype=None, device=None, requires_grad=False): other's
// sizes, and its dtype and device unless given.
template <typename F>
void def_like(py::module_& m, const char* name, F make) {
  m.def(
      name,
      [make, name](const Tensor& other, py::object dtype, py::object device, bool requires_grad) {
        TensorOptions options = TensorOptions(to_dtype(dtype).value_or(other.dtype()))
                                    .device(to_device(device, name).value_or(other.device()));
        return finish(make(other.sizes(), options), requires_grad);
      },
      py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
}

py::object other_or_tensor(py::handle a, py::handle b, const char* method) {
  if (!py::isinstance<Tensor>(a)) {
    throw py::type_error(str(method, "(): the first argument must be a Tensor"));
  }
  return a.attr(method)(b);
}

py::tuple to_py_tuple(const std::vector<Tensor>& ts) {
  py::tuple out(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) out[i] = py::cast(ts[i]);
  return out;
}

}  // namespace

uint64_t seed_bits(py::handle seed, const char* fn) {
  // As torch: any int in [-2**63, 2**64 - 1], a negative one taken modulo 2**64.
  if (!PyLong_Check(seed.ptr()) && !PyFloat_Check(seed.ptr()) && !PyIndex_Check(seed.ptr())) {
    throw py::type_error(str(fn, "(): argument 'seed' must be an int, not ",
                             std::string(py::str(seed.get_type().attr("__name__")))));
  }
  py::int_ value(py::reinterpret_borrow<py::object>(seed));
  uint64_t bits = PyLong_AsUnsignedLongLong(value.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow != 0) {
      throw IntOverflow(
          str(int_overflow_message(value), "; a seed is an int in [-2**63, 2**64 - 1]"));
    }
    bits = static_cast<uint64_t>(v);
  }
  return bits;
}

void bind_ops(py::module_& m) {
  m.def(
      "tensor",
      [](py::handle data, py::object dtype, py::object device, bool requires_grad) {
        Tensor out = tensor_from_data(data, to_dtype(dtype));
        // Built on the host, then copied to the device in one transfer.
        if (auto d = to_device(device, "tensor")) out = native::to(out, *d);
        return finish(out, requires_grad);
      },
      py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  def_sized(m, "zeros", [](IntArrayRef s, TensorOptions o) { return zeros(s, o); });
  def_sized(m, "ones", [](IntArrayRef s, TensorOptions o) { return ones(s, o); });
  def_sized(m, "empty", [](IntArrayRef s, TensorOptions o) { return empty(s, o); });
  m.def(
      "full",
      [](py::handle size, py::handle value, py::object dtype, py::object device,
         bool requires_grad) {
        return finish(full(sizes_from(size, "full"), to_scalar(value), to_dtype(dtype),
                           to_device(device, "full").value_or(kCPU)),
                      requires_grad);
      },
      py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def(
      "arange",
      [](py::handle start, py::handle end, py::handle step, py::object dtype, py::object device,
         bool requires_grad) {
        Device d = to_device(device, "arange").value_or(kCPU);
        Tensor out = end.is_none() ? arange(to_scalar(start), to_dtype(dtype), d)
                                   : arange(to_scalar(start), to_scalar(end), to_scalar(step),
                                            to_dtype(dtype), d);
        return finish(out, requires_grad);
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1, py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  def_like(m, "zeros_like", [](IntArrayRef s, TensorOptions o) { return zeros(s, o); });
  def_like(m, "ones_like", [](IntArrayRef s, TensorOptions o) { return ones(s, o); });
  def_like(m, "empty_like", [](IntArrayRef s, TensorOptions o) { return empty(s, o); });
  m.def(
      "full_like",
      [](const Tensor& other, py::handle value, py::object dtype, py::object device,
         bool requires_grad) {
        return finish(full(other.sizes(), to_scalar(value), to_dtype(dtype).value_or(other.dtype()),
                           to_device(device, "full_like").value_or(other.device())),
                      requires_grad);
      },
      py::arg("input"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  // A handle, not py::array: pybind11's caster would import NumPy (Note [NumPy is optional]).
  m.def(
      "from_numpy",
      [](py::handle a) {
        if (!is_numpy_array(a)) {
          throw py::type_error(
              str("from_numpy(): argument 'ndarray' (position 1) must be "
                  "numpy.ndarray, not ",
                  std::string(py::str(a.get_type().attr("__name__")))));
        }
        return from_numpy(py::reinterpret_borrow<py::array>(a));
      },
      py::arg("ndarray"));

  // where(cond, x, y) with a number on either side goes to the Scalar overloads.
  m.def(
      "where",
      [](const Tensor& cond, py::handle x, py::handle y) {
        bool xt = py::isinstance<Tensor>(x), yt = py::isinstance<Tensor>(y);
        if (xt && yt) return where(cond, x.cast<Tensor>(), y.cast<Tensor>());
        if (xt) return where(cond, x.cast<Tensor>(), to_scalar(y));
        if (yt) return where(cond, to_scalar(x), y.cast<Tensor>());
        throw py::type_error("where(): at least one of x and y must be a Tensor");
      },
      py::arg("condition"), py::arg("input"), py::arg("other"));
  m.def(
      "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, py::arg("input"),
      py::arg("other"));
  m.def(
      "cat", [](const std::vector<Tensor>& ts, int64_t dim) { return cat(ts, dim); },
      py::arg("tensors"), py::arg("dim") = 0);
  m.def(
      "stack", [](const std::vector<Tensor>& ts, int64_t dim) { return stack(ts, dim); },
      py::arg("tensors"), py::arg("dim") = 0);

  // Math functions: forwarded to the Tensor methods, which hold the Tensor/Scalar dispatch.
  for (const char* name : {"neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid",
                           "relu", "logical_not", "t", "clone"}) {
    m.def(
        name, [name](py::handle x) { return x.attr(name)(); }, py::arg("input"));
  }
  for (const char* name : {"sum", "mean", "prod", "max", "min", "argmax", "argmin"}) {
    m.def(
        name,
        [name](py::handle x, py::handle dim, bool keepdim) { return x.attr(name)(dim, keepdim); },
        py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  }
  m.def(
      "clamp", [](py::handle x, py::handle lo, py::handle hi) { return x.attr("clamp")(lo, hi); },
      py::arg("input"), py::arg("min") = py::none(), py::arg("max") = py::none());
  m.def(
      "add",
      [](py::handle a, py::handle b, py::handle alpha) {
        if (to_scalar(alpha).to<double>() != 1.0) {
          if (py::isinstance<Tensor>(b)) {
            return py::cast(add(a.cast<Tensor>(), b.cast<Tensor>(), to_scalar(alpha)));
          }
          // A number other: the method's (alpha was ignored here before 2026-11-29).
          if (py::isinstance<Tensor>(a)) return a.attr("add")(b, py::arg("alpha") = alpha);
        }
        return other_or_tensor(a, b, "__add__");
      },
      py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1);
  m.def(
      "sub",
      [](py::handle a, py::handle b, py::handle alpha) {
        if (to_scalar(alpha).to<double>() != 1.0) {
          if (py::isinstance<Tensor>(b)) {
            return py::cast(sub(a.cast<Tensor>(), b.cast<Tensor>(), to_scalar(alpha)));
          }
          // A number other: the method's (alpha was ignored here before 2026-11-29).
          if (py::isinstance<Tensor>(a)) return a.attr("sub")(b, py::arg("alpha") = alpha);
        }
        return other_or_tensor(a, b, "__sub__");
      },
      py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1);
  for (auto [name, op] : kNamedOperators) {
    m.def(
        name, [op = op](py::handle a, py::handle b) { return other_or_tensor(a, b, op); },
        py::arg("input"), py::arg("other"));
  }
  m.def(
      "pow",
      [](py::handle a, py::handle b) {
        if (py::isinstance<Tensor>(a)) return a.attr("__pow__")(b);
        return b.attr("__rpow__")(a);
      },
      py::arg("input"), py::arg("exponent"));
  m.def(
      "maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, py::arg("input"),
      py::arg("other"));
  m.def(
      "minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, py::arg("input"),
      py::arg("other"));
  m.def(
      "logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); },
      py::arg("input"), py::arg("other"));
  m.def(
      "logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); },
      py::arg("input"), py::arg("other"));
  m.def(
      "unbind", [](const Tensor& x, int64_t dim) { return to_py_tuple(unbind(x, dim)); },
      py::arg("input"), py::arg("dim") = 0);
  m.def(
      "split",
      [](py::handle x, py::handle size, int64_t dim) { return x.attr("split")(size, dim); },
      py::arg("tensor"), py::arg("split_size_or_sections"), py::arg("dim") = 0);
  m.def(
      "chunk",
      [](const Tensor& x, int64_t n, int64_t dim) { return to_py_tuple(chunk(x, n, dim)); },
      py::arg("input"), py::arg("chunks"), py::arg("dim") = 0);

  // torch.f(x, ...) for Tensor methods f: forwarded with the same arguments.
  for (const char* name :
       {"reshape",       "view_as",       "transpose",      "permute",    "unsqueeze",
        "squeeze",       "narrow",        "select",         "flatten",    "diagonal",
        "masked_fill",   "index_put",     "numel",          "contiguous", "detach",
        "index_select",  "index_add",     "index_copy",     "index_fill", "gather",
        "scatter",       "scatter_add",   "scatter_reduce", "take",       "put",
        "masked_select", "masked_scatter"}) {
    m.def(name, [name](py::handle x, py::args args, py::kwargs kwargs) {
      if (!py::isinstance<Tensor>(x)) {
        throw py::type_error(str(name, "(): the first argument must be a Tensor, got ",
                                 std::string(py::str(x.get_type().attr("__name__")))));
      }
      return x.attr(name)(*args, **kwargs);
    });
  }

  m.def("is_grad_enabled", [] { return GradMode::is_enabled(); });
  m.def("set_grad_enabled", [](bool enabled) { GradMode::set_enabled(enabled); });
}

}  // namespace mutagrad::python
