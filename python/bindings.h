// Shared pieces of the mutagrad._C bindings: Python value ↔ Scalar / dtype conversion, and
// the registration functions each bindings_*.cc file provides.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "mutagrad.h"
#include "python/node_caster.h"    // before any cast of a node
#include "python/tensor_caster.h"  // before any cast of a Tensor

namespace mutagrad::python {

// The named forms of the Python operators: module functions (mg.mul(a, b)) and Tensor methods
// (a.mul(b)) both dispatch to the operator, so a number on either side behaves the same.
inline constexpr std::pair<const char*, const char*> kNamedOperators[] = {
    {"mul", "__mul__"}, {"div", "__truediv__"}, {"eq", "__eq__"}, {"ne", "__ne__"},
    {"lt", "__lt__"},   {"le", "__le__"},       {"gt", "__gt__"}, {"ge", "__ge__"}};

namespace py = pybind11;

// A Python int outside int64, where torch raises RuntimeError ("Overflow when unpacking long"):
// Python sees mutagrad.IntOverflowError, an OverflowError that is also a RuntimeError. A message
// that starts with kIntOverflowStart gets the function and the argument put in front of it
// (errors.cc), since the conversion that finds the overflow does not know them.
class IntOverflow : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The same for an integer index: mutagrad.IndexOverflowError, also an IndexOutOfRangeError.
class IndexOverflow : public IntOverflow {
  using IntOverflow::IntOverflow;
};
inline constexpr const char* kIntOverflowStart = "the Python int ";
// Whether value is a Python int (not a bool) or a NumPy integer outside int64's range.
bool is_int64_overflow(py::handle value);
// "the Python int N does not fit in int64 (range [-2**63, 2**63 - 1])".
std::string int_overflow_message(py::handle value);

// A Python bool/int/float (or NumPy scalar) as a Scalar; TypeError for anything else,
// IntOverflow for an int outside int64. A NumPy bool scalar is read as a float, as torch 1.13
// reads it (torch.full((2,), np.bool_(True)) is float32).
Scalar to_scalar(py::handle value);
bool is_python_number(py::handle value);
// Note [NumPy is optional] (convert.cc): whether NumPy is imported; a NumPy array / scalar
// (false without importing NumPy); require_numpy(fn) imports it or raises ModuleNotFoundError.
bool numpy_imported();
bool is_numpy_array(py::handle value);
bool is_numpy_scalar(py::handle value);
void require_numpy(const char* fn);
// The dtype argument: None or a mutagrad dtype object.
std::optional<ScalarType> to_dtype(py::handle value);
// Whether value is a dtype argument: a mutagrad dtype, or float / int / bool (torch's spellings).
bool is_dtype(py::handle value);
// The device argument (bindings_device.cc): None as nullopt; "cpu", "cuda", "cuda:0"
// (parse_device, torch's errors), a mutagrad.device or torch.device (.type, .index), or an int
// as a CUDA index, as torch reads them; TypeError naming fn for anything else. A CUDA device
// in a process without one raises cuda::check_available()'s DeviceError (what is missing).
std::optional<Device> to_device(py::handle value, const char* fn);
// A seed argument as torch reads it: an int in [-2**63, 2**64 - 1], a negative one taken
// modulo 2**64; TypeError for a non-int, IntOverflow outside that range.
uint64_t seed_bits(py::handle seed, const char* fn);
py::object dtype_object(ScalarType t);
// Sizes given as varargs (zeros(2, 3)) or one sequence (zeros((2, 3))); TypeError naming fn
// and arg for an element that is not an int or does not fit in int64, as torch.
DimVector sizes_from_args(const py::args& args, const char* fn, const char* arg = "size");
// Sizes given as an int or one sequence of ints (full(size, v)), checked as sizes_from_args.
DimVector sizes_from(py::handle size, const char* fn, const char* arg = "size");
// A Python list/tuple/scalar/NumPy array as a new tensor (a copy), as torch.tensor. NumPy
// arrays of non-native byte order raise ValueError, as torch.
Tensor tensor_from_data(py::handle data, std::optional<ScalarType> dtype);
// Zero-copy view of a NumPy array's memory (shares it, keeps the array alive). ValueError for
// non-native byte order and negative strides, TypeError for unsupported dtypes, as torch.
Tensor from_numpy(py::array array, const char* fn = "from_numpy");
// A NumPy array sharing the tensor's memory (CPU tensors that don't require grad).
py::array to_numpy(const Tensor& t);
py::object to_list(const Tensor& t);
// An undefined tensor as None (grad, grad_fn results, allow_unused gradients).
inline py::object wrap_tensor(const Tensor& t) { return t.defined() ? py::cast(t) : py::none(); }
// None as an undefined tensor, a Tensor as itself.
inline Tensor optional_tensor(py::handle h) { return h.is_none() ? Tensor() : h.cast<Tensor>(); }
// A Python number as a Python bool/int/float of the Scalar's kind.
py::object scalar_to_python(const Scalar& s);
// None as nullopt, a number as a Scalar (clamp's bounds).
inline std::optional<Scalar> optional_scalar(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_scalar(h);
}
// A dim argument: an int or a sequence of ints.
DimVector dims_from(py::handle h);
// Removes `name` from a class's or module's own namespace (not an inherited one), so that the
// definition that follows replaces it instead of adding a pybind11 overload.
inline void forget(py::handle scope, const char* name) {
  if (py::isinstance<py::module_>(scope)) {
    if (py::hasattr(scope, name)) py::delattr(scope, name);
    return;
  }
  if (scope.attr("__dict__").contains(name)) py::delattr(scope, name);
}
// Defines `name` as a Tensor method and as a module function taking the tensor first (input=),
// replacing earlier bindings of that name.
template <typename F, typename... Extra>
void def_both(py::module_& m, py::class_<Tensor>& t, const char* name, F fn, Extra... extra) {
  forget(t, name);
  forget(m, name);
  t.def(name, fn, extra...);
  m.def(name, fn, py::arg("input"), extra...);
}
// A class or function of the Python package (mutagrad/<module>.py), imported once.
py::object package_attr(const char* module, const char* name);
// Sizes or strides as a mutagrad.Size (a tuple subclass printing like torch.Size).
py::object make_size(IntArrayRef sizes);
// A node's name as torch's Python API reports it ("MulBackward0" for x * 2).
std::string python_node_name(const autograd::Node& node);
// Where torch's node has an extra (None) edge for a Python number operand that the C++ node
// lacks (next_functions, post-hooks' grad_inputs): -1 none, 0 first, 1 last.
int python_number_edge(const autograd::Node& node);
// repr(tensor): torch's layout, with dtype=mutagrad.<dtype> and Python node names.
std::string tensor_repr(const Tensor& t);

void bind_dtypes(py::module_& m);
void bind_nodes(py::module_& m);
void bind_tensor(py::module_& m);
void bind_operators(py::module_& m);
// After bind_operators and bind_ops: replaces div and the bit operators with their full forms.
void bind_math(py::module_& m);
// After bind_math: the reductions with torch's keywords (dtype=, correction=, p=).
void bind_stats(py::module_& m);
// After bind_stats: sort, argsort, msort, topk, kthvalue, unique, bincount, searchsorted.
void bind_sort(py::module_& m);
// After bind_math: products (mm, bmm, einsum, ...), shape helpers (flip, roll, tril, ...),
// eye/linspace/logspace and the in-place view ops (bindings_shape.cc).
void bind_shape(py::module_& m);
void bind_ops(py::module_& m);
// _write_out: the out= step of mutagrad/_out.py (bindings_out.cc).
void bind_out(py::module_& m);
// After bind_stats: softmax/log_softmax and the _nn submodule (losses, nn.init; bindings_nn.cc).
void bind_nn(py::module_& m);
// Generator, manual_seed, the random factories and the in-place random fills
// (bindings_random.cc). After bind_ops.
void bind_random(py::module_& m);
void bind_indexing(py::module_& m);
void bind_device(py::module_& m);
void bind_autograd(py::module_& m);
// mutagrad.optim / nn.utils (the _optim submodule) and addcmul/addcdiv/lerp (bindings_optim.cc).
void bind_optim(py::module_& m);
// mutagrad.distributed and nn.parallel (bindings_distributed.cc): the _distributed submodule.
void bind_distributed(py::module_& m);
// Graph inspection (issue 14): check_backward, mutation logs, pictures (bindings_inspect.cc).
void bind_inspect(py::module_& m);
// Tensor._make_subclass and the _nn_module submodule for nn.Module (bindings_module.cc).
void bind_module_support(py::module_& m);
// Called by bind_autograd: custom Functions, tensor/node hooks, saved-tensor hooks
// (bindings_custom_function.cc).
void bind_custom_function(py::module_& m);
void bind_errors(py::module_& m);

// A C++ error message with the C++ spellings of dtypes, devices and C++-only syntax (kFloat32,
// .to(kInt64), x[{true}], ...) rewritten as a Python caller writes them (mutagrad.float32, ...).
std::string python_message(const std::string& cpp_message);
// Replaces pybind11's own argument errors ("incompatible function arguments", "Unable to cast
// Python instance") from every function and method of m with torch-like ones that name the
// function, what was passed and the accepted signatures. Call it after every bind_*.
void install_argument_errors(py::module_& m);

}  // namespace mutagrad::python
