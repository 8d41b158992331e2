// Tensor methods that write or combine: in-place ops (their CallSite is the Python caller's
// file:line, so a stale-tensor error names the mutating .py line), Python operators (+ - * /
// ** unary - comparisons and the in-place += -= *= /= **=; @= raises; & | ^ ~ << >> % // and
// their in-place forms are in bindings_math.cc) and the
// out-of-place method forms (x.add(y, alpha=2), x.eq(y), ...). A Python number goes to the C++
// Scalar overload; it is never wrapped as a tensor, but for x.add_(number, alpha=a) on a
// float32/float64 x, whose number is one FMA with alpha as torch's wrapped number (Note
// [Torch's fused multiply-adds]), a 0-dim tensor of x's dtype.
#include <vector>

#include "python/bindings.h"
#include "python/call_site.h"
#include "tensor/native/fma.h"
#include "tensor/native/pointwise.h"

namespace mutagrad::python {
namespace {

// Tensor op (Tensor | number): the Tensor overload or the Scalar overload; NotImplemented
// for other types so Python can try the reflected operator.
template <typename TT, typename TS>
py::object binary(const Tensor& self, py::handle other, TT tensor_op, TS scalar_op) {
  if (py::isinstance<Tensor>(other)) return py::cast(tensor_op(self, other.cast<Tensor>()));
  if (is_python_number(other)) return py::cast(scalar_op(self, to_scalar(other)));
  return py::reinterpret_borrow<py::object>(Py_NotImplemented);
}

Scalar times(const Scalar& a, const Scalar& b) {
  if (a.is_floating_point() || b.is_floating_point()) {
    return Scalar(a.to<double>() * b.to<double>());
  }
  return Scalar(a.to<int64_t>() * b.to<int64_t>());
}

// x.add_(number, alpha) / sub_: on a float32/float64 x with alpha != 1, the number as a 0-dim
// tensor of x's dtype (torch's wrapped number: one FMA); otherwise number * alpha as a Scalar.
template <typename TensorWrite, typename ScalarWrite>
void write_number(const char* op, Tensor& self, py::handle other, py::handle alpha,
                  TensorWrite tensor_write, ScalarWrite scalar_write) {
  const Scalar a = to_scalar(alpha), number = to_scalar(other);
  if (a.to<double>() != 1.0 && native::has_fma(self.dtype()) && !number.is_bool()) {
    tensor_write(native::wrap_scalar(number, self.dtype(), kCPU, op), a);
  } else {
    scalar_write(times(number, a));
  }
}

// clamp_/clip_ with tensor bounds (each a Tensor or None): the tracked write of clamp_ops.h;
// false when neither bound is a tensor (the Scalar overload then runs). A tensor with a number
// is torch's TypeError.
bool clamp_tensor_bounds(Tensor& self, py::handle lo, py::handle hi, const char* name) {
  const bool lo_tensor = py::isinstance<Tensor>(lo), hi_tensor = py::isinstance<Tensor>(hi);
  if (!lo_tensor && !hi_tensor) return false;
  if ((!lo_tensor && !lo.is_none()) || (!hi_tensor && !hi.is_none())) {
    throw py::type_error(str(name,
                             "() received an invalid combination of arguments: min and max "
                             "must both be Tensors (or None) or both numbers (or None); got ",
                             std::string(py::str(lo.get_type().attr("__name__"))), " and ",
                             std::string(py::str(hi.get_type().attr("__name__")))));
  }
  mutagrad::clamp_(self, optional_tensor(lo), optional_tensor(hi), python_call_site());
  return true;
}

}  // namespace

void bind_operators(py::module_& m) {
  auto t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  // In-place ops: the CallSite is the Python caller's file:line.
  using Self = py::object;  // in-place ops return the same Python object, as torch does
  t.def(
       "add_",
       [](Self self, py::handle other, py::handle alpha) {
         Tensor& s = self.cast<Tensor&>();
         const CallSite site = python_call_site();
         if (py::isinstance<Tensor>(other)) {
           s.add_(other.cast<Tensor>(), to_scalar(alpha), site);
         } else {
           write_number(
               "add_", s, other, alpha,
               [&](const Tensor& n, const Scalar& a) { s.add_(n, a, site); },
               [&](const Scalar& v) { s.add_(v, site); });
         }
         return self;
       },
       py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def(
          "sub_",
          [](Self self, py::handle other, py::handle alpha) {
            Tensor& s = self.cast<Tensor&>();
            const CallSite site = python_call_site();
            if (py::isinstance<Tensor>(other)) {
              s.sub_(other.cast<Tensor>(), to_scalar(alpha), site);
            } else {
              write_number(
                  "sub_", s, other, alpha,
                  [&](const Tensor& n, const Scalar& a) { s.sub_(n, a, site); },
                  [&](const Scalar& v) { s.sub_(v, site); });
            }
            return self;
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def(
          "mul_",
          [](Self self, py::handle other) {
            Tensor& s = self.cast<Tensor&>();
            if (py::isinstance<Tensor>(other)) {
              s.mul_(other.cast<Tensor>(), python_call_site());
            } else {
              s.mul_(to_scalar(other), python_call_site());
            }
            return self;
          },
          py::arg("other"))
      .def(
          "div_",
          [](Self self, py::handle other) {
            Tensor& s = self.cast<Tensor&>();
            if (py::isinstance<Tensor>(other)) {
              s.div_(other.cast<Tensor>(), python_call_site());
            } else {
              s.div_(to_scalar(other), python_call_site());
            }
            return self;
          },
          py::arg("other"))
      .def(
          "fill_",
          [](Self self, py::handle value) {
            Tensor& s = self.cast<Tensor&>();
            if (py::isinstance<Tensor>(value)) {
              s.fill_(value.cast<Tensor>(), python_call_site());
            } else {
              s.fill_(to_scalar(value), python_call_site());
            }
            return self;
          },
          py::arg("value"))
      .def(
          "copy_",
          [](Self self, const Tensor& src, bool non_blocking) {
            self.cast<Tensor&>().copy_(src, non_blocking, python_call_site());
            return self;
          },
          py::arg("src"), py::arg("non_blocking").noconvert() = false)
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
            if (clamp_tensor_bounds(self.cast<Tensor&>(), lo, hi, "clamp_")) return self;
            self.cast<Tensor&>().clamp_(optional_scalar(lo), optional_scalar(hi),
                                        python_call_site());
            return self;
          },
          py::arg("min") = py::none(), py::arg("max") = py::none())
      .def(
          "clip_",
          [](Self self, py::handle lo, py::handle hi) {
            if (clamp_tensor_bounds(self.cast<Tensor&>(), lo, hi, "clip_")) return self;
            self.cast<Tensor&>().clip_(optional_scalar(lo), optional_scalar(hi),
                                       python_call_site());
            return self;
          },
          py::arg("min") = py::none(), py::arg("max") = py::none());
  t.def(
      "pow_",
      [](Self self, py::handle exponent) {
        Tensor& s = self.cast<Tensor&>();
        if (py::isinstance<Tensor>(exponent)) {
          s.pow_(exponent.cast<Tensor>(), python_call_site());
        } else {
          s.pow_(to_scalar(exponent), python_call_site());
        }
        return self;
      },
      py::arg("exponent"));
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
      .def("__iadd__", [](Self self, py::handle o) { return self.attr("add_")(o); })
      .def("__isub__", [](Self self, py::handle o) { return self.attr("sub_")(o); })
      .def("__imul__", [](Self self, py::handle o) { return self.attr("mul_")(o); })
      .def("__itruediv__", [](Self self, py::handle o) { return self.attr("div_")(o); })
      .def("__ipow__", [](Self self, py::handle o) { return self.attr("pow_")(o); })
      .def("__imatmul__", [](py::handle, py::handle) -> py::object {
        // Python would otherwise rebind x to x @ y, and x's aliases would not see it.
        throw std::runtime_error(
            "In-place matmul is not supported (x @= y would not write into x, so its views and "
            "aliases would keep the old values). Use out-of-place matmul instead: x = x @ y");
      });
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
  // Out-of-place method forms of the operators, as torch's Tensor methods.
  t.def(
       "add",
       [](const Tensor& s, py::handle o, py::handle alpha) -> py::object {
         if (py::isinstance<Tensor>(o)) return py::cast(s.add(o.cast<Tensor>(), to_scalar(alpha)));
         return py::cast(mutagrad::add(s, to_scalar(o), to_scalar(alpha)));  // one FMA
       },
       py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def(
          "sub",
          [](const Tensor& s, py::handle o, py::handle alpha) -> py::object {
            if (py::isinstance<Tensor>(o)) {
              return py::cast(s.sub(o.cast<Tensor>(), to_scalar(alpha)));
            }
            return py::cast(mutagrad::sub(s, to_scalar(o), to_scalar(alpha)));
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = 1);
  for (auto [method, op] : kNamedOperators) {
    t.def(method, [op = op, method = method](py::handle self, py::handle other) {
      py::object r = self.attr(op)(other);
      if (r.ptr() == Py_NotImplemented) {
        throw py::type_error(str(method, "(): expected a Tensor or a number, got ",
                                 std::string(py::str(other.get_type().attr("__name__")))));
      }
      return r;
    });
  }
  t.def("maximum", &Tensor::maximum)
      .def("minimum", &Tensor::minimum)
      .def("logical_and", &Tensor::logical_and)
      .def("logical_or", &Tensor::logical_or);
}

}  // namespace mutagrad::python
