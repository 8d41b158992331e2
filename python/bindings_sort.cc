// Sorting and search with torch's Python signatures (autograd/ops/sort_ops.h): sort, argsort,
// msort, topk, kthvalue (values/indices pairs as mutagrad.return_types), unique, bincount, as
// Tensor methods and mutagrad.f module functions; searchsorted as a module function.
#include <pybind11/stl.h>

#include <string>

#include "autograd/ops/sort_ops.h"
#include "python/bindings.h"

namespace mutagrad::python {
namespace {

py::object pair(const char* name, const std::pair<Tensor, Tensor>& p) {
  return package_attr("return_types", name)(p.first, p.second);
}

// searchsorted's values: a tensor, or a Python number as a 0-dim tensor (torch's Scalar form,
// which promotes as a wrapped number: the sequence's kind decides).
Tensor search_values(const Tensor& seq, py::handle values) {
  if (py::isinstance<Tensor>(values)) return values.cast<Tensor>();
  const Scalar s = to_scalar(values);
  const ScalarType dtype = native::result_type(seq, s);
  return full({}, s, dtype, seq.device());
}

}  // namespace

void bind_sort(py::module_& m) {
  auto t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  def_both(
      m, t, "sort",
      [](const Tensor& x, int64_t dim, bool descending, std::optional<bool> stable) {
        return pair("sort", mutagrad::sort(x, dim, descending, stable));
      },
      py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
      py::arg("stable") = py::none());
  def_both(
      m, t, "argsort",
      [](const Tensor& x, int64_t dim, bool descending, bool stable) {
        return mutagrad::argsort(x, dim, descending, stable);
      },
      py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(), py::arg("stable") = false);
  def_both(m, t, "msort", [](const Tensor& x) { return mutagrad::msort(x); });
  def_both(
      m, t, "topk",
      [](const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
        return pair("topk", mutagrad::topk(x, k, dim, largest, sorted));
      },
      py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, py::arg("sorted") = true);
  def_both(
      m, t, "kthvalue",
      [](const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
        return pair("kthvalue", mutagrad::kthvalue(x, k, dim, keepdim));
      },
      py::arg("k"), py::arg("dim") = -1, py::arg("keepdim") = false);
  def_both(
      m, t, "unique",
      [](const Tensor& x, bool /*sorted: always*/, bool return_inverse, bool return_counts,
         py::handle dim) -> py::object {
        if (!dim.is_none()) {
          throw ValueError(
              "unique(): dim= is not supported by mutagrad (only the flattened form, dim=None); "
              "flatten the slices you compare into rows of a 1-D key first");
        }
        auto [values, inverse, counts] = mutagrad::unique(x);
        if (!return_inverse && !return_counts) return py::cast(values);
        if (return_inverse && return_counts) return py::make_tuple(values, inverse, counts);
        return py::make_tuple(values, return_inverse ? inverse : counts);
      },
      py::arg("sorted") = true, py::arg("return_inverse") = false, py::arg("return_counts") = false,
      py::arg("dim") = py::none());
  def_both(
      m, t, "bincount",
      [](const Tensor& x, std::optional<Tensor> weights, int64_t minlength) {
        return mutagrad::bincount(x, weights, minlength);
      },
      py::arg("weights") = py::none(), py::arg("minlength") = 0);
  forget(m, "searchsorted");
  m.def(
      "searchsorted",
      [](const Tensor& seq, py::handle values, bool out_int32, bool right,
         std::optional<std::string> side, py::handle sorter) {
        if (!sorter.is_none()) {
          throw ValueError(
              "searchsorted(): sorter= is not supported by mutagrad; pass the sorted "
              "sequence itself (sorted_sequence.gather(-1, sorter))");
        }
        if (side) {
          if (*side != "left" && *side != "right") {
            throw ValueError(
                str("searchsorted(): side can only be 'left' or 'right' but got ", *side));
          }
          if (right && *side == "left") {
            throw ValueError(
                "searchsorted(): side and right can't be set to opposites, got side of left "
                "while right was True");
          }
          right = *side == "right";
        }
        return mutagrad::searchsorted(seq, search_values(seq, values), out_int32, right);
      },
      py::arg("sorted_sequence"), py::arg("input"), py::kw_only(), py::arg("out_int32") = false,
      py::arg("right") = false, py::arg("side") = py::none(), py::arg("sorter") = py::none());
}

}  // namespace mutagrad::python
