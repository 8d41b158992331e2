// mutagrad._C's extension points of autograd: custom Functions (_function_apply, used by
// mutagrad.autograd.Function), Tensor.register_hook, Node.register_hook / register_prehook,
// and the saved-tensor hooks (_push/_pop_saved_tensors_hooks, used by
// mutagrad.autograd.graph.saved_tensors_hooks). See docs/extending.md.
//
// Note [The GIL and Python callbacks]
// The engine runs in C++ and calls back into Python (a Function's backward, hooks, unpack);
// every callback takes the GIL (gil_scoped_acquire, a no-op when the caller already holds it).
// Python objects kept by C++ nodes are held through `PyRef`, whose deleter takes the GIL, as a
// node may die inside C++ code. A Python exception raised in a callback travels through the
// engine as py::error_already_set and reaches the caller as the original exception, with its
// traceback.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "python/bindings.h"

namespace mutagrad::python {
namespace {

using autograd::CustomFunctionNode;
using autograd::Node;
using autograd::RemovableHandle;
using autograd::VariableList;

using PyRef = std::shared_ptr<py::object>;
PyRef hold(py::object obj) {
  return PyRef(new py::object(std::move(obj)), [](py::object* p) {
    if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than crash
    py::gil_scoped_acquire gil;
    delete p;
  });
}

py::tuple to_tuple(const VariableList& ts) {
  py::tuple out(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) out[i] = wrap_tensor(ts[i]);
  return out;
}

// None: keep (empty list); a Tensor or a sequence of Tensor/None: the replacement.
VariableList grads_from(py::handle r, const char* what) {
  VariableList out;
  if (r.is_none()) return out;
  if (py::isinstance<Tensor>(r)) {
    out.push_back(r.cast<Tensor>());
    return out;
  }
  if (!py::isinstance<py::sequence>(r) || py::isinstance<py::str>(r)) {
    throw py::type_error(str(what,
                             " must return None, a Tensor or a tuple of Tensors (or None), "
                             "got ",
                             std::string(py::str(py::type::of(r).attr("__name__")))));
  }
  for (py::handle h : r) {
    if (!h.is_none() && !py::isinstance<Tensor>(h)) {
      throw py::type_error(str(what, " returned a ",
                               std::string(py::str(py::type::of(h).attr("__name__"))),
                               " where a Tensor or None was expected"));
    }
    out.push_back(optional_tensor(h));
  }
  return out;
}

// A Python Function's node: backward is `cls.backward(ctx, *grads)`.
class PyFunctionNode final : public CustomFunctionNode {
 public:
  PyFunctionNode(std::string name, py::object backward, py::object ctx, py::object jvp)
      : CustomFunctionNode(std::move(name)),
        backward_(hold(std::move(backward))),
        ctx_obj_(hold(std::move(ctx))),
        jvp_(jvp.is_none() ? nullptr : hold(std::move(jvp))) {}
  py::object ctx_object() const { return *ctx_obj_; }
  bool has_jvp() const override { return jvp_ != nullptr; }
  // Per item forward returned: whether it is a Tensor (backward gets None for the others).
  std::vector<bool> output_is_tensor;
  // Per argument of forward: whether it is a Tensor (jvp gets None for the others).
  std::vector<bool> arg_is_tensor;

 protected:
  VariableList call_backward(VariableList grads) override {
    py::gil_scoped_acquire gil;
    py::tuple args(output_is_tensor.size() + 1);
    args[0] = *ctx_obj_;
    for (size_t i = 0, k = 0; i < output_is_tensor.size(); ++i) {
      args[i + 1] = output_is_tensor[i] ? wrap_tensor(grads[k++]) : py::none();
    }
    py::object r = (*backward_)(*args);
    if (r.is_none()) return VariableList{Tensor()};
    VariableList out = grads_from(r, str(name(), ".backward").c_str());
    return out;
  }
  // `cls.jvp(ctx, *tangents)`: one tangent per argument (None for non-tensors) -> one per
  // output (a tuple when forward returned one); non-tensor outputs' entries are dropped.
  VariableList call_jvp(VariableList tangents) override {
    py::gil_scoped_acquire gil;
    py::tuple args(arg_is_tensor.size() + 1);
    args[0] = *ctx_obj_;
    for (size_t i = 0, k = 0; i < arg_is_tensor.size(); ++i) {
      args[i + 1] = arg_is_tensor[i] ? wrap_tensor(tangents[k++]) : py::none();
    }
    py::object r = (*jvp_)(*args);
    py::tuple items =
        py::isinstance<py::tuple>(r) ? py::reinterpret_borrow<py::tuple>(r) : py::make_tuple(r);
    if (items.size() != output_is_tensor.size()) {
      throw ValueError(str(name(), ".jvp returned ", items.size(),
                           " values; expected one per output of forward (", output_is_tensor.size(),
                           ")"));
    }
    py::list tensors;
    for (size_t i = 0; i < items.size(); ++i) {
      if (output_is_tensor[i]) tensors.append(items[i]);
    }
    return grads_from(tensors, str(name(), ".jvp").c_str());
  }

 private:
  PyRef backward_;
  PyRef ctx_obj_;
  PyRef jvp_;
};

// ctx._state: what the Python ctx reaches in C++ (weakly: the node owns the ctx).
struct FunctionState {
  std::weak_ptr<PyFunctionNode> node;
  std::shared_ptr<PyFunctionNode> get() const {
    std::shared_ptr<PyFunctionNode> n = node.lock();
    if (!n) {
      throw autograd::AutogradError(
          "this Function's graph node no longer exists (the outputs were freed); keep an output "
          "alive to use its ctx");
    }
    return n;
  }
};

py::object function_apply(const py::object& cls, const py::tuple& args) {
  const std::string name = std::string(py::str(cls.attr("__name__"))) + "Backward";
  py::object ctx = package_attr("autograd.function", "FunctionCtx")();
  py::object backward = cls.attr("backward");
  // jvp: only when the class overrides the base's (which raises NotImplementedError).
  py::object jvp = cls.attr("jvp");
  if (jvp.is(package_attr("autograd.function", "Function").attr("jvp"))) jvp = py::none();
  auto node = std::make_shared<PyFunctionNode>(name, backward, ctx, jvp);
  node->set_once_differentiable(
      py::bool_(py::getattr(backward, "_mutagrad_once_differentiable", py::bool_(false))));
  VariableList tensors;
  std::vector<bool> is_tensor;
  std::vector<py::handle> tensor_objects;
  for (py::handle a : args) {
    const bool t = py::isinstance<Tensor>(a);
    is_tensor.push_back(t);
    if (t) {
      tensors.push_back(a.cast<Tensor>());
      tensor_objects.push_back(a);
    }
  }
  node->arg_is_tensor = is_tensor;
  node->prepare(tensors, is_tensor);
  ctx.attr("_state") = FunctionState{node};
  py::tuple needs(args.size());
  for (size_t i = 0, k = 0; i < args.size(); ++i) {
    needs[i] = py::bool_(is_tensor[i] && node->needs_input_grad(k));
    if (is_tensor[i]) ++k;
  }
  ctx.attr("needs_input_grad") = needs;

  py::object result;
  {
    autograd::AutoGradMode no_grad(false);
    autograd::fwd::SuspendAllLevels primals(node->has_pending_tangents());  // jvp: tangents
    result = cls.attr("forward")(ctx, *args);
  }
  auto tensors_of = [](py::handle seq) {
    VariableList out;
    for (py::handle h : seq) out.push_back(optional_tensor(h));
    return out;
  };
  autograd::AutogradContext& c = node->ctx();
  c.save_for_backward(tensors_of(ctx.attr("_to_save")));
  c.mark_non_differentiable(tensors_of(ctx.attr("_non_differentiable")));
  // The node owns ctx: a ctx that kept the outputs it saved would close a cycle (output ->
  // node -> ctx -> output) that Python's GC cannot see through C++ (torch clears them too).
  ctx.attr("_to_save") = py::tuple();
  ctx.attr("_non_differentiable") = py::tuple();
  c.set_materialize_grads(py::bool_(ctx.attr("_materialize_grads")));

  const bool is_tuple = py::isinstance<py::tuple>(result);
  py::tuple items = is_tuple ? py::reinterpret_borrow<py::tuple>(result) : py::make_tuple(result);
  VariableList outs;
  for (py::handle h : items) {
    node->output_is_tensor.push_back(py::isinstance<Tensor>(h));
    if (node->output_is_tensor.back()) outs.push_back(h.cast<Tensor>());
  }
  outs = node->wrap_outputs(std::move(outs));
  py::tuple wrapped(items.size());
  for (size_t i = 0, k = 0; i < items.size(); ++i) {
    if (!py::isinstance<Tensor>(items[i])) {
      wrapped[i] = items[i];  // non-tensor outputs pass through
      continue;
    }
    const Tensor& out = outs[k++];
    py::object obj = py::cast(out);
    // A dirty input comes back as the caller's own object (`y is x`, as torch).
    for (size_t j = 0; j < tensors.size(); ++j) {
      if (tensors[j].is_same(out)) obj = py::reinterpret_borrow<py::object>(tensor_objects[j]);
    }
    wrapped[i] = obj;
  }
  return is_tuple ? py::object(wrapped) : wrapped[0];
}

// ---- Saved-tensor hooks ------------------------------------------------------------------------

thread_local std::vector<std::shared_ptr<autograd::SavedTensorHooks>> t_saved_hooks_stack;

// Whether the memory a NumPy array spans overlaps `saved`'s storage (CPU only).
bool array_overlaps(const py::array& array, const Tensor& saved) {
  if (!saved.device().is_cpu() || array.size() == 0 || saved.storage().data() == nullptr) {
    return false;
  }
  const char* first = static_cast<const char*>(array.data());
  const char* last = first;
  for (py::ssize_t d = 0; d < array.ndim(); ++d) {
    const py::ssize_t span = (array.shape(d) - 1) * array.strides(d);
    (span < 0 ? first : last) += span;
  }
  last += array.itemsize();
  const char* begin = static_cast<const char*>(saved.storage().data());
  const char* end = begin + saved.storage().nbytes();
  return first < end && begin < last;
}

// Whether `obj` (what a Python pack hook returned) holds a tensor sharing `saved`'s storage:
// looked for in tuples, lists, dicts (keys and values), sets, NumPy arrays (their memory) and
// the attributes (__dict__) of instances, `budget` objects at most, each once, 64 levels deep (Note
// [Saved-tensor hooks]).
bool holds_alias(py::handle obj, const Tensor& saved, std::unordered_set<PyObject*>& seen,
                 int& budget, int depth = 0) {
  if (--budget < 0 || depth > 64) return false;
  if (py::isinstance<Tensor>(obj)) {
    return autograd::detail::shares_storage(obj.cast<const Tensor&>(), saved);
  }
  if (is_numpy_array(obj)) {
    return array_overlaps(py::reinterpret_borrow<py::array>(obj), saved);
  }
  const bool container = PyTuple_Check(obj.ptr()) || PyList_Check(obj.ptr()) ||
                         PyDict_Check(obj.ptr()) || PyAnySet_Check(obj.ptr());
  py::object attrs;
  if (!container) {
    // An instance of a user class: its attributes (not a module's, a class's or a function's).
    if (Py_TYPE(obj.ptr())->tp_dictoffset == 0 || PyModule_Check(obj.ptr()) ||
        PyType_Check(obj.ptr()) || PyCallable_Check(obj.ptr())) {
      return false;
    }
    PyObject* dict = PyObject_GenericGetDict(obj.ptr(), nullptr);
    if (dict == nullptr) {
      PyErr_Clear();
      return false;
    }
    attrs = py::reinterpret_steal<py::object>(dict);
  }
  if (!seen.insert(obj.ptr()).second) return false;
  if (!container) return holds_alias(attrs, saved, seen, budget, depth + 1);
  if (PyDict_Check(obj.ptr())) {
    for (auto item : py::reinterpret_borrow<py::dict>(obj)) {
      if (holds_alias(item.first, saved, seen, budget, depth + 1) ||
          holds_alias(item.second, saved, seen, budget, depth + 1)) {
        return true;
      }
    }
    return false;
  }
  for (py::handle item : obj) {
    if (holds_alias(item, saved, seen, budget, depth + 1)) return true;
  }
  return false;
}

void push_saved_tensors_hooks(const py::function& pack, const py::function& unpack) {
  PyRef p = hold(pack), u = hold(unpack);
  auto hooks = std::make_shared<autograd::SavedTensorHooks>();
  hooks->pack = [p](const Tensor& t) -> std::any {
    py::gil_scoped_acquire gil;
    return hold((*p)(t));
  };
  hooks->unpack = [u](const std::any& packed) -> Tensor {
    py::gil_scoped_acquire gil;
    py::object r = (*u)(*std::any_cast<const PyRef&>(packed));
    if (!py::isinstance<Tensor>(r)) {
      throw py::type_error(str("the unpack hook of saved_tensors_hooks must return a Tensor, got ",
                               std::string(py::str(py::type::of(r).attr("__name__")))));
    }
    return r.cast<Tensor>();
  };
  hooks->holds_alias = [](const std::any& packed, const Tensor& saved) {
    py::gil_scoped_acquire gil;
    std::unordered_set<PyObject*> seen;
    int budget = 10000;
    return holds_alias(*std::any_cast<const PyRef&>(packed), saved, seen, budget);
  };
  t_saved_hooks_stack.push_back(autograd::detail::set_saved_tensor_hooks(std::move(hooks)));
}

void pop_saved_tensors_hooks() {
  if (t_saved_hooks_stack.empty()) {
    throw autograd::AutogradError("no saved_tensors_hooks to leave on this thread");
  }
  autograd::detail::set_saved_tensor_hooks(std::move(t_saved_hooks_stack.back()));
  t_saved_hooks_stack.pop_back();
}

}  // namespace

void bind_custom_function(py::module_& m) {
  py::class_<RemovableHandle>(m, "RemovableHandle")
      .def("remove", &RemovableHandle::remove)
      .def_property_readonly("id", &RemovableHandle::id)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](RemovableHandle& h, py::args) { h.remove(); });

  py::class_<FunctionState>(m, "_FunctionState")
      .def("mark_dirty",
           [](const FunctionState& s, const py::tuple& tensors) {
             VariableList ts;
             for (py::handle h : tensors) {
               if (!py::isinstance<Tensor>(h)) {
                 throw py::type_error("mark_dirty only accepts Tensors");
               }
               ts.push_back(h.cast<Tensor>());
             }
             s.get()->ctx().mark_dirty(ts);
           })
      .def("saved_tensors",
           [](const FunctionState& s) { return to_tuple(s.get()->ctx().get_saved_variables()); });

  m.def("_function_apply", &function_apply, py::arg("cls"), py::arg("args"));

  auto tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor.def(
      "register_hook",
      [](const Tensor& self, const py::function& fn) {
        PyRef f = hold(fn);
        return autograd::register_hook(self, [f](const Tensor& grad) -> Tensor {
          py::gil_scoped_acquire gil;
          py::object r = (*f)(wrap_tensor(grad));
          if (r.is_none()) return Tensor();
          if (!py::isinstance<Tensor>(r)) {
            throw py::type_error(str("a tensor hook must return None or a Tensor, got ",
                                     std::string(py::str(py::type::of(r).attr("__name__")))));
          }
          return r.cast<Tensor>();
        });
      },
      py::arg("hook"));

  auto node = py::reinterpret_borrow<py::class_<Node, std::shared_ptr<Node>>>(m.attr("Node"));
  node.def(
          "register_hook",
          [](Node& self, const py::function& fn) {
            PyRef f = hold(fn);
            const int number_edge = python_number_edge(self);
            return self.register_hook([f, number_edge](const VariableList& grad_inputs,
                                                       const VariableList& grad_outputs) {
              py::gil_scoped_acquire gil;
              // torch's node has one more gradient (None) for a Python number operand.
              VariableList gi = grad_inputs;
              if (number_edge >= 0) gi.insert(number_edge == 0 ? gi.begin() : gi.end(), Tensor());
              VariableList r = grads_from((*f)(to_tuple(gi), to_tuple(grad_outputs)), "hook");
              if (number_edge >= 0 && r.size() == gi.size()) {
                r.erase(number_edge == 0 ? r.begin() : r.end() - 1);
              }
              return r;
            });
          },
          py::arg("fn"))
      .def(
          "register_prehook",
          [](Node& self, const py::function& fn) {
            PyRef f = hold(fn);
            return self.register_prehook([f](const VariableList& grad_outputs) {
              py::gil_scoped_acquire gil;
              return grads_from((*f)(to_tuple(grad_outputs)), "pre-hook");
            });
          },
          py::arg("fn"));

  m.def("_push_saved_tensors_hooks", &push_saved_tensors_hooks, py::arg("pack_hook"),
        py::arg("unpack_hook"));
  m.def("_pop_saved_tensors_hooks", &pop_saved_tensors_hooks);
}

}  // namespace mutagrad::python
