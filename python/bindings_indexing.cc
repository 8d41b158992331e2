// x[idx] and x[idx] = v from Python: translates the Python subscript into a TensorIndex list
// the way torch does (int, slice, Ellipsis, None, bool, Tensor, lists and NumPy arrays as index
// tensors, tuples) and calls the C++ get_item / set_item_. No indexing logic lives here.
#include <vector>

#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

using indexing::Slice;
using indexing::TensorIndex;

std::optional<int64_t> slice_bound(py::handle h) {
  if (h.is_none()) return std::nullopt;
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>().item<int64_t>();
  return py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr())).cast<int64_t>();
}

TensorIndex to_tensor_index(py::handle h) {
  PyObject* p = h.ptr();
  if (p == Py_None) return TensorIndex(indexing::None);
  if (p == Py_Ellipsis) return TensorIndex(indexing::Ellipsis);
  if (PyBool_Check(p)) return TensorIndex(p == Py_True);
  if (PyLong_Check(p)) return TensorIndex(h.cast<int64_t>());
  if (PySlice_Check(p)) {
    auto* s = reinterpret_cast<PySliceObject*>(p);
    return TensorIndex(Slice(slice_bound(s->start), slice_bound(s->stop), slice_bound(s->step)));
  }
  if (py::isinstance<Tensor>(h)) return TensorIndex(h.cast<Tensor>());
  py::module_ np = py::module_::import("numpy");
  if (py::isinstance(h, np.attr("bool_"))) return TensorIndex(h.cast<bool>());
  if (py::isinstance(h, np.attr("integer"))) return TensorIndex(h.attr("item")().cast<int64_t>());
  if (py::isinstance<py::array>(h) || py::isinstance<py::list>(h)) {
    Tensor t = tensor_from_data(h, std::nullopt);
    if (t.numel() == 0 && t.dtype() == kFloat32) t = native::to(t, kInt64);  // x[[]]
    return TensorIndex(t);
  }
  throw IndexError(
      str("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
          "Variables are valid indices (got ",
          std::string(py::str(h.get_type().attr("__name__"))), ")"));
}

std::vector<TensorIndex> to_index_list(py::handle index) {
  std::vector<TensorIndex> out;
  if (PyTuple_Check(index.ptr())) {
    for (py::handle h : index) out.push_back(to_tensor_index(h));
  } else {
    out.push_back(to_tensor_index(index));
  }
  return out;
}

}  // namespace

void bind_indexing(py::module_& m) {
  auto tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor.def("__getitem__",
             [](const Tensor& self, py::handle index) { return self.index(to_index_list(index)); });
  tensor.def("__setitem__", [](Tensor& self, py::handle index, py::handle value) {
    std::vector<TensorIndex> indices = to_index_list(index);
    CallSite site = python_call_site();
    if (py::isinstance<Tensor>(value)) {
      self.set_item_(indices, value.cast<Tensor>(), site);
    } else if (is_python_number(value)) {
      self.set_item_(indices, to_scalar(value), site);
    } else {
      self.set_item_(indices, tensor_from_data(value, self.dtype()), site);
    }
  });
  tensor.def(
      "index_put_",
      [](Tensor& self, py::handle indices, const Tensor& values, bool accumulate) {
        std::vector<Tensor> list;
        for (py::handle h : indices) {
          list.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
        }
        return self.index_put_(list, values, accumulate, python_call_site());
      },
      py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);
  tensor.def(
      "index_put",
      [](const Tensor& self, py::handle indices, const Tensor& values, bool accumulate) {
        std::vector<Tensor> list;
        for (py::handle h : indices) list.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
        Tensor out = self.clone();
        out.index_put_(list, values, accumulate, python_call_site());
        return out;
      },
      py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);
}

}  // namespace mutagrad::python
