// Python ↔ C++ value conversion for mutagrad._C: scalars, dtypes, sizes, nested lists, NumPy.
#include <cstring>
#include <vector>

#include "python/bindings.h"
#include "tensor/read_hook.h"

namespace mutagrad::python {
namespace {

// dtype objects are instances of one Python class holding a ScalarType; one per dtype.
struct DType {
  ScalarType type;
};

py::object& dtype_slot(ScalarType t) {
  // Never destroyed: they must outlive the interpreter's teardown.
  static auto* objects = new py::object[kNumScalarTypes];
  return objects[static_cast<int>(t)];
}

std::string type_name(py::handle value) { return py::str(value.get_type().attr("__name__")); }

// An element of a size argument as int64: TypeError naming fn and arg, as torch, for a non-int
// (ints only in the varargs form, anything with __index__ but floats in the sequence form) and
// for an int outside int64.
int64_t size_element(py::handle h, const char* fn, const char* arg, size_t pos, bool int_only) {
  PyObject* p = h.ptr();
  bool is_int = PyLong_Check(p) || (!int_only && !PyFloat_Check(p) && PyIndex_Check(p));
  if (!is_int) {
    throw py::type_error(str(fn, "(): argument '", arg,
                             "' must be an int or a tuple of ints, but found element of type ",
                             type_name(h), " at pos ", pos));
  }
  auto index = py::reinterpret_steal<py::object>(PyNumber_Index(p));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) {
    throw py::type_error(str(fn, "(): argument '", arg, "' must be a tuple of ints, but found ",
                             std::string(py::str(index)), " at pos ", pos,
                             ", which does not fit in int64 (range [-2**63, 2**63 - 1])"));
  }
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return static_cast<int64_t>(v);
}

ScalarType from_numpy_dtype(const py::dtype& dt, const char* fn) {
  switch (dt.kind()) {
    case 'b':
      return kBool;
    case 'u':
      if (dt.itemsize() == 1) return kUInt8;
      break;
    case 'i':
      if (dt.itemsize() == 1) return kInt8;
      if (dt.itemsize() == 2) return kInt16;
      if (dt.itemsize() == 4) return kInt32;
      if (dt.itemsize() == 8) return kInt64;
      break;
    case 'f':
      if (dt.itemsize() == 2) return kFloat16;
      if (dt.itemsize() == 4) return kFloat32;
      if (dt.itemsize() == 8) return kFloat64;
      break;
    default:
      break;
  }
  throw py::type_error(str(fn, "(): can't convert a NumPy array or scalar of dtype ",
                           dt.attr("name").cast<std::string>(),
                           "; the supported dtypes are float64, float32, float16, int64, int32, "
                           "int16, int8, uint8 and bool"));
}

// The dtype of an array whose memory is read: ValueError for a non-native byte order (never
// misread as native), TypeError for a dtype mutagrad lacks, as torch.
ScalarType checked_numpy_dtype(const py::array& array, const char* fn) {
  py::dtype dt = array.dtype();
  if (!dt.attr("isnative").cast<bool>()) {
    // torch: ValueError "given numpy array has byte order different from the native byte order".
    throw py::value_error(
        str(fn, "(): the NumPy array's dtype ", std::string(py::str(dt.attr("str"))),
            " has a byte order different from the native byte order; conversion between byte "
            "orders is not supported: convert the array first with "
            "array.astype(array.dtype.newbyteorder('='))"));
  }
  return from_numpy_dtype(dt, fn);
}

py::dtype to_numpy_dtype(ScalarType t) {
  if (t == kBFloat16) {
    // NumPy has no bfloat16 (torch raises the same TypeError).
    throw py::type_error(
        "Got unsupported ScalarType BFloat16: NumPy has no bfloat16; convert first with "
        ".float() (exact) and then call .numpy()");
  }
  return py::dtype(dtype_name(t));  // NumPy's names match: "uint8", "float16", ...
}

// A leaf's dtype when it decides a tensor's dtype, as torch infers it: Python floats give the
// default float32, ints int64, bools bool; NumPy scalars and 0-dim tensors keep their own.
ScalarType python_number_dtype(py::handle value, const Scalar& s) {
  if (is_numpy_scalar(value)) {
    return from_numpy_dtype(py::reinterpret_borrow<py::object>(value).attr("dtype"), "tensor");
  }
  return s.is_floating_point() ? default_dtype() : s.type();
}

// Walks nested sequences: records the shape at the first visit of each depth and checks that
// every sibling agrees; collects the leaves in row-major order and promotes their dtypes.
void flatten_nested(py::handle obj, size_t depth, DimVector& shape, std::vector<Scalar>& leaves,
                    std::optional<ScalarType>& dtype) {
  // A tensor where a number goes (torch does not descend into a tensor to find the shape:
  // tensor([1, tensor([2])]) is [1, 2]) is read as a number when it has one element, of any
  // dim; a tensor where a sequence goes is read as one (below).
  if (py::isinstance<Tensor>(obj) &&
      (obj.cast<const Tensor&>().dim() == 0 || depth == shape.size())) {
    const Tensor& t = obj.cast<const Tensor&>();
    if (depth != shape.size()) {
      throw py::type_error(str("tensor(): found a 0-dim tensor at depth ", depth,
                               " where a sequence was expected; nested lists must be rectangular"));
    }
    if (t.numel() != 1) {
      const std::string what = str("tensor(): a tensor of shape ", t.sizes(), " at depth ", depth,
                                   " where a number goes; only one-element tensors are read as "
                                   "numbers (as torch); pass its elements, or a nested list");
      if (is_floating_point(t.dtype())) throw py::value_error(what);
      throw py::type_error(what);
    }
    leaves.push_back(t.item());
    dtype = dtype ? promote_types(*dtype, t.dtype()) : t.dtype();
    return;
  }
  bool is_sequence = py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj) &&
                     !py::isinstance<py::bytes>(obj);
  if (is_sequence) {
    if (is_numpy_array(obj)) {
      // A nested array gives its dtype, as torch infers it, even when it is empty; its elements
      // are read one by one below (as NumPy scalars, so in any byte order).
      ScalarType t = from_numpy_dtype(py::reinterpret_borrow<py::array>(obj).dtype(), "tensor");
      dtype = dtype ? promote_types(*dtype, t) : t;
    }
    py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    int64_t n = static_cast<int64_t>(py::len(seq));
    if (depth == shape.size()) {
      if (!leaves.empty()) {
        throw py::type_error(str("tensor(): expected a number at depth ", depth,
                                 " (like the other elements) but got a sequence of length ", n));
      }
      shape.push_back(n);
    } else if (depth > shape.size() || shape[depth] != n) {
      throw py::value_error(str("tensor(): expected sequence of length ", shape[depth], " at dim ",
                                depth, " (got ", n, "); nested lists must be rectangular"));
    }
    for (int64_t i = 0; i < n; ++i) flatten_nested(seq[i], depth + 1, shape, leaves, dtype);
    return;
  }
  if (depth != shape.size()) {
    throw py::type_error(str("tensor(): found a number at depth ", depth,
                             " where a sequence of length ", shape[depth],
                             " was expected; nested lists must be rectangular"));
  }
  if (!is_python_number(obj)) {
    // A NumPy scalar of a dtype mutagrad lacks (complex64, float16, datetime64, ...): TypeError.
    if (is_numpy_scalar(obj) && !py::isinstance<py::str>(obj) && !py::isinstance<py::bytes>(obj)) {
      from_numpy_dtype(py::reinterpret_borrow<py::object>(obj).attr("dtype"), "tensor");
    }
    if (!py::isinstance<py::str>(obj) && !py::isinstance<py::bytes>(obj)) {
      // torch: RuntimeError for objects whose dtype can't be inferred, TypeError for strings.
      throw Error(str("tensor(): can't infer a dtype for an element of type ",
                      std::string(py::str(obj.get_type().attr("__name__"))),
                      "; the data must be numbers (bool, int, float), nested sequences of them, "
                      "NumPy arrays or tensors"));
    }
    throw py::type_error(str("tensor(): can't make a tensor element from a ",
                             std::string(py::str(obj.get_type().attr("__name__"))),
                             "; the data must be numbers (bool, int, float), nested sequences of "
                             "them, NumPy arrays or tensors"));
  }
  Scalar s = to_scalar(obj);
  ScalarType t = python_number_dtype(obj, s);
  dtype = dtype ? promote_types(*dtype, t) : t;
  leaves.push_back(s);
}

}  // namespace

// Note [NumPy is optional]
// The wheel has no dependencies: tensors from lists, indexing, autograd, printing and the
// optimizers work without NumPy, and only what hands out or takes an array needs it. An object
// can only be a NumPy array or scalar once NumPy is imported, so the checks first look it up in
// sys.modules (one dict lookup; remembered once found) and never import it themselves;
// require_numpy() imports it for numpy() and raises ModuleNotFoundError with what to install.
bool numpy_imported() {
  static bool imported = false;
  if (!imported) {
    PyObject* numpy = PyDict_GetItemString(PyImport_GetModuleDict(), "numpy");  // borrowed
    imported = numpy != nullptr && numpy != Py_None;
  }
  return imported;
}

void require_numpy(const char* fn) {
  if (numpy_imported()) return;
  try {
    py::module_::import("numpy");
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    PyErr_SetString(PyExc_ModuleNotFoundError,
                    str(fn, "() needs NumPy, which is not installed (", e.what(),
                        "); install it with `pip install numpy` (or `pip install mutagrad[numpy]`)")
                        .c_str());
    throw py::error_already_set();
  }
}

bool is_numpy_array(py::handle value) {
  return numpy_imported() && py::isinstance<py::array>(value);
}

bool is_numpy_scalar(py::handle value) {
  if (!numpy_imported()) return false;
  static auto* generic = new py::object(py::module_::import("numpy").attr("generic"));
  return py::isinstance(value, *generic);
}

bool is_int64_overflow(py::handle value) {
  PyObject* p = value.ptr();
  py::object index;
  if (PyLong_Check(p) && !PyBool_Check(p)) {
    index = py::reinterpret_borrow<py::object>(value);
  } else if (is_numpy_scalar(value) &&
             std::string("iu").find(value.attr("dtype").attr("kind").cast<char>()) !=
                 std::string::npos) {
    index = py::reinterpret_steal<py::object>(PyNumber_Index(p));
    if (!index) {
      PyErr_Clear();
      return false;
    }
  } else {
    return false;
  }
  int overflow = 0;
  PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  return overflow != 0;
}

std::string int_overflow_message(py::handle value) {
  return str(kIntOverflowStart, std::string(py::str(value)),
             " does not fit in int64 (range [-2**63, 2**63 - 1])");
}

bool is_python_number(py::handle value) {
  if (PyBool_Check(value.ptr()) || PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr())) {
    return true;
  }
  if (!is_numpy_scalar(value)) return false;
  char kind = py::reinterpret_borrow<py::object>(value).attr("dtype").attr("kind").cast<char>();
  return kind == 'b' || kind == 'i' || kind == 'u' || kind == 'f';
}

Scalar to_scalar(py::handle value) {
  PyObject* p = value.ptr();
  if (PyBool_Check(p)) return Scalar(p == Py_True);
  if (PyLong_Check(p)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow != 0) {
      throw IntOverflow(int_overflow_message(value) + "; use a float or a smaller value");
    }
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(p)) return Scalar(PyFloat_AsDouble(p));
  if (is_python_number(value)) {
    py::object item = value.attr("item")();
    // torch 1.13 reads a NumPy bool scalar argument through __float__: 1.0 or 0.0.
    if (PyBool_Check(item.ptr())) return Scalar(item.ptr() == Py_True ? 1.0 : 0.0);
    return to_scalar(item);
  }
  throw py::type_error(str("expected a number (bool, int or float) but got ",
                           std::string(py::str(value.get_type().attr("__name__")))));
}

std::optional<ScalarType> to_dtype(py::handle value) {
  if (value.is_none()) return std::nullopt;
  if (py::isinstance<DType>(value)) return value.cast<const DType&>().type;
  // torch's Python-type spellings: float is float64, int is int64, bool is bool.
  if (value.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return kFloat64;
  if (value.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return kInt64;
  if (value.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return kBool;
  throw py::type_error(str("dtype must be a mutagrad dtype (mutagrad.float32, ...), got ",
                           std::string(py::repr(value))));
}

bool is_dtype(py::handle value) {
  return py::isinstance<DType>(value) ||
         value.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type) ||
         value.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type) ||
         value.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type);
}

py::object dtype_object(ScalarType t) { return dtype_slot(t); }

DimVector sizes_from_args(const py::args& args, const char* fn, const char* arg) {
  if (args.size() == 1 && py::isinstance<py::sequence>(args[0])) {
    return sizes_from(args[0], fn, arg);
  }
  DimVector sizes;
  for (size_t i = 0; i < args.size(); ++i) {
    sizes.push_back(size_element(args[i], fn, arg, i + 1, /*int_only=*/true));
  }
  return sizes;
}

DimVector sizes_from(py::handle size, const char* fn, const char* arg) {
  if (!py::isinstance<py::sequence>(size)) return {size_element(size, fn, arg, 1, false)};
  DimVector sizes;
  size_t pos = 0;
  for (py::handle h : size) sizes.push_back(size_element(h, fn, arg, ++pos, false));
  return sizes;
}

Tensor from_numpy(py::array array, const char* fn) {
  ScalarType t = checked_numpy_dtype(array, fn);
  int64_t item = element_size(t);
  DimVector sizes, strides;
  for (py::ssize_t d = 0; d < array.ndim(); ++d) {
    sizes.push_back(array.shape(d));
    if (array.strides(d) % item != 0) {
      throw py::value_error(str(fn, "(): stride ", array.strides(d), " bytes of dim ", d,
                                " is not a multiple of the element size ", item,
                                "; make the array contiguous with numpy.ascontiguousarray first"));
    }
    strides.push_back(array.strides(d) / item);
  }
  for (int64_t s : strides) {
    if (s < 0) {
      throw py::value_error(str(fn,
                                "(): arrays with negative strides are not supported; copy the "
                                "array first (array.copy())"));
    }
  }
  auto* owner = new py::object(array);  // keeps the array alive; released under the GIL
  std::shared_ptr<void> keep(owner, [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
  });
  return from_blob(array.mutable_data(), sizes, strides, t, std::move(keep));
}

py::array to_numpy(const Tensor& t) {
  notify_host_read(*t.unsafe_impl(), "numpy");  // Note [Read hook] in tensor/read_hook.h
  if (!t.device().is_cpu()) {  // torch's TypeError, checked before requires_grad as torch does
    throw py::type_error(str("can't convert ", t.device(),
                             " device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                             "to host memory first."));
  }
  if (t.requires_grad()) {
    throw Error(
        "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  }
  require_numpy("numpy");
  std::vector<py::ssize_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(s * t.element_size());
  // The capsule owns a handle to the tensor, so the memory outlives the array.
  auto* keep = new Tensor(t);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(to_numpy_dtype(t.dtype()), shape, strides, t.raw_data(), base);
}

py::object to_list(const Tensor& t) {
  notify_host_read(*t.unsafe_impl(), "tolist");  // Note [Read hook] in tensor/read_hook.h
  // A device tensor comes to the host in one copy (host code never reads device memory).
  Tensor c = t.device().is_cpu() ? native::contiguous(t) : native::to(t, kCPU);
  if (c.dim() == 0) {
    Scalar s = c.item();
    if (s.is_bool()) return py::bool_(s.to<bool>());
    if (s.is_integral()) return py::int_(s.to<int64_t>());
    return py::float_(s.to<double>());
  }
  py::list out;
  for (int64_t i = 0; i < c.size(0); ++i) out.append(to_list(native::select(c, 0, i)));
  return out;
}

Tensor tensor_from_data(py::handle data, std::optional<ScalarType> dtype) {
  if (is_numpy_array(data)) {
    checked_numpy_dtype(py::reinterpret_borrow<py::array>(data), "tensor");  // before copying
    // A C-ordered copy (any strides, negative too; 0-dim stays 0-dim) that the tensor owns.
    Tensor out = from_numpy(data.attr("copy")(), "tensor");
    return dtype ? native::to(out, *dtype) : out;
  }
  if (py::isinstance<Tensor>(data)) {
    Tensor out = native::clone(data.cast<Tensor>());
    return dtype ? native::to(out, *dtype) : out;
  }
  DimVector shape;
  std::vector<Scalar> leaves;
  std::optional<ScalarType> inferred;
  flatten_nested(data, 0, shape, leaves, inferred);
  ScalarType t = dtype.value_or(inferred.value_or(default_dtype()));  // tensor([]): default
  Tensor out = empty(shape, t);
  dispatch_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data_ptr<T>();
    for (size_t i = 0; i < leaves.size(); ++i) p[i] = leaves[i].to<T>();
  });
  return out;
}

void bind_dtypes(py::module_& m) {
  py::class_<DType>(m, "dtype")
      .def("__repr__", [](const DType& d) { return str("mutagrad.", dtype_name(d.type)); })
      .def_property_readonly("is_floating_point",
                             [](const DType& d) { return is_floating_point(d.type); })
      .def_property_readonly("itemsize", [](const DType& d) { return element_size(d.type); })
      .def("__eq__",
           [](const DType& a, py::handle b) -> py::object {
             if (!py::isinstance<DType>(b)) {
               return py::reinterpret_borrow<py::object>(Py_NotImplemented);  // as torch: False
             }
             return py::bool_(a.type == b.cast<const DType&>().type);
           })
      .def("__hash__", [](const DType& d) { return static_cast<int>(d.type); });
  for (ScalarType t : kAllScalarTypes) {
    dtype_slot(t) = py::cast(DType{t});
    m.attr(dtype_name(t)) = dtype_slot(t);
  }
  // torch's aliases.
  m.attr("float") = dtype_slot(kFloat32);
  m.attr("double") = dtype_slot(kFloat64);
  m.attr("int") = dtype_slot(kInt32);
  m.attr("long") = dtype_slot(kInt64);
  m.attr("half") = dtype_slot(kFloat16);
  m.attr("short") = dtype_slot(kInt16);
  // torch.get_default_dtype / set_default_dtype (mutagrad/_conveniences.py wraps them).
  m.def("_get_default_dtype", [] { return dtype_slot(default_dtype()); });
  m.def(
      "_set_default_dtype", [](const DType& d) { set_default_dtype(d.type); }, py::arg("d"));
}

}  // namespace mutagrad::python
