// The rounding, division, bit and float-classification ops (autograd/ops/unary_ops.h,
// binary_ops.h) as Tensor methods, module functions and operators, with torch's names and
// signatures: x.floor(), mutagrad.remainder(x, 3), x // y, x % 2, x << 1, x & y on integers,
// ~x, x.div(y, rounding_mode="floor"), x.round(decimals=2), x.nan_to_num(posinf=1e4). In-place
// forms take the Python caller's file:line as their call site.
#include <optional>
#include <string>

#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

using Self = py::object;  // in-place methods return the same Python object, as torch

py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

std::string type_name(py::handle h) { return py::str(h.get_type().attr("__name__")); }

[[noreturn]] void bad_operand(const char* fn, py::handle other) {
  throw py::type_error(
      str(fn, "(): expected a Tensor or a number as other, got ", type_name(other)));
}

// self op other for the rounded-division ops, with a number on either side.
enum class Div { kRemainder, kFmod, kFloor };

py::object divide(Div op, py::handle a, py::handle b, bool reflected_ok) {
  const bool at = py::isinstance<Tensor>(a);
  const bool bt = py::isinstance<Tensor>(b);
  if (at && bt) {
    const Tensor& x = a.cast<const Tensor&>();
    const Tensor& y = b.cast<const Tensor&>();
    return py::cast(op == Div::kRemainder ? remainder(x, y)
                    : op == Div::kFmod    ? fmod(x, y)
                                          : floor_divide(x, y));
  }
  if (at && is_python_number(b)) {
    const Tensor& x = a.cast<const Tensor&>();
    const Scalar y = to_scalar(b);
    return py::cast(op == Div::kRemainder ? remainder(x, y)
                    : op == Div::kFmod    ? fmod(x, y)
                                          : floor_divide(x, y));
  }
  if (reflected_ok && bt && is_python_number(a)) {
    const Scalar x = to_scalar(a);
    const Tensor& y = b.cast<const Tensor&>();
    return py::cast(op == Div::kRemainder ? remainder(x, y)
                    : op == Div::kFmod    ? fmod(x, y)
                                          : floor_divide(x, y));
  }
  return not_implemented();
}

py::object bit_op(BinaryOp op, py::handle a, py::handle b) {
  const bool at = py::isinstance<Tensor>(a);
  const bool bt = py::isinstance<Tensor>(b);
  if (at && bt) return py::cast(native::binary(op, a.cast<Tensor>(), b.cast<Tensor>()));
  if (at && is_python_number(b)) return py::cast(bitwise(op, a.cast<Tensor>(), to_scalar(b)));
  if (bt && is_python_number(a)) return py::cast(bitwise(op, to_scalar(a), b.cast<Tensor>()));
  return not_implemented();
}

// A function form that raises TypeError instead of returning NotImplemented.
py::object checked(py::object r, const char* fn, py::handle other) {
  if (r.ptr() == Py_NotImplemented) bad_operand(fn, other);
  return r;
}

// The right operand of an in-place op: a tensor, or a number as a 0-dim tensor.
Tensor in_place_operand(py::handle other, const char* fn) {
  if (py::isinstance<Tensor>(other)) return other.cast<Tensor>();
  if (is_python_number(other)) return full({}, to_scalar(other));
  bad_operand(fn, other);
}

// x itself when it is a Tensor; torch's TypeError naming fn otherwise.
py::object tensor_argument(py::object x, const char* fn) {
  if (!py::isinstance<Tensor>(x)) {
    throw py::type_error(
        str(fn, "(): argument 'input' (position 1) must be Tensor, not ", type_name(x)));
  }
  return x;
}

// div's rounding_mode: None or a str (kept alive by the Python object it views).
std::optional<std::string_view> rounding(py::handle mode) {
  if (mode.is_none()) return std::nullopt;
  if (!py::isinstance<py::str>(mode)) {
    throw py::type_error(
        str("div(): rounding_mode must be None, 'trunc' or 'floor', got a ", type_name(mode)));
  }
  return std::string_view(PyUnicode_AsUTF8(mode.ptr()));
}

// None or a float (nan_to_num's replacements).
std::optional<double> optional_double(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return py::cast<double>(h);
}

void bind_unary(py::module_& m, py::class_<Tensor>& t) {
  struct Unary {
    const char* name;
    Tensor (*fn)(const Tensor&);
  };
  static const Unary kUnary[] = {{"rsqrt", &rsqrt},       {"exp2", &exp2},
                                 {"expm1", &expm1},       {"log1p", &log1p},
                                 {"log2", &log2},         {"log10", &log10},
                                 {"sign", &sign},         {"floor", &floor},
                                 {"ceil", &ceil},         {"trunc", &trunc},
                                 {"fix", &trunc},         {"frac", &frac},
                                 {"isnan", &isnan},       {"isinf", &isinf},
                                 {"isfinite", &isfinite}, {"bitwise_not", &bitwise_not},
                                 {"tan", &tan},           {"erf", &erf},
                                 {"erfinv", &erfinv},     {"lgamma", &lgamma},
                                 {"digamma", &digamma},   {"reciprocal", &reciprocal},
                                 {"square", &square}};
  for (const Unary& u : kUnary) {
    forget(t, u.name);
    forget(m, u.name);
    t.def(u.name, u.fn);
    m.def(u.name, u.fn, py::arg("input"));
  }
  // In place: each through the mutation engine with the Python caller's line.
  struct InPlace {
    const char* name;
    Tensor& (Tensor::*fn)(CallSite);
  };
  static const InPlace kInPlace[] = {{"abs_", &Tensor::abs_},
                                     {"sqrt_", &Tensor::sqrt_},
                                     {"rsqrt_", &Tensor::rsqrt_},
                                     {"log_", &Tensor::log_},
                                     {"log1p_", &Tensor::log1p_},
                                     {"expm1_", &Tensor::expm1_},
                                     {"sign_", &Tensor::sign_},
                                     {"floor_", &Tensor::floor_},
                                     {"ceil_", &Tensor::ceil_},
                                     {"trunc_", &Tensor::trunc_},
                                     {"fix_", &Tensor::trunc_},
                                     {"frac_", &Tensor::frac_},
                                     {"bitwise_not_", &Tensor::bitwise_not_},
                                     {"sin_", &Tensor::sin_},
                                     {"cos_", &Tensor::cos_},
                                     {"tan_", &Tensor::tan_},
                                     {"erf_", &Tensor::erf_},
                                     {"erfinv_", &Tensor::erfinv_},
                                     {"lgamma_", &Tensor::lgamma_},
                                     {"digamma_", &Tensor::digamma_},
                                     {"reciprocal_", &Tensor::reciprocal_},
                                     {"square_", &Tensor::square_}};
  for (const InPlace& f : kInPlace) {
    forget(t, f.name);
    t.def(f.name, [fn = f.fn](Self self) {
      (self.cast<Tensor&>().*fn)(python_call_site());
      return self;
    });
  }
  // polygamma takes the order first, as torch: mutagrad.polygamma(n, x), x.polygamma(n).
  t.def(
      "polygamma", [](const Tensor& x, int64_t n) { return polygamma(n, x); }, py::arg("n"));
  m.def(
      "polygamma", [](int64_t n, const Tensor& x) { return polygamma(n, x); }, py::arg("n"),
      py::arg("input"));
  t.def(
      "polygamma_",
      [](Self self, int64_t n) {
        self.cast<Tensor&>().polygamma_(n, python_call_site());
        return self;
      },
      py::arg("n"));
  // atan2 and torch's alias arctan2 (tensors only, as torch 1.13).
  for (const char* name : {"atan2", "arctan2"}) {
    t.def(
        name, [](const Tensor& a, const Tensor& b) { return atan2(a, b); }, py::arg("other"));
    m.def(
        name, [](const Tensor& a, const Tensor& b) { return atan2(a, b); }, py::arg("input"),
        py::arg("other"));
    t.def(
        str(name, "_").c_str(),
        [](Self self, const Tensor& other) {
          self.cast<Tensor&>().atan2_(other, python_call_site());
          return self;
        },
        py::arg("other"));
  }
  // torch's module-level in-place forms: mutagrad.relu_(x) is x.relu_() (the Tensor method
  // finds the caller's line: no Python frame in between).
  for (const char* name : {"relu_", "sigmoid_", "tanh_", "exp_", "neg_", "abs_", "sqrt_", "sin_",
                           "cos_", "tan_", "erf_", "reciprocal_", "square_"}) {
    forget(m, name);
    m.def(
        name, [name](Self x) { return tensor_argument(x, name).attr(name)(); }, py::arg("input"));
  }
  for (const char* name : {"clamp_", "clip_"}) {
    forget(m, name);
    m.def(
        name,
        [name](Self x, py::handle lo, py::handle hi) {
          return tensor_argument(x, name).attr(name)(lo, hi);
        },
        py::arg("input"), py::arg("min") = py::none(), py::arg("max") = py::none());
  }
  // x.where(condition, y) is where(condition, x, y). A number y (torch 2.x; torch 1.13 wants a
  // tensor) goes through the package's where, which computes in torch's result type.
  t.def(
      "where",
      [](py::object self, const Tensor& cond, py::handle y) -> py::object {
        if (py::isinstance<Tensor>(y)) {
          return py::cast(where(cond, self.cast<Tensor>(), y.cast<Tensor>()));
        }
        if (is_python_number(y)) return package_attr("_conveniences", "where")(cond, self, y);
        throw py::type_error(
            str("where(): argument 'other' must be a Tensor or a number, not ", type_name(y)));
      },
      py::arg("condition"), py::arg("other"));
  t.def(
      "round", [](const Tensor& x, int64_t decimals) { return x.round(decimals); }, py::kw_only(),
      py::arg("decimals") = 0);
  m.def(
      "round", [](const Tensor& x, int64_t decimals) { return x.round(decimals); },
      py::arg("input"), py::kw_only(), py::arg("decimals") = 0);
  t.def(
      "round_",
      [](Self self, int64_t decimals) {
        self.cast<Tensor&>().round_(decimals, python_call_site());
        return self;
      },
      py::kw_only(), py::arg("decimals") = 0);
  auto nan_to_num_fn = [](const Tensor& x, py::handle nan, py::handle posinf, py::handle neginf) {
    return x.nan_to_num(optional_double(nan).value_or(0.0), optional_double(posinf),
                        optional_double(neginf));
  };
  t.def("nan_to_num", nan_to_num_fn, py::arg("nan") = 0.0, py::arg("posinf") = py::none(),
        py::arg("neginf") = py::none());
  m.def("nan_to_num", nan_to_num_fn, py::arg("input"), py::arg("nan") = 0.0,
        py::arg("posinf") = py::none(), py::arg("neginf") = py::none());
  t.def(
      "nan_to_num_",
      [](Self self, py::handle nan, py::handle posinf, py::handle neginf) {
        self.cast<Tensor&>().nan_to_num_(optional_double(nan).value_or(0.0),
                                         optional_double(posinf), optional_double(neginf),
                                         python_call_site());
        return self;
      },
      py::arg("nan") = 0.0, py::arg("posinf") = py::none(), py::arg("neginf") = py::none());
}

void bind_division(py::module_& m, py::class_<Tensor>& t) {
  struct Named {
    const char* name;
    Div op;
  };
  for (const Named& n : {Named{"remainder", Div::kRemainder}, Named{"fmod", Div::kFmod},
                         Named{"floor_divide", Div::kFloor}}) {
    t.def(
        n.name,
        [n](py::handle self, py::handle other) {
          return checked(divide(n.op, self, other, false), n.name, other);
        },
        py::arg("other"));
    m.def(
        n.name,
        [n](py::handle a, py::handle b) { return checked(divide(n.op, a, b, true), n.name, b); },
        py::arg("input"), py::arg("other"));
  }
  t.def("__mod__", [](py::handle a, py::handle b) { return divide(Div::kRemainder, a, b, false); })
      .def("__rmod__",
           [](py::handle a, py::handle b) { return divide(Div::kRemainder, b, a, true); })
      .def("__floordiv__",
           [](py::handle a, py::handle b) { return divide(Div::kFloor, a, b, false); })
      .def("__rfloordiv__",
           [](py::handle a, py::handle b) { return divide(Div::kFloor, b, a, true); });
  // In place (also %= and //=).
  struct InPlace {
    const char* name;
    Tensor& (Tensor::*tensor_fn)(const Tensor&, CallSite);
    Tensor& (Tensor::*scalar_fn)(const Scalar&, CallSite);
  };
  for (const InPlace& f :
       {InPlace{"remainder_", &Tensor::remainder_, &Tensor::remainder_},
        InPlace{"fmod_", &Tensor::fmod_, &Tensor::fmod_},
        InPlace{"floor_divide_", &Tensor::floor_divide_, &Tensor::floor_divide_},
        InPlace{"__imod__", &Tensor::remainder_, &Tensor::remainder_},
        InPlace{"__ifloordiv__", &Tensor::floor_divide_, &Tensor::floor_divide_}}) {
    t.def(f.name, [f](Self self, py::handle other) {
      Tensor& x = self.cast<Tensor&>();
      if (py::isinstance<Tensor>(other)) {
        (x.*f.tensor_fn)(other.cast<Tensor>(), python_call_site());
      } else if (is_python_number(other)) {
        (x.*f.scalar_fn)(to_scalar(other), python_call_site());
      } else {
        bad_operand(f.name, other);
      }
      return self;
    });
  }
  // div / true_divide with rounding_mode (replacing the plain forms bound with the operators).
  auto div_fn = [](py::handle a, py::handle b, py::handle mode) {
    if (!py::isinstance<Tensor>(a)) {
      throw py::type_error(str("div(): the first argument must be a Tensor, got ", type_name(a)));
    }
    const Tensor& x = a.cast<const Tensor&>();
    if (py::isinstance<Tensor>(b)) return div(x, b.cast<Tensor>(), rounding(mode));
    if (is_python_number(b)) return div(x, to_scalar(b), rounding(mode));
    bad_operand("div", b);
  };
  for (const char* name : {"div", "divide", "true_divide"}) {
    forget(t, name);
    forget(m, name);
    t.def(name, div_fn, py::arg("other"), py::kw_only(), py::arg("rounding_mode") = py::none());
    m.def(name, div_fn, py::arg("input"), py::arg("other"), py::kw_only(),
          py::arg("rounding_mode") = py::none());
  }
  forget(t, "div_");
  t.def(
      "div_",
      [](Self self, py::handle other, py::handle mode) {
        Tensor& x = self.cast<Tensor&>();
        if (py::isinstance<Tensor>(other)) {
          x.div_(other.cast<Tensor>(), rounding(mode), python_call_site());
        } else if (is_python_number(other)) {
          x.div_(to_scalar(other), rounding(mode), python_call_site());
        } else {
          bad_operand("div_", other);
        }
        return self;
      },
      py::arg("other"), py::kw_only(), py::arg("rounding_mode") = py::none());
}

void bind_bits(py::module_& m, py::class_<Tensor>& t) {
  struct Named {
    const char* name;
    const char* dunder;
    const char* rdunder;
    const char* idunder;
    BinaryOp op;
    Tensor& (Tensor::*in_place)(const Tensor&, CallSite);
  };
  static const Named kBits[] = {
      {"bitwise_and", "__and__", "__rand__", "__iand__", BinaryOp::kBitwiseAnd,
       &Tensor::bitwise_and_},
      {"bitwise_or", "__or__", "__ror__", "__ior__", BinaryOp::kBitwiseOr, &Tensor::bitwise_or_},
      {"bitwise_xor", "__xor__", "__rxor__", "__ixor__", BinaryOp::kBitwiseXor,
       &Tensor::bitwise_xor_},
      {"bitwise_left_shift", "__lshift__", "__rlshift__", "__ilshift__", BinaryOp::kShiftLeft,
       &Tensor::bitwise_left_shift_},
      {"bitwise_right_shift", "__rshift__", "__rrshift__", "__irshift__", BinaryOp::kShiftRight,
       &Tensor::bitwise_right_shift_}};
  for (const Named& n : kBits) {
    const BinaryOp op = n.op;
    for (const char* name : {n.dunder, n.rdunder, n.idunder}) {
      forget(t, name);
    }
    t.def(n.dunder, [op](py::handle a, py::handle b) { return bit_op(op, a, b); });
    t.def(n.rdunder, [op](py::handle a, py::handle b) { return bit_op(op, b, a); });
    t.def(
        n.name, [n](py::handle a, py::handle b) { return checked(bit_op(n.op, a, b), n.name, b); },
        py::arg("other"));
    m.def(
        n.name, [n](py::handle a, py::handle b) { return checked(bit_op(n.op, a, b), n.name, b); },
        py::arg("input"), py::arg("other"));
    const std::string in_place = str(n.name, "_");
    forget(t, in_place.c_str());
    auto write = [n](Self self, py::handle other) {
      (self.cast<Tensor&>().*n.in_place)(in_place_operand(other, n.name), python_call_site());
      return self;
    };
    t.def(in_place.c_str(), write, py::arg("other"));
    t.def(n.idunder, write);
  }
  forget(t, "__invert__");
  t.def("__invert__", [](const Tensor& x) {
    if (x.is_floating_point()) {  // torch's TypeError for the operator (bitwise_not: Runtime)
      throw py::type_error(
          str("~ (operator.invert) is only implemented on integer and "
              "Boolean-type tensors, got a ",
              dtype_name(x.dtype()), " tensor; use logical_not() or -x"));
    }
    return bitwise_not(x);
  });
  t.def(
      "logical_xor", [](const Tensor& a, const Tensor& b) { return logical_xor(a, b); },
      py::arg("other"));
  m.def(
      "logical_xor", [](const Tensor& a, const Tensor& b) { return logical_xor(a, b); },
      py::arg("input"), py::arg("other"));
}

}  // namespace

void bind_math(py::module_& m) {
  auto t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  bind_unary(m, t);
  bind_division(m, t);
  bind_bits(m, t);
}

}  // namespace mutagrad::python
