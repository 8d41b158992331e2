// mutagrad._C.Tensor: properties, autograd attributes, conversions, views, math methods and
// reductions. In-place ops and operators are in bindings_operators.cc, indexing in
// bindings_indexing.cc, devices (to, cuda, cpu, is_cuda) in bindings_device.cc.
#include <pybind11/stl.h>

#include <vector>

#include "python/bindings.h"
#include "tensor/read_hook.h"

namespace mutagrad::python {
namespace {
constexpr const char* kNonLeafGradWarning =
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If "
    "you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. "
    "See github.com/pytorch/pytorch/pull/30531 for more informations.";

py::tuple to_tuple(IntArrayRef values) {
  py::tuple out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = py::int_(values[i]);
  return out;
}

py::list to_py_list(const std::vector<Tensor>& ts) {
  py::list out;
  for (const Tensor& t : ts) out.append(py::cast(t));
  return out;
}

py::tuple to_py_tuple(const std::vector<Tensor>& ts) { return py::tuple(to_py_list(ts)); }

}  // namespace

py::object scalar_to_python(const Scalar& s) {
  if (s.is_bool()) return py::bool_(s.to<bool>());
  if (s.is_integral()) return py::int_(s.to<int64_t>());
  return py::float_(s.to<double>());
}

DimVector dims_from(py::handle h) {
  DimVector dims;
  if (py::isinstance<py::sequence>(h)) {
    for (py::handle d : h) dims.push_back(d.cast<int64_t>());
  } else {
    dims.push_back(h.cast<int64_t>());
  }
  return dims;
}

void bind_tensor(py::module_& m) {
  // One Python object per tensor: see Note [One Python object per tensor] (tensor_caster.h).
  py::class_<Tensor, TensorHolder> t(m, "Tensor");
  // Properties and metadata.
  t.def_property_readonly("shape", [](const Tensor& s) { return make_size(s.sizes()); })
      .def(
          "size",
          [](const Tensor& s, py::object dim) -> py::object {
            if (dim.is_none()) return make_size(s.sizes());
            return py::int_(s.size(dim.cast<int64_t>()));
          },
          py::arg("dim") = py::none())
      .def("dim", &Tensor::dim)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("__len__",
           [](const Tensor& s) {
             if (s.dim() == 0) throw py::type_error("len() of a 0-d tensor");
             return s.size(0);
           })
      // The rows, as torch: views made by unbind(0) (so their grad_fn is UnbindBackward0).
      .def("__iter__",
           [](const Tensor& s) {
             if (s.dim() == 0) throw py::type_error("iteration over a 0-d tensor");
             return py::iter(to_py_tuple(s.unbind(0)));
           })
      .def_property_readonly("dtype", [](const Tensor& s) { return dtype_object(s.dtype()); })
      .def(
          "stride",
          [](const Tensor& s, py::object dim) -> py::object {
            if (dim.is_none()) return to_tuple(s.strides());
            return py::int_(s.stride(dim.cast<int64_t>()));
          },
          py::arg("dim") = py::none())
      .def("storage_offset", &Tensor::storage_offset)
      .def_property_readonly(
          "device",
          [](const Tensor& s) { return package_attr("_types", "device")(str(s.device())); })
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("is_floating_point", &Tensor::is_floating_point)
      .def("element_size", &Tensor::element_size)
      .def("data_ptr",  // the address of the first element (as torch: an int, any device)
           [](const Tensor& s) {
             const auto base = reinterpret_cast<intptr_t>(s.storage().data());
             return base == 0 ? intptr_t{0} : base + s.storage_offset() * s.element_size();
           })
      .def_property_readonly(
          "_version",
          [](const Tensor& s) {
            if (s.version_counter().is_inference()) {  // torch's error
              throw std::runtime_error("Inference tensors do not track version counter.");
            }
            return s.version();
          })
      .def("is_inference", [](const Tensor& s) { return s.version_counter().is_inference(); })
      .def_property_readonly("_base", [](const Tensor& s) { return wrap_tensor(s.base()); })
      .def("__hash__", [](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); });
  t.attr("__array_priority__") = 1000;  // as torch.Tensor's

  // Autograd attributes.
  t.def_property(
       "grad",
       [](const Tensor& s) {
         Tensor g = s.grad();
         if (!g.defined() && !s.is_leaf() && !s.retains_grad()) {  // torch's warning and text
           if (PyErr_WarnEx(PyExc_UserWarning, kNonLeafGradWarning, 1) != 0) {
             throw py::error_already_set();
           }
         }
         return wrap_tensor(g);
       },
       [](const Tensor& s, py::handle g) {
         if (!g.is_none() && !py::isinstance<Tensor>(g)) {  // torch's TypeError
           throw py::type_error(
               str("assigned grad expected to be a Tensor or None but got grad of type ",
                   Py_TYPE(g.ptr())->tp_name,
                   "; convert it with mutagrad.tensor(...) (of the tensor's dtype and shape)"));
         }
         s.set_grad(optional_tensor(g));
       })
      .def_property_readonly("grad_fn",
                             [](const Tensor& s) -> py::object {
                               const auto& fn = s.grad_fn();
                               return fn ? py::cast(fn) : py::none();
                             })
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& s, bool r) { s.requires_grad_(r); })
      .def_property_readonly("retains_grad", &Tensor::retains_grad)
      .def(
          "requires_grad_", [](Tensor& s, bool r) -> Tensor& { return s.requires_grad_(r); },
          py::arg("requires_grad") = true, py::return_value_policy::reference_internal)
      .def(
          "backward",
          [](const Tensor& s, py::handle gradient, std::optional<bool> retain_graph,
             bool create_graph, py::handle inputs) {
            std::vector<Tensor> only;
            if (py::isinstance<Tensor>(inputs)) {
              only.push_back(inputs.cast<Tensor>());
            } else if (!inputs.is_none()) {
              for (py::handle h : inputs) only.push_back(h.cast<Tensor>());
            }
            std::vector<Tensor> roots{s}, grads{optional_tensor(gradient)};
            autograd::backward(roots, grads, retain_graph, create_graph, only);
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(),
          py::arg("create_graph") = false, py::arg("inputs") = py::none())
      .def("retain_grad", &Tensor::retain_grad)
      .def("detach", &Tensor::detach)
      .def_property_readonly("data", &Tensor::variable_data)
      .def("detach_", [](py::object self) {
        self.cast<Tensor&>().detach_();
        return self;
      });

  // Copies and conversions.
  t.def("clone", &Tensor::clone)
      .def("contiguous", &Tensor::contiguous)
      .def("item",
           [](const Tensor& s) {
             if (s.numel() != 1) {
               throw py::value_error(str("item(): the tensor has ", s.numel(), " elements (shape ",
                                         s.sizes(),
                                         "); only a one-element tensor converts to a Python "
                                         "number. Index or reduce it first"));
             }
             return scalar_to_python(s.item());
           })
      .def("tolist", [](const Tensor& s) { return to_list(s); })
      .def("numpy", [](const Tensor& s) { return to_numpy(s); })
      // NumPy's protocols, as torch's: np.array(x) / np.asarray(x) read the tensor's memory
      // (RuntimeError if it requires grad); a ufunc's result comes back as a tensor; and a
      // NumPy scalar or array on the left of an operator defers to the tensor's reflected
      // operator (np.float64(0.1) * x is a tensor of x's dtype, as x * 0.1).
      .def(
          "__array__",
          [](const Tensor& s, py::handle dtype, py::handle copy) -> py::object {
            py::array a = to_numpy(s);
            bool copied = copy.ptr() == Py_True;  // NumPy 2 passes copy=
            if (!dtype.is_none()) return a.attr("astype")(dtype, py::arg("copy") = copied);
            return copied ? a.attr("copy")() : py::object(a);
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def(
          "__array_wrap__",
          [](const Tensor&, py::array array, py::handle context, py::handle return_scalar) {
            // torch makes bool results uint8, which mutagrad lacks: they stay bool.
            return from_numpy(array, "__array_wrap__");
          },
          py::arg("array"), py::arg("context") = py::none(), py::arg("return_scalar") = false)
      .def(
          "type", [](const Tensor& s, py::handle dtype) { return s.to(*to_dtype(dtype)); },
          py::arg("dtype"))
      .def(
          "type_as", [](const Tensor& s, const Tensor& other) { return s.to(other.dtype()); },
          py::arg("other"))
      // The C++ half of `x.data = other` (mutagrad/_conveniences.py's setter).
      .def(
          "_set_data", [](Tensor& s, const Tensor& other) { s.set_data(other); }, py::arg("other"))
      .def("float", [](const Tensor& s) { return s.to(kFloat32); })
      .def("double", [](const Tensor& s) { return s.to(kFloat64); })
      .def("long", [](const Tensor& s) { return s.to(kInt64); })
      .def("int", [](const Tensor& s) { return s.to(kInt32); })
      .def("half", [](const Tensor& s) { return s.to(kFloat16); })
      .def("bfloat16", [](const Tensor& s) { return s.to(kBFloat16); })
      .def("short", [](const Tensor& s) { return s.to(kInt16); })
      .def("char", [](const Tensor& s) { return s.to(kInt8); })
      .def("byte", [](const Tensor& s) { return s.to(kUInt8); })
      .def("bool", [](const Tensor& s) { return s.to(kBool); })
      .def("__repr__", &tensor_repr)
      .def("__float__",
           [](const Tensor& s) {
             notify_host_read(*s.unsafe_impl(), "float");
             return s.item<double>();
           })
      .def("__int__",
           [](const Tensor& s) {
             notify_host_read(*s.unsafe_impl(), "int");
             return s.item<int64_t>();
           })
      .def("__index__",
           [](const Tensor& s) {
             if (s.is_floating_point() || s.numel() != 1) {
               throw py::type_error(
                   str("only integer tensors of a single element can be used as "
                       "a Python index; this one is ",
                       dtype_name(s.dtype()), " with ", s.numel(), " elements"));
             }
             notify_host_read(*s.unsafe_impl(), "__index__");
             return s.item<int64_t>();
           })
      .def("__bool__", [](const Tensor& s) {
        notify_host_read(*s.unsafe_impl(), "bool");  // data-dependent control flow
        if (s.numel() != 1) {
          throw Error(str("bool() of a tensor with ", s.numel(),
                          " elements is ambiguous; reduce it first with .all() or .any(), or "
                          "compare one element"));
        }
        return s.item<bool>();
      });

  // Views.
  t.def("reshape",
        [](const Tensor& s, py::args shape) {
          return s.reshape(sizes_from_args(shape, "reshape", "shape"));
        })
      .def("view", [](const Tensor& s, py::args a) { return s.view(sizes_from_args(a, "view")); })
      .def("transpose", &Tensor::transpose, py::arg("dim0"), py::arg("dim1"))
      .def("permute",
           [](const Tensor& s, py::args dims) {
             return s.permute(sizes_from_args(dims, "permute", "dims"));
           })
      .def("unsqueeze", &Tensor::unsqueeze, py::arg("dim"))
      .def(
          "squeeze",
          [](const Tensor& s, py::object dim) {
            return dim.is_none() ? s.squeeze() : s.squeeze(dim.cast<int64_t>());
          },
          py::arg("dim") = py::none())
      .def("expand",
           [](const Tensor& s, py::args a) { return s.expand(sizes_from_args(a, "expand")); })
      .def("expand_as", &Tensor::expand_as, py::arg("other"))
      .def("view_as", &Tensor::view_as, py::arg("other"))
      .def(
          "reshape_as", [](const Tensor& s, const Tensor& o) { return s.reshape(o.sizes()); },
          py::arg("other"))
      .def("narrow", &Tensor::narrow, py::arg("dim"), py::arg("start"), py::arg("length"))
      .def("select", &Tensor::select, py::arg("dim"), py::arg("index"))
      .def("flatten", &Tensor::flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("diagonal", &Tensor::diagonal, py::arg("offset") = 0, py::arg("dim1") = 0,
           py::arg("dim2") = 1)
      .def("t", &Tensor::t)
      .def_property_readonly("T",
                             [](const Tensor& s) {
                               DimVector dims;
                               for (int64_t d = s.dim() - 1; d >= 0; --d) dims.push_back(d);
                               return s.permute(dims);
                             })
      .def(
          "unbind", [](const Tensor& s, int64_t dim) { return to_py_tuple(s.unbind(dim)); },
          py::arg("dim") = 0)
      .def(
          "split",
          [](const Tensor& s, py::handle size, int64_t dim) {
            if (PyLong_Check(size.ptr())) return to_py_tuple(s.split(size.cast<int64_t>(), dim));
            return to_py_tuple(s.split_with_sizes(dims_from(size), dim));
          },
          py::arg("split_size"), py::arg("dim") = 0)
      .def(
          "chunk",
          [](const Tensor& s, int64_t n, int64_t dim) { return to_py_tuple(s.chunk(n, dim)); },
          py::arg("chunks"), py::arg("dim") = 0);

  // Unary math and reductions as methods.
  t.def("neg", &Tensor::neg)
      .def("abs", &Tensor::abs)
      .def("exp", &Tensor::exp)
      .def("log", &Tensor::log)
      .def("sqrt", &Tensor::sqrt)
      .def("sin", &Tensor::sin)
      .def("cos", &Tensor::cos)
      .def("tanh", &Tensor::tanh)
      .def("sigmoid", &Tensor::sigmoid)
      .def("relu", &Tensor::relu)
      .def("logical_not", &Tensor::logical_not)
      .def(
          "clamp",
          [](const Tensor& s, py::handle lo, py::handle hi) {
            return s.clamp(optional_scalar(lo), optional_scalar(hi));
          },
          py::arg("min") = py::none(), py::arg("max") = py::none())
      .def(
          "pow",
          [](const Tensor& s, py::handle e) {
            if (py::isinstance<Tensor>(e)) return s.pow(e.cast<Tensor>());
            return s.pow(to_scalar(e));
          },
          py::arg("exponent"))
      .def("matmul", &Tensor::matmul, py::arg("other"))
      .def(
          "masked_fill",
          [](const Tensor& s, const Tensor& mask, py::handle v) {
            if (py::isinstance<Tensor>(v)) return s.masked_fill(mask, v.cast<Tensor>());
            return s.masked_fill(mask, to_scalar(v));
          },
          py::arg("mask"), py::arg("value"));
  auto reduction = [&t](const char* name, Tensor (Tensor::*all)() const,
                        Tensor (Tensor::*dims)(IntArrayRef, bool) const) {
    t.def(
        name,
        [all, dims](const Tensor& s, py::object dim, bool keepdim) {
          if (dim.is_none()) return (s.*all)();
          return (s.*dims)(dims_from(dim), keepdim);
        },
        py::arg("dim") = py::none(), py::arg("keepdim") = false);
  };
  reduction("sum", &Tensor::sum, &Tensor::sum);
  reduction("mean", &Tensor::mean, &Tensor::mean);
  reduction("prod", &Tensor::prod, &Tensor::prod);
  // max()/min(): the extremum; max(dim) / min(dim): (values, indices) as torch.return_types;
  // max(other) / min(other): maximum / minimum.
  auto extremum = [&t](const char* name, bool is_max) {
    t.def(
        name,
        [name, is_max](const Tensor& s, py::handle dim, bool keepdim) -> py::object {
          if (dim.is_none()) return py::cast(is_max ? s.max() : s.min());
          if (py::isinstance<Tensor>(dim)) {
            const Tensor& o = dim.cast<const Tensor&>();
            return py::cast(is_max ? s.maximum(o) : s.minimum(o));
          }
          if (!PyLong_Check(dim.ptr())) {
            throw py::type_error(str(name,
                                     "(): dim must be an int (or a Tensor for the "
                                     "elementwise form), got ",
                                     std::string(py::repr(dim))));
          }
          int64_t d = dim.cast<int64_t>();
          auto [values, indices] = is_max ? max_dim(s, d, keepdim) : min_dim(s, d, keepdim);
          return package_attr("return_types", name)(values, indices);
        },
        py::arg("dim") = py::none(), py::arg("keepdim") = false);
  };
  extremum("max", true);
  extremum("min", false);
  t.def(
       "argmax",
       [](const Tensor& s, std::optional<int64_t> dim, bool keepdim) {
         return s.argmax(dim, keepdim);
       },
       py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "argmin",
          [](const Tensor& s, std::optional<int64_t> dim, bool keepdim) {
            return argmin(s, dim, keepdim);
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false);
}

}  // namespace mutagrad::python
