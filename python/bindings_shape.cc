// Products and shape helpers (autograd/ops/products_ops.h, shape_ops.h) as Tensor methods and
// module functions with torch's names, signatures and keywords: x.mm(y), mutagrad.einsum(
// "ij,jk", a, b), mutagrad.addmm(c, a, b, beta=0.5), x.flip(0, 1), x.roll(1, dims=0),
// x.repeat(2, 3), mutagrad.linspace(0, 1, 5, dtype=mutagrad.float64), x.t_(). In-place forms
// take the Python caller's file:line as their call site.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

using Self = py::object;  // in-place methods return the same Python object, as torch

std::string type_name(py::handle h) { return py::str(h.get_type().attr("__name__")); }

Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// Sizes given as varargs (x.repeat(2, 3)), one sequence (x.repeat((2, 3))) or the keyword
// `arg` (x.repeat(repeats=(2, 3))); TypeError when missing, as torch.
DimVector int_list(const py::args& args, const py::kwargs& kwargs, const char* fn,
                   const char* arg) {
  if (kwargs.contains(arg)) {
    if (args.size() > 0 || kwargs.size() > 1) {
      throw py::type_error(str(fn, "() got an unexpected combination of arguments; pass ", arg,
                               " once, as positional ints or as ", arg, "="));
    }
    return sizes_from(kwargs[arg], fn, arg);
  }
  if (kwargs.size() > 0) {
    throw py::type_error(str(fn, "() got an unexpected keyword argument '",
                             std::string(py::str(kwargs.begin()->first)), "'"));
  }
  if (args.size() == 0) {
    throw py::type_error(str(fn, "() missing 1 required positional arguments: \"", arg, "\""));
  }
  return sizes_from_args(args, fn, arg);
}

// A sequence of ints only (torch.flip(x, dims), torch.tile(x, dims): no bare int).
DimVector int_sequence(py::handle h, const char* fn, const char* arg, size_t position) {
  if (!py::isinstance<py::sequence>(h)) {
    throw py::type_error(str(fn, "(): argument '", arg, "' (position ", position,
                             ") must be tuple of ints, not ", type_name(h)));
  }
  return sizes_from(h, fn, arg);
}

// roll's shifts and dims: an int or a sequence of ints (dims also None).
DimVector int_or_ints(py::handle h, const char* fn, const char* arg) {
  if (h.is_none()) return {};
  if (PyFloat_Check(h.ptr())) {
    throw py::type_error(str(fn, "(): argument '", arg, "' must be tuple of ints, not float"));
  }
  return sizes_from(h, fn, arg);
}

// linspace/logspace's start and end: a number, or a one-element tensor (as torch 1.13).
Scalar number_or_item(py::handle h) {
  if (py::isinstance<Tensor>(h)) return h.cast<const Tensor&>().item();
  return to_scalar(h);
}

TensorOptions factory_options(py::handle dtype, py::handle device, const char* fn) {
  return TensorOptions(to_dtype(dtype).value_or(default_dtype()))
      .device(to_device(device, fn).value_or(kCPU));
}

void bind_products(py::module_& m, py::class_<Tensor>& t) {
  struct Binary {
    const char* name;
    const char* arg;  // the second argument's keyword, as torch's
    Tensor (*fn)(const Tensor&, const Tensor&);
  };
  static const Binary kBinary[] = {{"mm", "mat2", &mm},        {"bmm", "mat2", &bmm},
                                   {"mv", "vec", &mv},         {"dot", "tensor", &dot},
                                   {"inner", "other", &inner}, {"outer", "vec2", &outer},
                                   {"ger", "vec2", &outer}};  // torch's old name of outer
  for (const Binary& b : kBinary) {
    forget(t, b.name);
    forget(m, b.name);
    t.def(b.name, b.fn, py::arg(b.arg));
    m.def(b.name, b.fn, py::arg("input"), py::arg(b.arg));
  }
  auto addmm_fn = [](const Tensor& self, const Tensor& mat1, const Tensor& mat2, py::handle beta,
                     py::handle alpha) {
    return addmm(self, mat1, mat2, to_scalar(beta), to_scalar(alpha));
  };
  t.def("addmm", addmm_fn, py::arg("mat1"), py::arg("mat2"), py::kw_only(), py::arg("beta") = 1,
        py::arg("alpha") = 1);
  m.def("addmm", addmm_fn, py::arg("input"), py::arg("mat1"), py::arg("mat2"), py::kw_only(),
        py::arg("beta") = 1, py::arg("alpha") = 1);
  m.def("einsum", [](py::args args) {
    if (args.size() < 2) {
      throw py::value_error(
          "einsum(): must specify the equation string and at least one operand, or at least "
          "one operand and its subscripts list");
    }
    std::vector<Tensor> operands;
    if (!py::isinstance<py::str>(args[0])) {
      // The sublist format: einsum(op1, [0, 1], op2, [1, 2], [0, 2]); subscripts 0-25 are
      // A-Z, 26-51 a-z, Ellipsis is "...", as torch.
      auto subscripts = [](py::handle list) {
        std::string out;
        for (py::handle h : list) {
          if (h.is(py::ellipsis())) {
            out += "...";
            continue;
          }
          const int64_t k = h.cast<int64_t>();
          if (k < 0 || k >= 52) {
            throw py::value_error(str("einsum(): subscript ", k,
                                      " in a subscript list is not within the valid range "
                                      "[0, 52); use at most 52 distinct subscripts"));
          }
          out += static_cast<char>(k < 26 ? 'A' + k : 'a' + (k - 26));
        }
        return out;
      };
      std::string equation;
      size_t i = 0;
      for (; i + 1 < args.size(); i += 2) {
        if (!py::isinstance<Tensor>(args[i])) {
          throw py::type_error(str("einsum(): in the sublist format, argument ", i,
                                   " must be a tensor, got ", type_name(args[i])));
        }
        operands.push_back(args[i].cast<Tensor>());
        equation += (i == 0 ? "" : ",") + subscripts(args[i + 1]);
      }
      if (i < args.size()) equation += "->" + subscripts(args[i]);
      return einsum(equation, operands);
    }
    const std::string equation = args[0].cast<std::string>();
    if (args.size() == 2 &&
        (py::isinstance<py::list>(args[1]) || py::isinstance<py::tuple>(args[1]))) {
      for (py::handle h : args[1]) operands.push_back(h.cast<Tensor>());
    } else {
      for (size_t i = 1; i < args.size(); ++i) operands.push_back(args[i].cast<Tensor>());
    }
    return einsum(equation, operands);
  });
}

void bind_shapes(py::module_& m, py::class_<Tensor>& t) {
  t.def("flip", [](const Tensor& s, py::args args, py::kwargs kwargs) {
    return s.flip(int_list(args, kwargs, "flip", "dims"));
  });
  m.def(
      "flip",
      [](const Tensor& s, py::handle dims) {
        return s.flip(int_sequence(dims, "flip", "dims", 2));
      },
      py::arg("input"), py::arg("dims"));
  for (const char* name : {"fliplr", "flipud"}) {
    const bool lr = name[4] == 'l';
    t.def(name, [lr](const Tensor& s) { return lr ? s.fliplr() : s.flipud(); });
    m.def(
        name, [lr](const Tensor& s) { return lr ? s.fliplr() : s.flipud(); }, py::arg("input"));
  }
  auto roll_fn = [](const Tensor& s, py::handle shifts, py::handle dims) {
    return s.roll(int_or_ints(shifts, "roll", "shifts"), int_or_ints(dims, "roll", "dims"));
  };
  t.def("roll", roll_fn, py::arg("shifts"), py::arg("dims") = py::none());
  m.def("roll", roll_fn, py::arg("input"), py::arg("shifts"), py::arg("dims") = py::none());
  t.def("repeat", [](const Tensor& s, py::args args, py::kwargs kwargs) {
    return s.repeat(int_list(args, kwargs, "repeat", "repeats"));
  });
  t.def("tile", [](const Tensor& s, py::args args, py::kwargs kwargs) {
    return s.tile(int_list(args, kwargs, "tile", "dims"));
  });
  m.def(
      "tile",
      [](const Tensor& s, py::handle dims) {
        return s.tile(int_sequence(dims, "tile", "dims", 2));
      },
      py::arg("input"), py::arg("dims"));
  struct Triangle {
    const char* name;
    Tensor (*fn)(const Tensor&, int64_t);
    Tensor& (Tensor::*in_place)(int64_t, CallSite);
  };
  for (const Triangle& tr :
       {Triangle{"tril", &tril, &Tensor::tril_}, Triangle{"triu", &triu, &Tensor::triu_}}) {
    t.def(tr.name, tr.fn, py::arg("diagonal") = 0);
    m.def(tr.name, tr.fn, py::arg("input"), py::arg("diagonal") = 0);
    t.def(
        str(tr.name, "_").c_str(),
        [tr](Self self, int64_t diagonal) {
          (self.cast<Tensor&>().*tr.in_place)(diagonal, python_call_site());
          return self;
        },
        py::arg("diagonal") = 0);
  }
  t.def("diag", &Tensor::diag, py::arg("diagonal") = 0);
  m.def("diag", &diag, py::arg("input"), py::arg("diagonal") = 0);
  t.def("diag_embed", &Tensor::diag_embed, py::arg("offset") = 0, py::arg("dim1") = -2,
        py::arg("dim2") = -1);
  m.def("diag_embed", &diag_embed, py::arg("input"), py::arg("offset") = 0, py::arg("dim1") = -2,
        py::arg("dim2") = -1);
}

void bind_factories(py::module_& m) {
  m.def(
      "eye",
      [](int64_t n, std::optional<int64_t> cols, py::handle dtype, py::handle device,
         bool requires_grad) {
        return finish(eye(n, cols, factory_options(dtype, device, "eye")), requires_grad);
      },
      py::arg("n"), py::arg("m") = py::none(), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def(
      "linspace",
      [](py::handle start, py::handle end, int64_t steps, py::handle dtype, py::handle device,
         bool requires_grad) {
        return finish(linspace(number_or_item(start), number_or_item(end), steps,
                               factory_options(dtype, device, "linspace")),
                      requires_grad);
      },
      py::arg("start"), py::arg("end"), py::arg("steps"), py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  m.def(
      "logspace",
      [](py::handle start, py::handle end, int64_t steps, double base, py::handle dtype,
         py::handle device, bool requires_grad) {
        return finish(logspace(number_or_item(start), number_or_item(end), steps, base,
                               factory_options(dtype, device, "logspace")),
                      requires_grad);
      },
      py::arg("start"), py::arg("end"), py::arg("steps"), py::arg("base") = 10.0, py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
}

void bind_view_ops_in_place(py::class_<Tensor>& t) {
  t.def("t_", [](Self self) {
    self.cast<Tensor&>().t_(python_call_site());
    return self;
  });
  t.def(
      "transpose_",
      [](Self self, int64_t dim0, int64_t dim1) {
        self.cast<Tensor&>().transpose_(dim0, dim1, python_call_site());
        return self;
      },
      py::arg("dim0"), py::arg("dim1"));
  t.def(
      "unsqueeze_",
      [](Self self, int64_t dim) {
        self.cast<Tensor&>().unsqueeze_(dim, python_call_site());
        return self;
      },
      py::arg("dim"));
  t.def(
      "squeeze_",
      [](Self self, std::optional<int64_t> dim) {
        Tensor& x = self.cast<Tensor&>();
        if (dim) {
          x.squeeze_(*dim, python_call_site());
        } else {
          x.squeeze_(python_call_site());
        }
        return self;
      },
      py::arg("dim") = py::none());
  t.def(
      "as_strided_",
      [](Self self, py::handle size, py::handle stride, std::optional<int64_t> offset) {
        self.cast<Tensor&>().as_strided_(sizes_from(size, "as_strided_", "size"),
                                         sizes_from(stride, "as_strided_", "stride"), offset,
                                         python_call_site());
        return self;
      },
      py::arg("size"), py::arg("stride"), py::arg("storage_offset") = py::none());
}

// unfold, unflatten (views), trace, repeat_interleave, kron, cross, cdist, meshgrid and
// fill_diagonal_ (autograd/ops/view_ops.h, composite_ops.h).
void bind_composites(py::module_& m, py::class_<Tensor>& t) {
  t.def("unfold", &Tensor::unfold, py::arg("dimension"), py::arg("size"), py::arg("step"));
  auto unflatten_fn = [](const Tensor& x, int64_t dim, py::handle sizes) {
    if (!py::isinstance<py::sequence>(sizes)) {
      throw py::type_error(
          str("unflatten(): argument 'sizes' must be tuple of ints, not ", type_name(sizes)));
    }
    return x.unflatten(dim, dims_from(sizes));
  };
  t.def("unflatten", unflatten_fn, py::arg("dim"), py::arg("sizes"));
  m.def("unflatten", unflatten_fn, py::arg("input"), py::arg("dim"), py::arg("sizes"));
  t.def("trace", &Tensor::trace);
  m.def(
      "trace", [](const Tensor& x) { return trace(x); }, py::arg("input"));
  // repeats: an int or a tensor; torch.repeat_interleave(repeats) alone gives the positions.
  auto repeat_interleave_fn = [](const Tensor& x, py::handle repeats, std::optional<int64_t> dim,
                                 std::optional<int64_t> output_size) {
    if (repeats.is_none()) return repeat_interleave(x, output_size);
    if (py::isinstance<Tensor>(repeats)) {
      return repeat_interleave(x, repeats.cast<Tensor>(), dim, output_size);
    }
    if (!py::isinstance<py::int_>(repeats) || py::isinstance<py::bool_>(repeats)) {
      throw py::type_error(
          str("repeat_interleave(): argument 'repeats' must be Tensor or int, not ",
              type_name(repeats)));
    }
    return repeat_interleave(x, repeats.cast<int64_t>(), dim, output_size);
  };
  t.def("repeat_interleave", repeat_interleave_fn, py::arg("repeats"), py::arg("dim") = py::none(),
        py::kw_only(), py::arg("output_size") = py::none());
  m.def("repeat_interleave", repeat_interleave_fn, py::arg("input"),
        py::arg("repeats") = py::none(), py::arg("dim") = py::none(), py::kw_only(),
        py::arg("output_size") = py::none());
  t.def("kron", &Tensor::kron, py::arg("other"));
  m.def(
      "kron", [](const Tensor& a, const Tensor& b) { return kron(a, b); }, py::arg("input"),
      py::arg("other"));
  t.def("cross", &Tensor::cross, py::arg("other"), py::arg("dim") = py::none());
  m.def(
      "cross",
      [](const Tensor& a, const Tensor& b, std::optional<int64_t> dim) { return cross(a, b, dim); },
      py::arg("input"), py::arg("other"), py::arg("dim") = py::none());
  m.def(
      "cdist",
      [](const Tensor& x1, const Tensor& x2, double p, const std::string& compute_mode) {
        // Accepted as torch's; the distances are always computed directly (docs/python.md).
        if (compute_mode != "use_mm_for_euclid_dist_if_necessary" &&
            compute_mode != "use_mm_for_euclid_dist" &&
            compute_mode != "donot_use_mm_for_euclid_dist") {
          throw py::value_error(str(compute_mode, " is not a valid value for compute_mode"));
        }
        return cdist(x1, x2, p);
      },
      py::arg("x1"), py::arg("x2"), py::arg("p") = 2.0,
      py::arg("compute_mode") = "use_mm_for_euclid_dist_if_necessary");
  // meshgrid(*tensors) or meshgrid(list); without indexing=, "ij" with torch 1.13's warning.
  m.def("meshgrid", [](py::args args, py::kwargs kwargs) {
    py::object indexing = py::none();
    for (auto item : kwargs) {
      if (std::string(py::str(item.first)) != "indexing") {
        throw py::type_error(str("meshgrid() got an unexpected keyword argument '",
                                 std::string(py::str(item.first)), "'"));
      }
      indexing = py::reinterpret_borrow<py::object>(item.second);
    }
    std::vector<Tensor> tensors;
    const bool one_list = args.size() == 1 && !py::isinstance<Tensor>(args[0]);
    const py::sequence items =
        one_list ? py::reinterpret_borrow<py::sequence>(args[0]) : py::sequence(args);
    for (py::handle h : items) {
      tensors.push_back(h.cast<Tensor>());
    }
    if (indexing.is_none()) {
      if (PyErr_WarnEx(PyExc_UserWarning,
                       "torch.meshgrid: in an upcoming release, it will be required to pass the "
                       "indexing argument.",
                       1) != 0) {
        throw py::error_already_set();
      }
    }
    const std::string mode = indexing.is_none() ? "ij" : indexing.cast<std::string>();
    const std::vector<Tensor> grids = meshgrid(tensors, mode);
    py::tuple out(grids.size());
    for (size_t i = 0; i < grids.size(); ++i) out[i] = py::cast(grids[i]);
    return out;
  });
  t.def(
      "fill_diagonal_",
      [](Self self, py::handle value, bool wrap) {
        self.cast<Tensor&>().fill_diagonal_(to_scalar(value), wrap, python_call_site());
        return self;
      },
      py::arg("fill_value"), py::arg("wrap") = false);
}

}  // namespace

void bind_shape(py::module_& m) {
  auto t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  bind_products(m, t);
  bind_shapes(m, t);
  bind_factories(m);
  bind_view_ops_in_place(t);
  bind_composites(m, t);
}

}  // namespace mutagrad::python
