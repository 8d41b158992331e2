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

constexpr const char* kOutOfRangeIndex =
    ", so it is out of range as an index (the valid indices of a dim of size n are in [-n, n - 1])";

std::optional<int64_t> slice_bound(py::handle h) {
  if (h.is_none()) return std::nullopt;
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>().item<int64_t>();
  // __index__ (TypeError for a float); an int outside int64 is clamped to it, as Python and
  // torch clamp slice bounds (x[1:2**70] is x[1:]).
  Py_ssize_t bound = PyNumber_AsSsize_t(h.ptr(), nullptr);
  if (bound == -1 && PyErr_Occurred()) throw py::error_already_set();
  return static_cast<int64_t>(bound);
}

// An int or NumPy integer index; IndexOverflow (IndexError and RuntimeError, which torch
// raises) outside int64.
int64_t int_index(py::handle h) {
  if (is_int64_overflow(h)) {
    throw IndexOverflow(int_overflow_message(h) + kOutOfRangeIndex);
  }
  auto index = py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr()));
  if (!index) throw py::error_already_set();
  return index.cast<int64_t>();
}

// `device`: the indexed tensor's. A list or array becomes an index tensor there, as torch makes
// it with the tensor's options: x_cuda[..., [True]] = tensor(1.5) is then torch's masked fill
// (a mask on x's device), which converts the value's dtype.
TensorIndex to_tensor_index(py::handle h, Device device) {
  PyObject* p = h.ptr();
  if (p == Py_None) return TensorIndex(indexing::None);
  if (p == Py_Ellipsis) return TensorIndex(indexing::Ellipsis);
  if (PyBool_Check(p)) return TensorIndex(p == Py_True);
  if (PyLong_Check(p)) return TensorIndex(int_index(h));
  if (PySlice_Check(p)) {
    auto* s = reinterpret_cast<PySliceObject*>(p);
    return TensorIndex(Slice(slice_bound(s->start), slice_bound(s->stop), slice_bound(s->step)));
  }
  if (py::isinstance<Tensor>(h)) return TensorIndex(h.cast<Tensor>());
  // NumPy scalars are integers (torch 1.13 reads a numpy.bool_ as 0 or 1, not as a mask).
  if (is_numpy_scalar(h)) {
    const char kind = h.attr("dtype").attr("kind").cast<char>();
    if (kind == 'b') return TensorIndex(int64_t{h.cast<bool>()});
    if (kind == 'i' || kind == 'u') return TensorIndex(int_index(h));
  }
  if (py::isinstance<py::str>(h) || py::isinstance<py::bytes>(h)) {
    throw py::type_error(str("a string can't be an index (got ", std::string(py::repr(h)),
                             "); use ints, slices, None, ..., bools, tensors or lists of ints"));
  }
  if (PySequence_Check(p)) {
    // Lists, NumPy arrays, ranges: an index tensor (long or bool), as torch.tensor(h).
    Tensor t;
    try {
      t = tensor_from_data(h, std::nullopt);
    } catch (const IntOverflow& e) {  // an int outside int64 in the list
      std::string message = e.what();
      throw IndexOverflow(message.substr(0, message.find(';')) + kOutOfRangeIndex);
    }
    // x[[]] and x[np.array([])]: an empty int64 index, as torch. An int8/int16 array is an
    // int64 index too: torch converts every array but uint8/bool ones to int64 (found by
    // python_index_fuzzer; floats stay an IndexError, docs/python.md).
    if ((t.numel() == 0 && t.is_floating_point()) || t.dtype() == kInt8 || t.dtype() == kInt16) {
      t = native::to(t, kInt64);
    }
    return TensorIndex(t.device() == device ? t : t.to(device));
  }
  throw IndexError(
      str("a ", std::string(py::str(h.get_type().attr("__name__"))),
          " can't be an index; valid indices are ints, slices (a:b:c), ... (Ellipsis), "
          "None, bools, integer or bool tensors, and lists or NumPy arrays of those"));
}

// Whether a non-tuple sequence index is a tuple of indices (x[[0, [1, 2]]] == x[0, [1, 2]])
// rather than one index tensor (x[[0, 1]]), by NumPy's legacy rule that torch follows: a
// sequence shorter than 32 holding a tensor, a sequence, a slice, Ellipsis or None.
bool sequence_is_tuple(py::handle index) {
  PyObject* p = index.ptr();
  if (PyTuple_Check(p)) return true;
  if (py::isinstance<Tensor>(index) || !PySequence_Check(p) || PyUnicode_Check(p) ||
      PyBytes_Check(p)) {
    return false;
  }
  Py_ssize_t n = PySequence_Size(p);
  if (n < 0) {
    PyErr_Clear();
    return false;
  }
  if (n >= 32) return false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_GetItem(p, i);  // new reference
    if (item == nullptr) {
      PyErr_Clear();
      return false;
    }
    bool nested = py::isinstance<Tensor>(item) || PySequence_Check(item) || PySlice_Check(item) ||
                  item == Py_Ellipsis || item == Py_None;
    Py_DECREF(item);
    if (nested) return true;
  }
  return false;
}

std::vector<TensorIndex> to_index_list(py::handle index, Device device) {
  std::vector<TensorIndex> out;
  if (sequence_is_tuple(index)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(index);
    for (size_t i = 0; i < seq.size(); ++i) out.push_back(to_tensor_index(seq[i], device));
    // C++ reads the one-entry list {false} as torch's bare x[False] (a set writes and checks
    // nothing) and {true} as its bare x[True] (a set is the basic write x.unsqueeze(0) = v). A
    // tuple (False,) or (True,) is not bare in torch, so add the no-op trailing Ellipsis.
    if (out.size() == 1 && out[0].is_boolean()) {
      out.push_back(TensorIndex(indexing::Ellipsis));
    }
  } else {
    out.push_back(to_tensor_index(index, device));
  }
  return out;
}

// Runs an indexing call. C++ reports a slice step <= 0 as a ValueError when it applies that
// slice (after checking the index count, as torch); torch raises Python's ValueError for it,
// while every other C++ ValueError is a RuntimeError. Slicing comes before any write, so a
// ValueError from an index holding such a step is the step error.
template <typename F>
auto indexing_call(const std::vector<TensorIndex>& indices, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ValueError& e) {
    for (const TensorIndex& i : indices) {
      if (i.is_slice() && i.slice().step() <= 0) throw py::value_error(python_message(e.what()));
    }
    throw;
  }
}

// index_put_'s indices: a tuple or list of tensors (None for a dim taken whole).
std::vector<Tensor> index_tensors(py::handle indices) {
  if (!PyTuple_Check(indices.ptr()) && !PyList_Check(indices.ptr())) {
    throw py::type_error(str("index_put_(): indices must be a tuple of tensors, got a ",
                             std::string(py::str(indices.get_type().attr("__name__")))));
  }
  std::vector<Tensor> list;
  for (py::handle h : indices) {
    if (!h.is_none() && !py::isinstance<Tensor>(h)) {
      throw py::type_error(str("index_put_(): each index must be a tensor or None, got a ",
                               std::string(py::str(h.get_type().attr("__name__")))));
    }
    list.push_back(optional_tensor(h));
  }
  return list;
}

// torch's scatter_(dim, index, src | value, reduce=None): src may be a tensor or a number
// (positionally or as src=/value=); reduce "add" / "multiply" is scatter_reduce_ with "sum" /
// "prod" and include_self (torch's older spelling of the same write).
template <typename Write, typename WriteValue>
py::object scatter_call(py::handle src, py::handle value, py::handle reduce, Write write,
                        WriteValue write_value) {
  py::handle operand = src.is_none() ? value : src;
  if (operand.is_none() || (!src.is_none() && !value.is_none())) {
    throw py::type_error("scatter(): give exactly one of src (a Tensor) or value (a number)");
  }
  std::string how;
  if (!reduce.is_none()) {
    how = py::cast<std::string>(reduce);
    if (how != "add" && how != "multiply") {
      throw ValueError(str("scatter(): reduce argument must be either add or multiply, got ", how,
                           "; for sum, prod, mean, amax or amin use scatter_reduce"));
    }
    how = how == "add" ? "sum" : "prod";
  }
  if (py::isinstance<Tensor>(operand)) return write(operand.cast<Tensor>(), how);
  if (!is_python_number(operand)) {
    throw py::type_error(str("scatter(): src must be a Tensor or a number, got ",
                             std::string(py::str(operand.get_type().attr("__name__")))));
  }
  return write_value(to_scalar(operand), how);
}

// gather, scatter_, scatter_add_, scatter_reduce_, take, put_, masked_select, masked_scatter_
// (autograd/ops/scatter_ops.h, take_put_ops.h) with torch's signatures; in-place forms return
// the same Python object, as torch.
void bind_scatter_family(py::class_<Tensor>& tensor) {
  tensor.def(
      "gather",
      [](const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
        if (sparse_grad) {
          throw ValueError(
              "gather(): sparse_grad=True is not supported (mutagrad has no sparse "
              "tensors); leave it False");
        }
        return self.gather(dim, index);
      },
      py::arg("dim"), py::arg("index"), py::kw_only(), py::arg("sparse_grad") = false);
  tensor.def(
      "scatter_",
      [](py::object self, int64_t dim, const Tensor& index, py::handle src, py::handle value,
         py::handle reduce) {
        Tensor& t = self.cast<Tensor&>();
        CallSite site = python_call_site();
        return scatter_call(
            src, value, reduce,
            [&](const Tensor& s, const std::string& how) {
              if (how.empty()) {
                t.scatter_(dim, index, s, site);
              } else {
                t.scatter_reduce_(dim, index, s, how, true, site);
              }
              return self;
            },
            [&](const Scalar& v, const std::string& how) {
              if (how.empty()) {
                t.scatter_(dim, index, v, site);
              } else {
                t.scatter_reduce_(dim, index, full_like(index, v, t.dtype()), how, true, site);
              }
              return self;
            });
      },
      py::arg("dim"), py::arg("index"), py::arg("src") = py::none(), py::kw_only(),
      py::arg("value") = py::none(), py::arg("reduce") = py::none());
  tensor.def(
      "scatter",
      [](const Tensor& self, int64_t dim, const Tensor& index, py::handle src, py::handle value,
         py::handle reduce) {
        return scatter_call(
            src, value, reduce,
            [&](const Tensor& s, const std::string& how) {
              return py::cast(how.empty() ? self.scatter(dim, index, s)
                                          : self.scatter_reduce(dim, index, s, how, true));
            },
            [&](const Scalar& v, const std::string& how) {
              return py::cast(how.empty()
                                  ? self.scatter(dim, index, v)
                                  : self.scatter_reduce(
                                        dim, index, full_like(index, v, self.dtype()), how, true));
            });
      },
      py::arg("dim"), py::arg("index"), py::arg("src") = py::none(), py::kw_only(),
      py::arg("value") = py::none(), py::arg("reduce") = py::none());
  tensor.def(
      "scatter_add_",
      [](py::object self, int64_t dim, const Tensor& index, const Tensor& src) {
        self.cast<Tensor&>().scatter_add_(dim, index, src, python_call_site());
        return self;
      },
      py::arg("dim"), py::arg("index"), py::arg("src"));
  tensor.def(
      "scatter_add",
      [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
        return self.scatter_add(dim, index, src);
      },
      py::arg("dim"), py::arg("index"), py::arg("src"));
  tensor.def(
      "scatter_reduce_",
      [](py::object self, int64_t dim, const Tensor& index, const Tensor& src,
         const std::string& reduce, bool include_self) {
        self.cast<Tensor&>().scatter_reduce_(dim, index, src, reduce, include_self,
                                             python_call_site());
        return self;
      },
      py::arg("dim"), py::arg("index"), py::arg("src"), py::arg("reduce"), py::kw_only(),
      py::arg("include_self") = true);
  tensor.def(
      "scatter_reduce",
      [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
         const std::string& reduce,
         bool include_self) { return self.scatter_reduce(dim, index, src, reduce, include_self); },
      py::arg("dim"), py::arg("index"), py::arg("src"), py::arg("reduce"), py::kw_only(),
      py::arg("include_self") = true);
  tensor.def(
      "take", [](const Tensor& self, const Tensor& index) { return self.take(index); },
      py::arg("index"));
  tensor.def(
      "put_",
      [](py::object self, const Tensor& index, const Tensor& source, bool accumulate) {
        self.cast<Tensor&>().put_(index, source, accumulate, python_call_site());
        return self;
      },
      py::arg("index"), py::arg("source"), py::arg("accumulate") = false);
  tensor.def(
      "put",
      [](const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
        return self.put(index, source, accumulate);
      },
      py::arg("index"), py::arg("source"), py::arg("accumulate") = false);
  tensor.def(
      "masked_select",
      [](const Tensor& self, const Tensor& mask) { return self.masked_select(mask); },
      py::arg("mask"));
  tensor.def(
      "masked_scatter_",
      [](py::object self, const Tensor& mask, const Tensor& source) {
        self.cast<Tensor&>().masked_scatter_(mask, source, python_call_site());
        return self;
      },
      py::arg("mask"), py::arg("source"));
  tensor.def(
      "masked_scatter",
      [](const Tensor& self, const Tensor& mask, const Tensor& source) {
        return self.masked_scatter(mask, source);
      },
      py::arg("mask"), py::arg("source"));
}

}  // namespace

void bind_indexing(py::module_& m) {
  auto tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor.def(
      "__getitem__",
      [](const Tensor& self, py::handle index) {
        std::vector<TensorIndex> indices = to_index_list(index, self.device());
        return indexing_call(indices, [&] { return self.index(indices); });
      },
      py::arg("index"));
  tensor.def(
      "__setitem__",
      [](Tensor& self, py::handle index, py::handle value) {
        std::vector<TensorIndex> indices = to_index_list(index, self.device());
        CallSite site = python_call_site();
        if (py::isinstance<Tensor>(value)) {
          Tensor v = value.cast<Tensor>();
          indexing_call(indices, [&] { self.set_item_(indices, v, site); });
        } else if (is_python_number(value)) {
          Scalar v = to_scalar(value);
          indexing_call(indices, [&] { self.set_item_(indices, v, site); });
        } else {
          // As torch: only tensors and numbers are assigned; a list would be ambiguous in dtype.
          throw py::type_error(str("can't assign a ",
                                   std::string(py::str(value.get_type().attr("__name__"))),
                                   " to a tensor; assign a tensor (mutagrad.tensor(value)) or a "
                                   "number"));
        }
      },
      py::arg("index"), py::arg("value"));
  tensor.def(
      "index_put_",
      [](py::object self, py::handle indices, const Tensor& values, bool accumulate) {
        self.cast<Tensor&>().index_put_(index_tensors(indices), values, accumulate,
                                        python_call_site());
        return self;  // the same Python object, as torch
      },
      py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);
  tensor.def(
      "index_put",
      [](const Tensor& self, py::handle indices, const Tensor& values, bool accumulate) {
        return autograd::index_put(self, index_tensors(indices), values, accumulate);
      },
      py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);

  // The dim-wise family (autograd/ops/index_family_ops.h), torch's signatures.
  tensor.def(
      "index_select",
      [](const Tensor& self, int64_t dim, const Tensor& index) {
        return self.index_select(dim, index);
      },
      py::arg("dim"), py::arg("index"));
  tensor.def(
      "index_add_",
      [](py::object self, int64_t dim, const Tensor& index, const Tensor& source,
         py::handle alpha) {
        self.cast<Tensor&>().index_add_(dim, index, source, to_scalar(alpha), python_call_site());
        return self;
      },
      py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = 1);
  tensor.def(
      "index_add",
      [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
         py::handle alpha) { return self.index_add(dim, index, source, to_scalar(alpha)); },
      py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = 1);
  tensor.def(
      "index_copy_",
      [](py::object self, int64_t dim, const Tensor& index, const Tensor& source) {
        self.cast<Tensor&>().index_copy_(dim, index, source, python_call_site());
        return self;
      },
      py::arg("dim"), py::arg("index"), py::arg("source"));
  tensor.def(
      "index_copy",
      [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
        return self.index_copy(dim, index, source);
      },
      py::arg("dim"), py::arg("index"), py::arg("source"));
  tensor.def(
      "index_fill_",
      [](py::object self, int64_t dim, const Tensor& index, py::handle value) {
        if (py::isinstance<Tensor>(value)) {
          self.cast<Tensor&>().index_fill_(dim, index, value.cast<Tensor>(), python_call_site());
        } else {
          self.cast<Tensor&>().index_fill_(dim, index, to_scalar(value), python_call_site());
        }
        return self;
      },
      py::arg("dim"), py::arg("index"), py::arg("value"));
  tensor.def(
      "index_fill",
      [](const Tensor& self, int64_t dim, const Tensor& index, py::handle value) {
        if (py::isinstance<Tensor>(value)) return self.index_fill(dim, index, value.cast<Tensor>());
        return self.index_fill(dim, index, to_scalar(value));
      },
      py::arg("dim"), py::arg("index"), py::arg("value"));
  bind_scatter_family(tensor);
}

}  // namespace mutagrad::python
