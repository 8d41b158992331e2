// mutagrad._C.Tensor: properties, autograd attributes, views, in-place ops (with the Python
// caller's file:line as the CallSite) and operators. Python numbers go to the C++ Scalar
// overloads; they are never wrapped as tensors.
#include <pybind11/stl.h>

#include <vector>

#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

using autograd::Node;

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

// Tensor ∘ (Tensor | number): the Tensor overload or the Scalar overload; NotImplemented
// for other types so Python can try the reflected operator.
template <typename TT, typename TS>
py::object binary(const Tensor& self, py::handle other, TT tensor_op, TS scalar_op) {
  if (py::isinstance<Tensor>(other)) return py::cast(tensor_op(self, other.cast<Tensor>()));
  if (is_python_number(other)) return py::cast(scalar_op(self, to_scalar(other)));
  return py::reinterpret_borrow<py::object>(Py_NotImplemented);
}

Scalar times(const Scalar& a, const Scalar& b) {
  if (a.is_floating_point() || b.is_floating_point())
    return Scalar(a.to<double>() * b.to<double>());
  return Scalar(a.to<int64_t>() * b.to<int64_t>());
}

std::optional<Scalar> optional_scalar(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_scalar(h);
}

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
  py::class_<Node, std::shared_ptr<Node>>(m, "Node")
      .def("name", [](const Node& n) { return std::string(n.name()); })
      .def_property_readonly("next_functions",
                             [](const Node& n) {
                               py::list out;
                               for (const auto& e : n.next_edges()) {
                                 py::object fn = e.function ? py::cast(e.function) : py::none();
                                 out.append(py::make_tuple(fn, e.input_nr));
                               }
                               return py::tuple(out);
                             })
      .def("__repr__", [](const Node& n) { return str("<", n.name(), " object>"); });

  py::class_<Tensor> t(m, "Tensor");
  // Properties and metadata.
  t.def_property_readonly("shape", [](const Tensor& s) { return to_tuple(s.sizes()); })
      .def(
          "size",
          [](const Tensor& s, py::object dim) -> py::object {
            if (dim.is_none()) return to_tuple(s.sizes());
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
      .def_property_readonly("dtype", [](const Tensor& s) { return dtype_object(s.dtype()); })
      .def(
          "stride",
          [](const Tensor& s, py::object dim) -> py::object {
            if (dim.is_none()) return to_tuple(s.strides());
            return py::int_(s.stride(dim.cast<int64_t>()));
          },
          py::arg("dim") = py::none())
      .def("storage_offset", &Tensor::storage_offset)
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("is_floating_point", &Tensor::is_floating_point)
      .def("element_size", &Tensor::element_size)
      .def_property_readonly("_version", &Tensor::version)
      .def_property_readonly("_base", [](const Tensor& s) { return wrap_tensor(s.base()); })
      .def("__hash__", [](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); });

  // Autograd attributes.
  t.def_property(
       "grad", [](const Tensor& s) { return wrap_tensor(s.grad()); },
       [](const Tensor& s, py::handle g) { s.set_grad(optional_tensor(g)); })
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
             bool create_graph) {
            s.backward(optional_tensor(gradient), retain_graph, create_graph);
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(),
          py::arg("create_graph") = false)
      .def("retain_grad", &Tensor::retain_grad)
      .def("detach", &Tensor::detach)
      .def("detach_", [](py::object self) {
        self.cast<Tensor&>().detach_();
        return self;
      });

  // Copies and conversions.
  t.def("clone", &Tensor::clone)
      .def("contiguous", &Tensor::contiguous)
      .def("item", [](const Tensor& s) { return scalar_to_python(s.item()); })
      .def("tolist", [](const Tensor& s) { return to_list(s); })
      .def("numpy", [](const Tensor& s) { return to_numpy(s); })
      .def("to", [](const Tensor& s, py::handle dtype) { return s.to(*to_dtype(dtype)); })
      .def("float", [](const Tensor& s) { return s.to(kFloat32); })
      .def("double", [](const Tensor& s) { return s.to(kFloat64); })
      .def("long", [](const Tensor& s) { return s.to(kInt64); })
      .def("int", [](const Tensor& s) { return s.to(kInt32); })
      .def("bool", [](const Tensor& s) { return s.to(kBool); })
      .def("__repr__", &Tensor::to_string)
      .def("__float__", [](const Tensor& s) { return s.item<double>(); })
      .def("__int__", [](const Tensor& s) { return s.item<int64_t>(); })
      .def("__bool__", [](const Tensor& s) {
        if (s.numel() != 1) {
          throw py::value_error("Boolean value of Tensor with more than one value is ambiguous");
        }
        return s.item<bool>();
      });

  // Views.
  t.def("reshape",
        [](const Tensor& s, py::args a) { return s.reshape(sizes_from_args(a, "reshape")); })
      .def("view", [](const Tensor& s, py::args a) { return s.view(sizes_from_args(a, "view")); })
      .def("transpose", &Tensor::transpose)
      .def("permute",
           [](const Tensor& s, py::args a) { return s.permute(sizes_from_args(a, "permute")); })
      .def("unsqueeze", &Tensor::unsqueeze)
      .def(
          "squeeze",
          [](const Tensor& s, py::object dim) {
            return dim.is_none() ? s.squeeze() : s.squeeze(dim.cast<int64_t>());
          },
          py::arg("dim") = py::none())
      .def("expand",
           [](const Tensor& s, py::args a) { return s.expand(sizes_from_args(a, "expand")); })
      .def("expand_as", &Tensor::expand_as)
      .def("narrow", &Tensor::narrow)
      .def("select", &Tensor::select)
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
          py::arg("split_size_or_sections"), py::arg("dim") = 0)
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
      .def("pow",
           [](const Tensor& s, py::handle e) {
             if (py::isinstance<Tensor>(e)) return s.pow(e.cast<Tensor>());
             return s.pow(to_scalar(e));
           })
      .def("matmul", &Tensor::matmul)
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
  reduction("max", &Tensor::max, &Tensor::max);
  reduction("min", &Tensor::min, &Tensor::min);
  t.def(
      "argmax",
      [](const Tensor& s, std::optional<int64_t> dim, bool keepdim) {
        return s.argmax(dim, keepdim);
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false);

  // In-place ops: the CallSite is the Python caller's file:line.
  using Self = py::object;  // in-place ops return the same Python object, as torch does
  t.def(
       "add_",
       [](Self self, py::handle other, py::handle alpha) {
         Tensor& s = self.cast<Tensor&>();
         if (py::isinstance<Tensor>(other)) {
           s.add_(other.cast<Tensor>(), to_scalar(alpha), python_call_site());
         } else {
           s.add_(times(to_scalar(other), to_scalar(alpha)), python_call_site());
         }
         return self;
       },
       py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def(
          "sub_",
          [](Self self, py::handle other, py::handle alpha) {
            Tensor& s = self.cast<Tensor&>();
            if (py::isinstance<Tensor>(other)) {
              s.sub_(other.cast<Tensor>(), to_scalar(alpha), python_call_site());
            } else {
              s.sub_(times(to_scalar(other), to_scalar(alpha)), python_call_site());
            }
            return self;
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def("mul_",
           [](Self self, py::handle other) {
             Tensor& s = self.cast<Tensor&>();
             if (py::isinstance<Tensor>(other)) {
               s.mul_(other.cast<Tensor>(), python_call_site());
             } else {
               s.mul_(to_scalar(other), python_call_site());
             }
             return self;
           })
      .def("div_",
           [](Self self, py::handle other) {
             Tensor& s = self.cast<Tensor&>();
             if (py::isinstance<Tensor>(other)) {
               s.div_(other.cast<Tensor>(), python_call_site());
             } else {
               s.div_(to_scalar(other), python_call_site());
             }
             return self;
           })
      .def("fill_",
           [](Self self, py::handle value) {
             Tensor& s = self.cast<Tensor&>();
             if (py::isinstance<Tensor>(value)) {
               s.fill_(value.cast<Tensor>(), python_call_site());
             } else {
               s.fill_(to_scalar(value), python_call_site());
             }
             return self;
           })
      .def("copy_",
           [](Self self, const Tensor& src) {
             self.cast<Tensor&>().copy_(src, python_call_site());
             return self;
           })
      .def(
          "masked_fill_",
          [](Self self, const Tensor& mask, py::handle value) {
            Tensor& s = self.cast<Tensor&>();
            if (py::isinstance<Tensor>(value)) {
              s.masked_fill_(mask, value.cast<Tensor>(), python_call_site());
            } else {
              s.masked_fill_(mask, to_scalar(value), python_call_site());
            }
            return self;
          },
          py::arg("mask"), py::arg("value"))
      .def(
          "clamp_",
          [](Self self, py::handle lo, py::handle hi) {
            self.cast<Tensor&>().clamp_(optional_scalar(lo), optional_scalar(hi),
                                        python_call_site());
            return self;
          },
          py::arg("min") = py::none(), py::arg("max") = py::none());
  auto unary_inplace = [&t](const char* name, Tensor& (Tensor::*op)(CallSite)) {
    t.def(name, [op](Self self) {
      (self.cast<Tensor&>().*op)(python_call_site());
      return self;
    });
  };
  unary_inplace("zero_", &Tensor::zero_);
  unary_inplace("neg_", &Tensor::neg_);
  unary_inplace("relu_", &Tensor::relu_);
  unary_inplace("sigmoid_", &Tensor::sigmoid_);
  unary_inplace("tanh_", &Tensor::tanh_);
  unary_inplace("exp_", &Tensor::exp_);

  // Operators. Reflected forms take the number on the left.
  t.def("__add__",
        [](const Tensor& s, py::handle o) {
          return binary(
              s, o, [](const Tensor& a, const Tensor& b) { return a + b; },
              [](const Tensor& a, const Scalar& b) { return a + b; });
        })
      .def("__radd__",
           [](const Tensor& s, py::handle o) {
             return binary(
                 s, o, [](const Tensor& a, const Tensor& b) { return b + a; },
                 [](const Tensor& a, const Scalar& b) { return b + a; });
           })
      .def("__sub__",
           [](const Tensor& s, py::handle o) {
             return binary(
                 s, o, [](const Tensor& a, const Tensor& b) { return a - b; },
                 [](const Tensor& a, const Scalar& b) { return a - b; });
           })
      .def("__rsub__",
           [](const Tensor& s, py::handle o) {
             return binary(
                 s, o, [](const Tensor& a, const Tensor& b) { return b - a; },
                 [](const Tensor& a, const Scalar& b) { return b - a; });
           })
      .def("__mul__",
           [](const Tensor& s, py::handle o) {
             return binary(
                 s, o, [](const Tensor& a, const Tensor& b) { return a * b; },
                 [](const Tensor& a, const Scalar& b) { return a * b; });
           })
      .def("__rmul__",
           [](const Tensor& s, py::handle o) {
             return binary(
                 s, o, [](const Tensor& a, const Tensor& b) { return b * a; },
                 [](const Tensor& a, const Scalar& b) { return b * a; });
           })
      .def("__truediv__",
           [](const Tensor& s, py::handle o) {
             return binary(
                 s, o, [](const Tensor& a, const Tensor& b) { return a / b; },
                 [](const Tensor& a, const Scalar& b) { return a / b; });
           })
      .def("__rtruediv__",
           [](const Tensor& s, py::handle o) {
             return binary(
                 s, o, [](const Tensor& a, const Tensor& b) { return b / a; },
                 [](const Tensor& a, const Scalar& b) { return b / a; });
           })
      .def("__pow__",
           [](const Tensor& s, py::handle o) {
             return binary(
                 s, o, [](const Tensor& a, const Tensor& b) { return pow(a, b); },
                 [](const Tensor& a, const Scalar& b) { return pow(a, b); });
           })
      .def("__rpow__",
           [](const Tensor& s, py::handle o) {
             return binary(
                 s, o, [](const Tensor& a, const Tensor& b) { return pow(b, a); },
                 [](const Tensor& a, const Scalar& b) { return pow(b, a); });
           })
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b); })
      .def("__neg__", [](const Tensor& s) { return -s; })
      .def("__pos__", [](const Tensor& s) { return s; })
      .def("__abs__", [](const Tensor& s) { return s.abs(); })
      .def("__invert__", [](const Tensor& s) { return s.logical_not(); })
      .def("__and__", [](const Tensor& a, const Tensor& b) { return a & b; })
      .def("__or__", [](const Tensor& a, const Tensor& b) { return a | b; })
      .def("__iadd__", [](Self self, py::handle o) { return self.attr("add_")(o); })
      .def("__isub__", [](Self self, py::handle o) { return self.attr("sub_")(o); })
      .def("__imul__", [](Self self, py::handle o) { return self.attr("mul_")(o); })
      .def("__itruediv__", [](Self self, py::handle o) { return self.attr("div_")(o); });
#define MG_COMPARISON(pyname, op)                                      \
  t.def(pyname, [](const Tensor& s, py::handle o) {                    \
    return binary(                                                     \
        s, o, [](const Tensor& a, const Tensor& b) { return a op b; }, \
        [](const Tensor& a, const Scalar& b) { return a op b; });      \
  });
  MG_COMPARISON("__eq__", ==)
  MG_COMPARISON("__ne__", !=)
  MG_COMPARISON("__lt__", <)
  MG_COMPARISON("__le__", <=)
  MG_COMPARISON("__gt__", >)
  MG_COMPARISON("__ge__", >=)
#undef MG_COMPARISON
  // __eq__ resets __hash__; torch tensors hash by identity.
  t.attr("__hash__") = py::cpp_function(
      [](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); }, py::is_method(t));
}

}  // namespace mutagrad::python
