// nn::Module: registration, traversal, modes, state_dict and the repr (nn/module.h).
#include "nn/module.h"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "autograd/tensor_names.h"

namespace mutagrad::nn {

namespace {

// Note [Parameter names in errors]: bumped by every registration; the root named last.
std::atomic<uint64_t> structure_version{1};
std::atomic<const Module*> last_named_root{nullptr};
thread_local int forward_depth = 0;
// The root call's site (file null outside any call), for write_site().
thread_local CallSite root_site{nullptr, 0};

// A string that lives for the process (a recorded CallSite's file may be read by an error
// long after the module died). Interned: one copy per distinct label.
const char* intern(const std::string& s) {
  static std::mutex mutex;
  static auto* pool = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return pool->insert(s).first->c_str();
}

// Note [Cloning modules]: the copies made by the clone() running on this thread, by original.
struct CloneMemo {
  std::unordered_map<const void*, Tensor> tensors;
  std::unordered_map<const Module*, std::shared_ptr<Module>> modules;
};
thread_local CloneMemo* active_clone = nullptr;

std::string demangle(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name != nullptr ? name : type.name();
  std::free(name);
  return out;
}

// A copy of a parameter or buffer (once per tensor while the memo lives).
Tensor copy_tensor(CloneMemo& memo, const Tensor& t) {
  if (!t.defined()) return t;
  auto it = memo.tensors.find(t.unsafe_impl());
  if (it != memo.tensors.end()) return it->second;
  NoGradGuard no_grad;
  Tensor copy = t.detach().clone();
  if (t.requires_grad()) copy.requires_grad_(true);
  memo.tensors.emplace(t.unsafe_impl(), copy);
  return copy;
}

struct ForwardDepth {
  ForwardDepth() { ++forward_depth; }
  ~ForwardDepth() { --forward_depth; }
  ForwardDepth(const ForwardDepth&) = delete;
  ForwardDepth& operator=(const ForwardDepth&) = delete;
};

}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {}

// ---- Cloning (Note [Cloning modules]) ----

Module::Module(const Module& other)
    : std::enable_shared_from_this<Module>(),
      name_(other.name_),
      training_(other.training_),
      non_persistent_(other.non_persistent_) {
  CloneMemo* memo = active_clone;
  if (memo == nullptr) {
    throw ValueError(str(name_, ": a module is copied with clone(), not its copy constructor"));
  }
  hooks_ = std::make_shared<HookTable>(*other.hooks_);
  for (const auto& [name, t] : other.parameters_) parameters_.insert(name, copy_tensor(*memo, t));
  for (const auto& [name, t] : other.buffers_) buffers_.insert(name, copy_tensor(*memo, t));
  for (const auto& [name, child] : other.children_) {
    auto it = memo->modules.find(child.get());
    std::shared_ptr<Module> copy = it != memo->modules.end() ? it->second : child->clone_module();
    memo->modules.emplace(child.get(), copy);
    children_.insert(name, std::move(copy));
  }
}

std::shared_ptr<Module> Module::clone() const {
  if (active_clone != nullptr) {  // from a clone_module(): the memo's copy
    auto it = active_clone->modules.find(this);
    if (it != active_clone->modules.end()) return it->second;
    std::shared_ptr<Module> copy = clone_module();
    active_clone->modules.emplace(this, copy);
    return copy;
  }
  CloneMemo memo;
  struct Scope {
    explicit Scope(CloneMemo* m) { active_clone = m; }
    ~Scope() { active_clone = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  } scope(&memo);
  std::shared_ptr<Module> copy = clone_module();
  memo.modules.emplace(this, copy);
  return copy;
}

std::shared_ptr<Module> Module::clone_module() const {
  check_clone_type(typeid(*this), typeid(Module));
  throw InternalError("Module::clone_module(): check_clone_type let a plain Module through");
}

void Module::check_clone_type(const std::type_info& dynamic, const std::type_info& copied) const {
  if (dynamic == copied && dynamic != typeid(Module)) return;
  throw ValueError(
      str(name_, ".clone(): the module type ", demangle(dynamic), " does not implement clone()",
          copied == typeid(Module) ? "" : str(" (its base ", demangle(copied), " does)"),
          "; override `std::shared_ptr<Module> clone_module() const` in it: copy_module(*this), "
          "then rebind its member tensors and submodules with cloned() (Note [Cloning modules] in "
          "nn/module.h)"));
}

Tensor Module::cloned(const Tensor& t) {
  if (active_clone == nullptr || !t.defined()) return t;
  auto it = active_clone->tensors.find(t.unsafe_impl());
  return it == active_clone->tensors.end() ? t : it->second;
}

std::shared_ptr<Module> Module::cloned_module(const std::shared_ptr<Module>& module) {
  if (active_clone == nullptr || !module) return module;
  auto it = active_clone->modules.find(module.get());
  return it == active_clone->modules.end() ? module : it->second;
}

// ---- Calling ----

Tensor Module::forward(const Tensor& /*input*/) {
  throw ValueError(str(name_, " has no one-input forward(); call its own forward(...)"));
}

Tensor Module::run_forward_pre_hooks(const Tensor& input) {
  Tensor x = input;
  // A copy: a hook may remove itself (or register another) while running.
  auto pre = hooks_->pre;
  for (auto& [id, hook] : pre) {
    if (std::optional<Tensor> replaced = hook(*this, x)) x = *replaced;
  }
  return x;
}

Tensor Module::run_forward_hooks(const Tensor& input, const Tensor& output) {
  Tensor y = output;
  auto post = hooks_->post;
  for (auto& [id, hook] : post) {
    if (std::optional<Tensor> replaced = hook(*this, input, y)) y = *replaced;
  }
  return y;
}

void Module::name_tree() {
  const uint64_t version = structure_version.load(std::memory_order_acquire);
  if (named_version_ == version && last_named_root.load(std::memory_order_acquire) == this) return;
  for (const auto& [path, m] : named_modules()) {
    m->label_ = path.empty() ? m->name_ : path + " (" + m->name_ + ")";
  }
  for (const auto& [name, t] : named_parameters()) autograd::set_tensor_name(t, name);
  for (const auto& [name, t] : named_buffers()) {
    if (t.defined()) autograd::set_tensor_name(t, name);
  }
  named_version_ = version;
  last_named_root.store(this, std::memory_order_release);
}

CallSite Module::write_site() const {
  const std::string& label = label_.empty() ? name_ : label_;
  if (root_site.file == nullptr) return CallSite{intern("module " + label), 0};
  return CallSite{intern(str("module ", label, ", called from ", root_site.file)), root_site.line};
}

Tensor Module::operator()(const Tensor& input, CallSite site) {
  // The root call names the tree and keeps the caller's site for the whole call.
  struct RootSite {
    bool root = forward_depth == 0;
    explicit RootSite(CallSite s) {
      if (root) root_site = s;
    }
    ~RootSite() {
      if (root) root_site = CallSite{nullptr, 0};
    }
  } root_guard(site);
  if (root_guard.root) name_tree();
  ForwardDepth depth;
  Tensor x = hooks_->pre.empty() ? input : run_forward_pre_hooks(input);
  Tensor y = forward(x);
  return hooks_->post.empty() ? y : run_forward_hooks(x, y);
}

HookHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
  uint64_t id = hooks_->next_id++;
  hooks_->pre.emplace_back(id, std::move(hook));
  std::weak_ptr<HookTable> table = hooks_;
  return HookHandle([table, id] {
    if (auto t = table.lock()) {
      t->pre.erase(std::remove_if(t->pre.begin(), t->pre.end(),
                                  [id](const auto& e) { return e.first == id; }),
                   t->pre.end());
    }
  });
}

HookHandle Module::register_forward_hook(ForwardHook hook) {
  uint64_t id = hooks_->next_id++;
  hooks_->post.emplace_back(id, std::move(hook));
  std::weak_ptr<HookTable> table = hooks_;
  return HookHandle([table, id] {
    if (auto t = table.lock()) {
      t->post.erase(std::remove_if(t->post.begin(), t->post.end(),
                                   [id](const auto& e) { return e.first == id; }),
                    t->post.end());
    }
  });
}

// ---- Registration ----

void Module::check_new_name(const std::string& name, const char* what) const {
  if (name.empty() || name.find('.') != std::string::npos) {
    throw ValueError(str(name_, ".register_", what, "(): the name '", name,
                         "' is empty or contains '.'; use a plain identifier"));
  }
  if (parameters_.contains(name) || buffers_.contains(name) || children_.contains(name)) {
    throw ValueError(str(name_, ".register_", what, "(): '", name,
                         "' is already a parameter, buffer or submodule of this module"));
  }
}

Tensor& Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "parameter");
  if (!tensor.defined()) {
    throw ValueError(str(name_, ".register_parameter('", name,
                         "'): the tensor is undefined; leave an absent parameter unregistered"));
  }
  if (!tensor.is_leaf()) {
    throw ValueError(str(name_, ".register_parameter('", name,
                         "'): a parameter must be a leaf (it has grad_fn ",
                         tensor.grad_fn()->name(), "); register x.detach() instead"));
  }
  tensor.requires_grad_(requires_grad);
  structure_version.fetch_add(1, std::memory_order_acq_rel);
  return parameters_.insert(name, std::move(tensor));
}

Tensor& Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_new_name(name, "buffer");
  if (!persistent) non_persistent_.insert(name);
  structure_version.fetch_add(1, std::memory_order_acq_rel);
  return buffers_.insert(name, std::move(tensor));
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  if (!module) {
    throw ValueError(str(name_, ".register_module('", name, "'): the module is null"));
  }
  structure_version.fetch_add(1, std::memory_order_acq_rel);
  children_.insert(name, std::move(module));
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> module) {
  if (!children_.contains(name)) {
    throw ValueError(str(name_, ".replace_module('", name, "'): there is no submodule '", name,
                         "'; register it with register_module"));
  }
  if (!module) {
    throw ValueError(str(name_, ".replace_module('", name, "'): the module is null"));
  }
  structure_version.fetch_add(1, std::memory_order_acq_rel);
  children_.insert_or_assign(name, std::move(module));
}

// ---- Traversal ----

void Module::collect_modules(const std::string& prefix, std::unordered_set<const Module*>& seen,
                             OrderedDict<std::shared_ptr<Module>>& out) {
  if (!seen.insert(this).second) return;
  // A module not owned by a shared_ptr (a stack-allocated root) is listed through an aliasing
  // pointer that owns nothing.
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  out.insert(prefix, self);
  for (auto& [name, child] : children_) {
    child->collect_modules(prefix.empty() ? name : prefix + "." + name, seen, out);
  }
}

OrderedDict<std::shared_ptr<Module>> Module::named_modules(const std::string& prefix) {
  OrderedDict<std::shared_ptr<Module>> out;
  std::unordered_set<const Module*> seen;
  collect_modules(prefix, seen, out);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules() { return named_modules().values(); }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  std::unordered_set<const Module*> seen;
  for (const auto& [name, child] : children_) {
    if (seen.insert(child.get()).second) out.push_back(child);
  }
  return out;
}

OrderedDict<Tensor> Module::named_members(bool recurse, bool buffers) const {
  OrderedDict<Tensor> out;
  std::unordered_set<const void*> seen;
  auto add_own = [&](const Module& m, const std::string& prefix) {
    for (const auto& [name, t] : buffers ? m.buffers_ : m.parameters_) {
      if (!seen.insert(t.unsafe_impl()).second) continue;
      out.insert(prefix.empty() ? name : prefix + "." + name, t);
    }
  };
  if (!recurse) {
    add_own(*this, "");
    return out;
  }
  // named_modules() needs a non-const this only to hand out shared_ptrs; nothing is changed.
  for (const auto& [prefix, m] : const_cast<Module*>(this)->named_modules()) add_own(*m, prefix);
  return out;
}

OrderedDict<Tensor> Module::named_parameters(bool recurse) const {
  return named_members(recurse, /*buffers=*/false);
}
OrderedDict<Tensor> Module::named_buffers(bool recurse) const {
  return named_members(recurse, /*buffers=*/true);
}
std::vector<Tensor> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}
std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

// ---- Mode and state ----

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      // As torch: a grad with history is detached first, then zeroed in place.
      if (g.grad_fn()) {
        g = g.detach();
        p.set_grad(g);
      } else {
        g.requires_grad_(false);
      }
      g.zero_();
    }
  }
}

void Module::requires_grad_(bool requires_grad) {
  for (Tensor& p : parameters()) p.requires_grad_(requires_grad);
}

namespace {

// Converts every distinct parameter, buffer and gradient of `m`'s tree first, then rebinds each
// to its converted data, keeping its identity (torch's param.data = fn(param)): a conversion
// that fails (a device without a backend) leaves every tensor as it was. Only floating tensors
// take `dtype`; a tensor without `device` keeps its own.
void convert_all(Module& m, std::optional<Device> device, std::optional<ScalarType> dtype) {
  std::vector<std::pair<Tensor, Tensor>> rebind;  // (tensor, its new data)
  {
    NoGradGuard no_grad;
    auto plan = [&](const Tensor& t) {
      if (!t.defined()) return;
      const Device dev = device.value_or(t.device());
      const std::optional<ScalarType> target = t.is_floating_point() ? dtype : std::nullopt;
      if (t.device() == dev && (!target || *target == t.dtype())) return;
      rebind.emplace_back(t, t.detach().to(dev, target));
      Tensor g = t.grad();
      if (g.defined()) rebind.emplace_back(g, g.to(dev, target));
    };
    for (const Tensor& t : m.parameters()) plan(t);
    for (const Tensor& t : m.buffers()) plan(t);
  }
  for (auto& [t, data] : rebind) t.set_data(data);
}

}  // namespace

void Module::to(Device device, std::optional<ScalarType> dtype) {
  if (dtype && !is_floating_point(*dtype)) {
    throw DTypeError(str(name_, ".to(): modules take floating dtypes only, got ",
                         dtype_name(*dtype), "; use kFloat32 or kFloat64"));
  }
  convert_all(*this, device, dtype);
}

void Module::to(ScalarType dtype) {
  if (!is_floating_point(dtype)) {
    throw DTypeError(str(name_, ".to(): modules take floating dtypes only, got ", dtype_name(dtype),
                         "; use kFloat32 or kFloat64"));
  }
  convert_all(*this, std::nullopt, dtype);
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, child] : children_) child->apply(fn);
  fn(*this);
}

void Module::collect_state(const std::string& prefix, StateDict& out) const {
  for (const auto& [name, t] : parameters_) out.insert(prefix + name, t.detach());
  for (const auto& [name, t] : buffers_) {
    if (t.defined() && non_persistent_.count(name) == 0) out.insert(prefix + name, t.detach());
  }
  for (const auto& [name, child] : children_) child->collect_state(prefix + name + ".", out);
}

StateDict Module::state_dict() const {
  StateDict out;
  collect_state("", out);
  return out;
}

namespace {

std::string shape_str(IntArrayRef sizes) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << ']';
  return out.str();
}

}  // namespace

void Module::load_state_dict(const StateDict& state_dict, bool strict, CallSite site) {
  // The module's own tensors (not detached: the writes must reach the parameters).
  StateDict own;
  {
    // Depth first in registration order, as collect_state.
    std::function<void(const std::string&, const Module&)> walk = [&](const std::string& prefix,
                                                                      const Module& m) {
      for (const auto& [name, t] : m.parameters_) own.insert(prefix + name, t);
      for (const auto& [name, t] : m.buffers_) {
        if (t.defined() && m.non_persistent_.count(name) == 0) own.insert(prefix + name, t);
      }
      for (const auto& [name, child] : m.children_) walk(prefix + name + ".", *child);
    };
    walk("", *this);
  }

  std::vector<std::string> missing, unexpected, shape_problems, dtype_problems;
  for (const auto& [key, t] : own) {
    const Tensor* src = state_dict.find(key);
    if (src == nullptr) {
      missing.push_back(key);
      continue;
    }
    if (!src->defined()) {
      shape_problems.push_back(str(key, ": the value is an undefined tensor"));
    } else if (src->sizes() != t.sizes()) {
      shape_problems.push_back(str(key, ": copying a param with shape ", shape_str(src->sizes()),
                                   ", the shape in the current model is ", shape_str(t.sizes())));
    } else if (src->dtype() != t.dtype()) {
      dtype_problems.push_back(str(key, ": the value's dtype is ", dtype_name(src->dtype()),
                                   ", the model's is ", dtype_name(t.dtype()),
                                   " (convert it with .to())"));
    }
  }
  for (const auto& [key, t] : state_dict) {
    if (!own.contains(key)) unexpected.push_back(key);
  }
  auto list = [](const std::vector<std::string>& keys) {
    std::string out;
    for (const std::string& k : keys) out += (out.empty() ? "\"" : ", \"") + k + "\"";
    return out;
  };
  if (!strict) {
    missing.clear();
    unexpected.clear();
  }
  std::string message;
  if (!missing.empty()) message += "\n\tMissing key(s) in state_dict: " + list(missing);
  if (!unexpected.empty()) message += "\n\tUnexpected key(s) in state_dict: " + list(unexpected);
  for (const std::string& p : shape_problems) message += "\n\tsize mismatch for " + p;
  for (const std::string& p : dtype_problems) message += "\n\tdtype mismatch for " + p;
  if (!message.empty()) {
    message =
        str("Error(s) in loading state_dict for ", name_, ":", message, "\n\tNothing was loaded.");
    if (!shape_problems.empty() && missing.empty() && unexpected.empty() &&
        dtype_problems.empty()) {
      throw ShapeError(message);
    }
    if (!dtype_problems.empty() && missing.empty() && unexpected.empty() &&
        shape_problems.empty()) {
      throw DTypeError(message);
    }
    throw ValueError(message);
  }

  // Each distinct tensor once, from its last key (Note [load_state_dict checks first]).
  std::unordered_map<const void*, std::string> last_key;
  for (const auto& [key, t] : own) {
    if (state_dict.contains(key)) last_key[t.unsafe_impl()] = key;
  }
  NoGradGuard no_grad;
  for (auto& [key, t] : own) {
    auto it = last_key.find(t.unsafe_impl());
    if (it == last_key.end() || it->second != key) continue;
    Tensor target = t;
    target.copy_(state_dict[key], site);
  }
}

// ---- Printing ----

namespace {

// torch's _addindent: every line after the first indented by `spaces`.
std::string add_indent(const std::string& text, int spaces) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += std::string(spaces, ' ');
  }
  return out;
}

}  // namespace

std::string Module::repr() const {
  std::vector<std::string> lines;
  std::string extra = extra_repr();
  if (!extra.empty()) {
    std::istringstream in(extra);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  for (const auto& [name, child] : children_) {
    lines.push_back("(" + name + "): " + add_indent(child->repr(), 2));
  }
  std::string out = name_ + "(";
  if (!lines.empty()) {
    if (children_.empty() && lines.size() == 1) {
      out += lines[0];
    } else {
      out += "\n  ";
      for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n  " : "") + lines[i];
      out += "\n";
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& out, const Module& module) { return out << module.repr(); }

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The shortest %g form that reads back exactly, in Python's spelling (1.0, 1e-05, 0.1).
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace mutagrad::nn
