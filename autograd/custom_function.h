// Custom autograd Functions: an op with a hand-written backward, as libtorch's
// torch::autograd::Function<T>. See docs/extending.md.
//
//   struct MulConst : autograd::Function<MulConst> {
//     static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double k) {
//       ctx->saved_data["k"] = k;
//       return x * k;
//     }
//     static autograd::VariableList backward(autograd::AutogradContext* ctx,
//                                            autograd::VariableList grads) {
//       return {grads[0] * ctx->saved_data["k"].to_double(), Tensor()};  // one per argument
//     }
//     // Optional, forward mode: the arguments' tangents (zeros for a tensor without one,
//     // undefined for a non-tensor) -> one tangent per output.
//     static autograd::VariableList jvp(autograd::AutogradContext* ctx,
//                                       autograd::VariableList tangents) {
//       return {tangents[0] * ctx->saved_data["k"].to_double()};
//     }
//   };
//   Tensor y = MulConst::apply(x, 2.0);    // y.grad_fn()->name() == "MulConst"
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/saved_variable.h"

namespace mutagrad::autograd {

class CustomFunctionNode;

// A non-tensor value kept for backward in AutogradContext::saved_data. A Tensor kept here is
// not version-checked: use save_for_backward for tensors.
class SavedValue {
 public:
  SavedValue() = default;
  SavedValue(bool v) : value_(v) {}                             // NOLINT: implicit by design
  SavedValue(int v) : value_(static_cast<int64_t>(v)) {}        // NOLINT
  SavedValue(int64_t v) : value_(v) {}                          // NOLINT
  SavedValue(double v) : value_(v) {}                           // NOLINT
  SavedValue(const char* v) : value_(std::string(v)) {}         // NOLINT
  SavedValue(std::string v) : value_(std::move(v)) {}           // NOLINT
  SavedValue(std::vector<int64_t> v) : value_(std::move(v)) {}  // NOLINT
  SavedValue(Tensor v) : value_(std::move(v)) {}                // NOLINT
  // Each throws ValueError when the value holds another kind (to_double() also takes ints).
  bool to_bool() const;
  int64_t to_int() const;
  double to_double() const;
  const std::string& to_string() const;
  const std::vector<int64_t>& to_int_list() const;
  const Tensor& to_tensor() const;

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>, Tensor>
      value_;
};

// What forward and backward of a custom Function see (libtorch's AutogradContext).
class AutogradContext {
 public:
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Non-tensor state for backward.
  std::unordered_map<std::string, SavedValue> saved_data;

  // Tensors backward needs (inputs or outputs of forward). Saved as SavedVariables when forward
  // returns: an in-place write after that makes backward raise, naming the write.
  void save_for_backward(VariableList to_save);
  // The saved tensors (in backward; version-checked). AutogradError when freed or stale.
  VariableList get_saved_variables() const;
  // Inputs the forward writes in place. Call it before the write: each tensor is checked as a
  // built-in in-place op checks its destination (AutogradError for a leaf requiring grad, a view
  // of one, a view made in no_grad mode) and must be returned as an output.
  void mark_dirty(const VariableList& inputs);
  // Outputs that get no gradient (indices, masks); backward receives zeros (or undefined
  // tensors without materialization) for them.
  void mark_non_differentiable(const VariableList& outputs);
  // Default true: undefined output gradients reach backward as zeros. False: as undefined.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // Whether the tensor argument `tensor_index` (counting tensor arguments only, a vector of
  // tensors as one per element) needs a gradient; in backward, whether it is wanted now.
  bool needs_input_grad(size_t tensor_index) const;

 private:
  friend class CustomFunctionNode;
  CustomFunctionNode* node_ = nullptr;
  VariableList to_save_;
  std::vector<SavedVariable> saved_;
  VariableList dirty_;
  VariableList non_differentiable_;
  bool materialize_grads_ = true;
};

// The node of one application of a custom Function. The libtorch-style template below and the
// Python binding (mutagrad.autograd.Function) derive from it.
class CustomFunctionNode : public Node {
 public:
  explicit CustomFunctionNode(std::string name) : name_(std::move(name)) { ctx_.node_ = this; }
  const char* name() const override { return name_.c_str(); }
  VariableList apply(VariableList&& grads) override;
  void visit_saved(SavedVisitor& visitor) override;
  AutogradContext& ctx() { return ctx_; }
  // The user's backward is not differentiable: a double backward through it raises.
  void set_once_differentiable(bool value) { once_differentiable_ = value; }

  // ---- apply() steps (used by Function<T>::apply and the Python binding) ----------------------
  // Before forward: records the tensor arguments `tensors` (in order), their versions and
  // gradient edges; `is_tensor` has one flag per forward argument (tensor or not).
  void prepare(VariableList tensors, std::vector<bool> is_tensor);
  // After forward: validates mark_dirty, bumps and rebases dirty inputs, gives the outputs
  // this node as history (an input returned unmodified is returned as a view of it), saves the
  // tensors of save_for_backward. Returns the outputs to hand to the caller.
  VariableList wrap_outputs(VariableList outputs);
  // Whether a graph is recorded (grad mode on and some tensor argument requires grad).
  bool is_recording() const { return recording_; }
  bool needs_input_grad(size_t tensor_index) const;
  // Forward mode: whether the Function defines jvp (without one, a dual argument is refused
  // with ForwardADNotImplementedError naming the Function), and whether this application
  // has argument tangents to push through it (forward then runs with every level suspended).
  virtual bool has_jvp() const { return false; }
  bool has_pending_tangents() const { return !pending_tangents_.empty(); }

 protected:
  // The user's backward: one gradient per forward argument (undefined for non-tensors).
  virtual VariableList call_backward(VariableList grads) = 0;
  // The user's jvp: one tangent per tensor argument (zeros where it has none) -> one per
  // output (undefined: none). Called after forward, with the tangents' level suspended.
  virtual VariableList call_jvp(VariableList /*tangents*/) { return {}; }

 private:
  friend class AutogradContext;
  void check_dirty(const Tensor& t) const;

  std::string name_;
  AutogradContext ctx_;
  std::vector<bool> is_tensor_arg_;   // per forward argument
  std::vector<bool> output_defined_;  // per forward output: materialize its gradient
  VariableList inputs_;               // tensor arguments, during apply only
  std::vector<uint32_t> input_versions_;
  bool recording_ = false;
  bool grad_mode_ = false;  // grad mode around apply (forward itself runs in no_grad)
  bool in_backward_ = false;
  bool once_differentiable_ = false;
  // Per level: the tensor arguments' tangents, taken before forward (prepare).
  std::vector<std::pair<int64_t, VariableList>> pending_tangents_;
};

namespace detail {
// "MyOp" for typeid(ns::MyOp).name(): demangled, without namespaces.
std::string custom_function_name(const char* mangled);

inline void collect_arg(VariableList& tensors, std::vector<bool>& is_tensor, const Tensor& t) {
  tensors.push_back(t);
  is_tensor.push_back(true);
}
inline void collect_arg(VariableList& tensors, std::vector<bool>& is_tensor,
                        const VariableList& list) {
  for (const Tensor& t : list) collect_arg(tensors, is_tensor, t);
}
template <typename T>
void collect_arg(VariableList& /*tensors*/, std::vector<bool>& is_tensor, const T& /*other*/) {
  is_tensor.push_back(false);
}

inline VariableList to_list(Tensor t) { return {std::move(t)}; }
inline VariableList to_list(VariableList ts) { return ts; }
template <typename R>
R from_list(VariableList ts) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return std::move(ts[0]);
  } else {
    return ts;
  }
}

template <class T>
class CppFunctionNode final : public CustomFunctionNode {
 public:
  CppFunctionNode() : CustomFunctionNode(type_name()) {}

 protected:
  VariableList call_backward(VariableList grads) override {
    return T::backward(&ctx(), std::move(grads));
  }
  VariableList call_jvp(VariableList tangents) override {
    if constexpr (has_jvp_v) {
      return T::jvp(&ctx(), std::move(tangents));
    } else {
      return {};
    }
  }

 public:
  bool has_jvp() const override { return has_jvp_v; }

 private:
  template <typename U>
  static constexpr auto detect_jvp(int) -> decltype(U::jvp, bool()) {
    return true;
  }
  template <typename U>
  static constexpr bool detect_jvp(...) {
    return false;
  }
  static constexpr bool has_jvp_v = detect_jvp<T>(0);
  static const std::string& type_name() {
    static const std::string name = custom_function_name(typeid(T).name());
    return name;
  }
};
}  // namespace detail

// CRTP base of a custom Function T with
//   static Tensor|VariableList forward(AutogradContext*, Args...);
//   static VariableList backward(AutogradContext*, VariableList grad_outputs);
// backward returns one gradient per forward argument (a VariableList argument counts once per
// element; undefined for non-tensor arguments and inputs that need none). Set
// `static constexpr bool is_once_differentiable = true;` in T when backward is not itself
// differentiable: a double backward through it then raises instead of returning wrong values.
template <class T>
struct Function {
  template <typename... Args>
  static auto apply(Args&&... args) {
    auto node = std::make_shared<detail::CppFunctionNode<T>>();
    if constexpr (has_once_flag<T>(0)) node->set_once_differentiable(T::is_once_differentiable);
    VariableList tensors;
    std::vector<bool> is_tensor;
    (detail::collect_arg(tensors, is_tensor, args), ...);
    node->prepare(std::move(tensors), std::move(is_tensor));
    using Result = decltype(T::forward(&node->ctx(), std::forward<Args>(args)...));
    VariableList outputs;
    {
      AutoGradMode no_grad(false);
      fwd::SuspendAllLevels primals(node->has_pending_tangents());  // jvp gives the tangents
      outputs = detail::to_list(T::forward(&node->ctx(), std::forward<Args>(args)...));
    }
    return detail::from_list<Result>(node->wrap_outputs(std::move(outputs)));
  }

 private:
  template <typename U>
  static constexpr auto has_once_flag(int) -> decltype(U::is_once_differentiable, bool()) {
    return true;
  }
  template <typename U>
  static constexpr bool has_once_flag(...) {
    return false;
  }
};

// The node a once-differentiable backward's results carry: running it (a double backward)
// raises AutogradError naming the Function.
class DelayedError final : public Node {
 public:
  explicit DelayedError(std::string message) : message_(std::move(message)) {}
  const char* name() const override { return "DelayedError"; }
  VariableList apply(VariableList&& grads) override;

 private:
  std::string message_;
};

}  // namespace mutagrad::autograd
