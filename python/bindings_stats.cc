// Reductions with torch's Python signatures (autograd/ops/reduce_ops.h, statistics_ops.h):
// sum/mean/prod with dtype=, cumsum/cumprod, all/any, count_nonzero, var/std (unbiased or
// correction=), norm (p a number, inf or "fro"), logsumexp, amax/amin, clamp_min/clamp_max,
// isclose/allclose/equal; as Tensor methods and mutagrad.f module functions.
#include <cmath>
#include <limits>
#include <string>

#include "autograd/ops/inplace_ops.h"
#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

// dtype= of a reduction: the input converted first (differentiably), as torch's sum(dtype=).
Tensor with_dtype(const Tensor& x, py::handle dtype) {
  const std::optional<ScalarType> d = to_dtype(dtype);
  return d && *d != x.dtype() ? x.to(*d) : x;
}

// A dim argument that may be None (every dim): an empty list.
DimVector dims_or_all(py::handle dim) { return dim.is_none() ? DimVector() : dims_from(dim); }

// var/std's arguments: (dim=None, unbiased=None, keepdim=False, *, correction=None), where a
// bool in dim's place is the legacy unbiased (torch.var(x, False)).
double correction_of(py::handle unbiased, py::handle correction, const char* fn) {
  if (!correction.is_none() && !unbiased.is_none()) {
    throw py::type_error(str(fn, "(): pass either unbiased or correction, not both"));
  }
  if (!correction.is_none()) return py::cast<double>(correction);
  if (!unbiased.is_none()) return py::cast<bool>(unbiased) ? 1.0 : 0.0;
  return 1.0;
}

Tensor variance(const Tensor& x, py::handle dim, py::handle unbiased, bool keepdim,
                py::handle correction, bool is_std) {
  const char* fn = is_std ? "std" : "var";
  if (PyBool_Check(dim.ptr())) {  // var(x, unbiased)
    return is_std ? x.std({}, py::cast<bool>(dim) ? 1.0 : 0.0, keepdim)
                  : x.var({}, py::cast<bool>(dim) ? 1.0 : 0.0, keepdim);
  }
  const double c = correction_of(unbiased, correction, fn);
  const DimVector dims = dims_or_all(dim);
  return is_std ? x.std(dims, c, keepdim) : x.var(dims, c, keepdim);
}

// norm's p: a number, inf, or "fro" (2 over every dim, or the Frobenius norm over `dim`).
Tensor norm_of(const Tensor& x, py::handle p, py::handle dim, bool keepdim, py::handle dtype) {
  const Tensor in = with_dtype(x, dtype);
  double order = 2.0;
  if (py::isinstance<py::str>(p)) {
    const std::string s = py::cast<std::string>(p);
    if (s != "fro") {
      throw ValueError(str("norm(): p='", s,
                           "' is not supported (mutagrad has no matrix norms other than 'fro'); "
                           "use p='fro' or a number"));
    }
    const DimVector dims = dims_or_all(dim);
    if (dims.size() > 2) {
      throw ShapeError(
          str("norm(): p='fro' is a vector or matrix norm: Expected at most 2 "
              "dimensions, but got ",
              dims.size(), " dimensions instead; pass one or two dims"));
    }
    if (dims.size() == 2) {  // PyTorch 1.13: sqrt(sum(x * x)) over the two dims (SqrtBackward0)
      return sqrt(sum(in * in, dims, keepdim));
    }
  } else if (!p.is_none()) {
    order = py::cast<double>(p);
  }
  return in.norm(order, dims_or_all(dim), keepdim);
}

}  // namespace

void bind_stats(py::module_& m) {
  auto t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  struct Reduction {
    const char* name;
    Tensor (Tensor::*all)() const;
    Tensor (Tensor::*dims)(IntArrayRef, bool) const;
  };
  for (const Reduction& r : {Reduction{"sum", &Tensor::sum, &Tensor::sum},
                             Reduction{"mean", &Tensor::mean, &Tensor::mean},
                             Reduction{"prod", &Tensor::prod, &Tensor::prod}}) {
    def_both(
        m, t, r.name,
        [r](const Tensor& x, py::handle dim, bool keepdim, py::handle dtype) {
          const Tensor in = with_dtype(x, dtype);
          const Tensor out = dim.is_none() ? (in.*r.all)() : (in.*r.dims)(dims_from(dim), keepdim);
          // sum/prod of integers widen to int64; with dtype= torch keeps that dtype.
          return dtype.is_none() || out.dtype() == in.dtype() ? out : out.to(in.dtype());
        },
        py::arg("dim") = py::none(), py::arg("keepdim") = false, py::kw_only(),
        py::arg("dtype") = py::none());
  }
  for (auto [name, is_prod] : {std::pair{"cumsum", false}, std::pair{"cumprod", true}}) {
    def_both(
        m, t, name,
        [is_prod = is_prod](const Tensor& x, int64_t dim, py::handle dtype) {
          const std::optional<ScalarType> d = to_dtype(dtype);
          return is_prod ? x.cumprod(dim, d) : x.cumsum(dim, d);
        },
        py::arg("dim"), py::kw_only(), py::arg("dtype") = py::none());
    const std::string in_place = str(name, "_");
    forget(t, in_place.c_str());
    t.def(
        in_place.c_str(),
        [is_prod = is_prod](py::object self, int64_t dim, py::handle dtype) {
          Tensor& x = self.cast<Tensor&>();
          const std::optional<ScalarType> d = to_dtype(dtype);
          const CallSite site = python_call_site();
          const Tensor result = is_prod ? x.cumprod(dim, d) : x.cumsum(dim, d);
          autograd::copy_(x, result,
                          MutationSite{is_prod ? "cumprod_" : "cumsum_", site.file, site.line});
          return self;
        },
        py::arg("dim"), py::kw_only(), py::arg("dtype") = py::none());
  }
  for (auto [name, is_all] : {std::pair{"all", true}, std::pair{"any", false}}) {
    def_both(
        m, t, name,
        [is_all = is_all](const Tensor& x, py::handle dim, bool keepdim) {
          if (dim.is_none()) return is_all ? x.all() : x.any();
          const int64_t d = py::cast<int64_t>(dim);
          return is_all ? x.all(d, keepdim) : x.any(d, keepdim);
        },
        py::arg("dim") = py::none(), py::arg("keepdim") = false);
  }
  def_both(
      m, t, "count_nonzero",
      [](const Tensor& x, py::handle dim) { return x.count_nonzero(dims_or_all(dim)); },
      py::arg("dim") = py::none());
  for (auto [name, is_std] : {std::pair{"var", false}, std::pair{"std", true}}) {
    def_both(
        m, t, name,
        [is_std = is_std](const Tensor& x, py::handle dim, py::handle unbiased, bool keepdim,
                          py::handle correction) {
          return variance(x, dim, unbiased, keepdim, correction, is_std);
        },
        py::arg("dim") = py::none(), py::arg("unbiased") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("correction") = py::none());
  }
  def_both(m, t, "norm", &norm_of, py::arg("p") = "fro", py::arg("dim") = py::none(),
           py::arg("keepdim") = false, py::arg("dtype") = py::none());
  def_both(
      m, t, "logsumexp",
      [](const Tensor& x, py::handle dim, bool keepdim) {
        return x.logsumexp(dims_from(dim), keepdim);
      },
      py::arg("dim"), py::arg("keepdim") = false);
  for (auto [name, is_max] : {std::pair{"amax", true}, std::pair{"amin", false}}) {
    def_both(
        m, t, name,
        [is_max = is_max](const Tensor& x, py::handle dim, bool keepdim) {
          const DimVector dims = dims_or_all(dim);
          return is_max ? amax(x, dims, keepdim) : amin(x, dims, keepdim);
        },
        py::arg("dim") = py::tuple(), py::arg("keepdim") = false);
  }
  for (auto [name, is_min] : {std::pair{"clamp_min", true}, std::pair{"clamp_max", false}}) {
    def_both(
        m, t, name,
        [is_min = is_min](const Tensor& x, py::handle bound) {
          return is_min ? clamp_min(x, to_scalar(bound)) : clamp_max(x, to_scalar(bound));
        },
        py::arg(is_min ? "min" : "max"));
    const std::string in_place = str(name, "_");
    forget(t, in_place.c_str());
    t.def(
        in_place.c_str(),
        [is_min = is_min](py::object self, py::handle bound) {
          Tensor& x = self.cast<Tensor&>();
          if (is_min) {
            x.clamp_min_(to_scalar(bound), python_call_site());
          } else {
            x.clamp_max_(to_scalar(bound), python_call_site());
          }
          return self;
        },
        py::arg(is_min ? "min" : "max"));
  }
  // clamp / clip with numbers or tensors as bounds (ClampBackward1 / ClampBackward0).
  for (const char* name : {"clamp", "clip"}) {
    def_both(
        m, t, name,
        [](const Tensor& x, py::handle lo, py::handle hi) {
          if (py::isinstance<Tensor>(lo) || py::isinstance<Tensor>(hi)) {
            auto bound = [&x](py::handle b) {
              if (b.is_none()) return Tensor();
              if (py::isinstance<Tensor>(b)) return b.cast<Tensor>();
              return full({}, to_scalar(b), std::nullopt, x.device());
            };
            return clamp(x, bound(lo), bound(hi));
          }
          return x.clamp(optional_scalar(lo), optional_scalar(hi));
        },
        py::arg("min") = py::none(), py::arg("max") = py::none());
  }
  def_both(
      m, t, "isclose",
      [](const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
        return isclose(a, b, rtol, atol, equal_nan);
      },
      py::arg("other"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8,
      py::arg("equal_nan") = false);
  def_both(
      m, t, "allclose",
      [](const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
        return allclose(a, b, rtol, atol, equal_nan);
      },
      py::arg("other"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8,
      py::arg("equal_nan") = false);
  def_both(
      m, t, "equal", [](const Tensor& a, const Tensor& b) { return equal(a, b); },
      py::arg("other"));
}

}  // namespace mutagrad::python
