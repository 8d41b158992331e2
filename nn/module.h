// nn::Module: the base of the C++ layers, as libtorch's torch::nn::Module. A module owns named
// parameters, buffers and submodules; the layers (nn/linear.h, nn/activation.h, ...) register
// theirs in their constructors.
//
//   auto model = std::make_shared<nn::Sequential>(
//       std::make_shared<nn::Linear>(784, 128), std::make_shared<nn::ReLU>(),
//       std::make_shared<nn::Linear>(128, 10));
//   Tensor logits = (*model)(x);                       // forward hooks run around forward()
//   for (auto& [name, p] : model->named_parameters()) ...   // "0.weight", "0.bias", ...
//   nn::StateDict saved = model->state_dict();           // detached, torch's key order
//   model->load_state_dict(saved);                       // checks everything, then copies
//   std::cout << *model;                                 // torch's repr
//
// Note [Modules are plain shared_ptrs]
// libtorch wraps each layer in a ModuleHolder (`Linear` holding a `LinearImpl`) so that
// `Linear(3, 4)` reads like Python. We use the simpler design the holder hides: a layer is a
// class deriving from Module, shared through std::shared_ptr (std::make_shared<nn::Linear>(3, 4)),
// and register_module takes and returns the shared_ptr. A module shared by two parents (tied
// layers) or a Tensor registered in two modules (tied weights) is one object; parameters() and
// modules() list it once, state_dict() under every key that reaches it, as torch.
//
// Note [Calling a module]
// Layers with one input implement `Tensor forward(const Tensor&)`; `operator()` runs the forward
// pre-hooks (which may replace the input), forward(), then the forward hooks (which may replace
// the output), as torch's Module.__call__. Losses take (input, target): their operator() runs
// the hooks with the input. Sequential calls its children through operator(), so their hooks
// run.
//
// Note [Parameter names in errors]
// A call of a module that is not inside another module's forward on this thread (a root call)
// names every parameter and buffer of its tree by its path from that root ("0.weight"), in
// the registry the stale-tensor error reads (autograd/tensor_names.h), as the Python package
// does: a step that writes a parameter between forward and backward is reported as "... of
// 0.weight ...". Naming runs again only when a registration anywhere changed a tree or another
// root named last, so a training loop pays two integer compares per call. Tied tensors take
// the first path, as named_parameters lists them. A write a layer makes in its forward (an
// inplace ReLU, BatchNorm's running statistics) is recorded with write_site(): "module
// features.2 (ReLU), called from train.cc" and the line of the root call, so the stale-tensor
// error reads "relu_ at module features.2 (ReLU), called from train.cc:31", as in Python.
// The naming writes the modules' labels unsynchronized: a tree whose structure changes is not
// to be called from two threads at once (calls of an unchanged, already named tree only read).
//
// Note [load_state_dict checks first]
// load_state_dict(strict) first compares every key, shape and dtype with the module's own
// state_dict() (missing and unexpected keys only under strict) and, if anything differs,
// raises one error listing every problem and changes nothing. Then each distinct tensor is
// written once with copy_ under no-grad: one version bump each, recorded with the caller's
// file:line. A tied weight reached by two keys is written once, from the last key, which is
// the value torch's two copies leave. torch converts a float64 value into a float32 parameter
// silently; we refuse a dtype mismatch (DTypeError), since the rounding is rarely intended.
//
// Note [Cloning modules]
// clone() is libtorch's Cloneable::clone (and what copy.deepcopy gives in torch): a new module
// tree of the same types, names, options and training mode whose parameters and buffers are
// copies (equal values, their own storage and version counters, requires_grad kept, gradients
// not copied) and whose submodules are clones. A tensor or submodule reached twice (tied
// weights, a shared layer) is copied once, so the copy is tied the same way; forward hooks are
// copied. Each layer type implements clone_module(): it copies itself with copy_module() (the
// copy constructor, which deep-copies the Module part) and rebinds its member handles (weight,
// bias, held submodules) to the copies with cloned(). A type that does not override it,
// including a subclass of a layer, makes clone() throw ValueError naming the type: a copy of
// the base part alone would silently lose the subclass. A module is copied only through
// clone(); its copy constructor refuses to run outside one.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mutagrad.h"
#include "nn/ordered_dict.h"

namespace mutagrad::nn {

class Module;

// torch's state_dict: name -> tensor in registration order.
using StateDict = OrderedDict<Tensor>;

// Removes a hook when remove() is called (torch's RemovableHandle); dropping it keeps the hook.
class HookHandle {
 public:
  HookHandle() = default;
  explicit HookHandle(std::function<void()> remove) : remove_(std::move(remove)) {}
  void remove() {
    if (remove_) remove_();
    remove_ = nullptr;
  }

 private:
  std::function<void()> remove_;
};

// A forward pre-hook: (module, input) -> a replacement input, or nullopt to keep it.
using ForwardPreHook = std::function<std::optional<Tensor>(Module&, const Tensor&)>;
// A forward hook: (module, input, output) -> a replacement output, or nullopt to keep it.
using ForwardHook = std::function<std::optional<Tensor>(Module&, const Tensor&, const Tensor&)>;

class Module : public std::enable_shared_from_this<Module> {
 public:
  // `name`: the type's name in the repr ("Linear").
  explicit Module(std::string name);
  virtual ~Module() = default;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }

  // ---- Calling ----
  // One-input forward; the base throws ValueError (a container or a loss has none).
  virtual Tensor forward(const Tensor& input);
  // Pre-hooks, forward(), hooks (Note [Calling a module]). `site`: the caller's line, for the
  // writes the call makes (Note [Parameter names in errors]).
  Tensor operator()(const Tensor& input, CallSite site = CallSite::current());
  HookHandle register_forward_pre_hook(ForwardPreHook hook);
  HookHandle register_forward_hook(ForwardHook hook);

  // ---- Registration ----
  // Registers `tensor` as parameter `name` (requires_grad_(requires_grad) is set on it) and
  // returns the stored handle. ValueError for an empty or dotted name or one already taken.
  Tensor& register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // A buffer: state that is not a parameter (running statistics). Non-persistent buffers are
  // left out of state_dict().
  Tensor& register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module takes a Module");
    add_child(name, module);
    return module;
  }
  // Replaces the registered child `name` (ValueError when there is none).
  template <typename M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "replace_module takes a Module");
    replace_child(name, module);
    return module;
  }

  // ---- Traversal (torch's order: self, then children depth first; duplicates once) ----
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::shared_ptr<Module>> named_children() const { return children_; }
  // Includes this module first (as the empty name, or `prefix`).
  std::vector<std::shared_ptr<Module>> modules();
  OrderedDict<std::shared_ptr<Module>> named_modules(const std::string& prefix = "");

  // ---- Mode and state ----
  // Sets training mode on this module and every descendant.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Every parameter's gradient: undefined (set_to_none) or zeroed in place.
  void zero_grad(bool set_to_none = true);
  // Sets requires_grad on every parameter.
  void requires_grad_(bool requires_grad = true);
  // Moves (and converts) every parameter, buffer and gradient, keeping each tensor's identity
  // (x.data = x.to(...), as torch): an optimizer holding them keeps working. to(dtype) converts
  // only floating tensors, as torch (num_batches_tracked stays int64). Everything is converted
  // before anything is rebound: a failed conversion changes nothing.
  void to(Device device, std::optional<ScalarType> dtype = std::nullopt);
  void to(ScalarType dtype);
  // fn on every descendant then on this module (torch's apply).
  void apply(const std::function<void(Module&)>& fn);

  // Parameters then persistent buffers of each module, recursively, detached; tied tensors
  // under each key.
  StateDict state_dict() const;
  // See Note [load_state_dict checks first]. Error (strict key mismatch), ShapeError or
  // DTypeError, with every problem listed.
  void load_state_dict(const StateDict& state_dict, bool strict = true,
                       CallSite site = CallSite::current());

  // A deep copy of the tree (Note [Cloning modules]): ValueError naming the type when a module
  // in it does not implement clone_module(); the original is never changed.
  std::shared_ptr<Module> clone() const;

  // ---- Printing ----
  // The text inside the parentheses of this module's repr ("in_features=4, ...").
  virtual std::string extra_repr() const { return ""; }
  // torch's repr of the module tree.
  std::string repr() const;

  // Direct access to this module's own (non-recursive) entries.
  const OrderedDict<Tensor>& own_parameters() const { return parameters_; }
  const OrderedDict<Tensor>& own_buffers() const { return buffers_; }

 protected:
  // Used by copy_module() only, while clone() runs (else ValueError): copies the name, mode,
  // hooks and registrations, each parameter and buffer copied, each child cloned.
  Module(const Module& other);
  // The copy of this module alone (Note [Cloning modules]); the base throws ValueError.
  virtual std::shared_ptr<Module> clone_module() const;
  // clone_module()'s first step: a copy of `self` through M's copy constructor; ValueError
  // when self's dynamic type is not M (a subclass that did not override clone_module()).
  template <typename M>
  std::shared_ptr<M> copy_module(const M& self) const {
    check_clone_type(typeid(self), typeid(M));
    return std::make_shared<M>(self);
  }
  // The copy the running clone() made of `t`, one of the tree's parameters or buffers; `t`
  // itself when it is none (undefined, or a tensor the tree does not register).
  static Tensor cloned(const Tensor& t);
  // The clone of a registered submodule (a member pointer to a child); the module itself when
  // it is not in the tree.
  template <typename M>
  static std::shared_ptr<M> cloned(const std::shared_ptr<M>& module) {
    return std::static_pointer_cast<M>(cloned_module(module));
  }

  // The site to record a write this module makes in its forward with (Note [Parameter names in
  // errors]); outside a call through operator(), "module <Name>" at line 0.
  CallSite write_site() const;
  // Runs the forward hooks of a call whose forward() the caller ran (losses).
  Tensor run_forward_hooks(const Tensor& input, const Tensor& output);
  Tensor run_forward_pre_hooks(const Tensor& input);

 private:
  void check_clone_type(const std::type_info& dynamic, const std::type_info& copied) const;
  static std::shared_ptr<Module> cloned_module(const std::shared_ptr<Module>& module);
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void replace_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* what) const;
  void collect_modules(const std::string& prefix, std::unordered_set<const Module*>& seen,
                       OrderedDict<std::shared_ptr<Module>>& out);
  void collect_state(const std::string& prefix, StateDict& out) const;
  OrderedDict<Tensor> named_members(bool recurse, bool buffers) const;

  // Note [Parameter names in errors]: names the tree unless it is named as it is.
  void name_tree();

  std::string name_;
  bool training_ = true;
  uint64_t named_version_ = 0;
  std::string label_;  // "features.2 (ReLU)" from the last naming root; empty: name_
  OrderedDict<Tensor> parameters_;
  OrderedDict<Tensor> buffers_;
  std::unordered_set<std::string> non_persistent_;
  OrderedDict<std::shared_ptr<Module>> children_;
  // Shared with the handles (weakly), so a handle outliving its module removes nothing.
  struct HookTable {
    uint64_t next_id = 0;
    std::vector<std::pair<uint64_t, ForwardPreHook>> pre;
    std::vector<std::pair<uint64_t, ForwardHook>> post;
  };
  std::shared_ptr<HookTable> hooks_ = std::make_shared<HookTable>();
};

std::ostream& operator<<(std::ostream& out, const Module& module);

// Python's repr of a float (0.1, 1e-05, 1.0), for extra_repr().
std::string python_float_repr(double value);
inline const char* python_bool(bool value) { return value ? "True" : "False"; }

}  // namespace mutagrad::nn
