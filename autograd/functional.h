// Functional autograd: grad, and the torch.autograd.functional transforms (vjp, jvp, jacobian,
// hessian, hvp, vhp), built from grad() and, for jvp and hvp, forward mode (forward_ad.h).
//
//   auto g = autograd::grad({(x * x).sum()}, {x});                 // {2x}
//   auto [y, hv] = autograd::hvp([](const Tensor& x) { return (x * x * x).sum(); }, x, v);
//   Tensor H = autograd::hessian([](const Tensor& x) { return x.pow(3).sum(); }, x);  // diag(6x)
#pragma once

#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/node.h"

namespace mutagrad::autograd {

// Gradients of `outputs` with respect to `inputs` (torch.autograd.grad). grad_outputs: one per
// output, undefined/omitted = ones for one-element outputs. retain_graph defaults to
// create_graph. An input the outputs do not depend on is an error unless allow_unused (then
// its gradient is undefined). Nothing is accumulated into .grad.
VariableList grad(TensorList outputs, TensorList inputs, TensorList grad_outputs = {},
                  std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                  bool allow_unused = false);

// A function of several tensors to one or several tensors, built from any callable taking
// `const VariableList&` and returning a Tensor or a VariableList.
class TensorFunction {
 public:
  template <typename F,
            typename = std::enable_if_t<std::is_invocable_v<F&, const VariableList&> &&
                                        !std::is_same_v<std::decay_t<F>, TensorFunction>>>
  TensorFunction(F f) {  // NOLINT: implicit by design
    using R = std::invoke_result_t<F&, const VariableList&>;
    if constexpr (std::is_convertible_v<R, Tensor>) {
      fn_ = [f = std::move(f)](const VariableList& x) mutable { return VariableList{f(x)}; };
    } else {
      fn_ = [f = std::move(f)](const VariableList& x) mutable { return VariableList(f(x)); };
    }
  }
  VariableList operator()(const VariableList& inputs) const { return fn_(inputs); }

 private:
  std::function<VariableList(const VariableList&)> fn_;
};
using UnaryTensorFunction = std::function<Tensor(const Tensor&)>;

// Results of the transforms: the function's outputs (detached unless create_graph) and the
// product asked for, one entry per input (vjp, hvp, vhp) or per output (jvp).
struct FunctionalResult {
  VariableList outputs;
  VariableList result;
};

FunctionalResult vjp(const TensorFunction& fn, const VariableList& inputs, const VariableList& v,
                     bool create_graph = false);
// J v by true forward mode: forward_jvp below (every op fn uses needs a tangent formula).
FunctionalResult jvp(const TensorFunction& fn, const VariableList& inputs, const VariableList& v,
                     bool create_graph = false);
// J v by the double-vjp trick (J^T u is linear in u; its vjp with v is J v): two backward
// passes, for every op with a backward. What jvp was before forward mode; kept as the reference
// of tests and benchmarks.
FunctionalResult jvp_by_double_vjp(const TensorFunction& fn, const VariableList& inputs,
                                   const VariableList& v, bool create_graph = false);
// True forward mode (autograd/forward_ad.h): one pass of fn on dual inputs; J v is the outputs'
// tangents (zeros for an output that does not depend on the inputs). Every op fn uses needs a
// tangent formula (docs/forward-ad.md); jvp above (double vjp) works for every op with a
// backward. With create_graph the tangents keep their history (they are differentiable).
FunctionalResult forward_jvp(const TensorFunction& fn, const VariableList& inputs,
                             const VariableList& v, bool create_graph = false);
// H v by forward-over-reverse: the gradient of fn's one-element output is computed (reverse
// mode) on dual inputs, so its tangent is H v. Every op of fn and of its backward formulas
// needs a tangent formula.
FunctionalResult forward_over_reverse_hvp(const TensorFunction& fn, const VariableList& inputs,
                                          const VariableList& v, bool create_graph = false);

// fn must return one one-element tensor.
FunctionalResult vhp(const TensorFunction& fn, const VariableList& inputs, const VariableList& v,
                     bool create_graph = false);
// H v (torch's functional.hvp): forward_over_reverse_hvp without create_graph, else
// hvp_by_double_vjp (its result differentiable again). Note [hvp by forward-over-reverse].
FunctionalResult hvp(const TensorFunction& fn, const VariableList& inputs, const VariableList& v,
                     bool create_graph = false);
// H v by the double vjp (u -> H u is linear in u; its vjp with v is H v): three backward
// passes, for every op with a double backward. What hvp was before forward mode; the reference
// of tests and benchmarks.
FunctionalResult hvp_by_double_vjp(const TensorFunction& fn, const VariableList& inputs,
                                   const VariableList& v, bool create_graph = false);
// How jacobian builds J (torch's `strategy`): a backward pass per output element, or a
// forward-mode jvp per input element (cheaper when inputs are fewer than outputs).
enum class JacobianStrategy : int8_t { kReverseMode, kForwardMode };
// J[i][j] = d outputs[i] / d inputs[j], of shape outputs[i].shape + inputs[j].shape.
std::vector<VariableList> jacobian(const TensorFunction& fn, const VariableList& inputs,
                                   bool create_graph = false,
                                   JacobianStrategy strategy = JacobianStrategy::kReverseMode);
// H[i][j] = d^2 fn / d inputs[i] d inputs[j], of shape inputs[i].shape + inputs[j].shape.
// outer_strategy kForwardMode: each column is a forward-over-reverse H v (torch's
// outer_jacobian_strategy="forward-mode").
std::vector<VariableList> hessian(const TensorFunction& fn, const VariableList& inputs,
                                  bool create_graph = false,
                                  JacobianStrategy outer_strategy = JacobianStrategy::kReverseMode);

// One-tensor forms.
std::pair<Tensor, Tensor> vjp(const UnaryTensorFunction& fn, const Tensor& x, const Tensor& v,
                              bool create_graph = false);
std::pair<Tensor, Tensor> jvp(const UnaryTensorFunction& fn, const Tensor& x, const Tensor& v,
                              bool create_graph = false);
std::pair<Tensor, Tensor> vhp(const UnaryTensorFunction& fn, const Tensor& x, const Tensor& v,
                              bool create_graph = false);
std::pair<Tensor, Tensor> hvp(const UnaryTensorFunction& fn, const Tensor& x, const Tensor& v,
                              bool create_graph = false);
Tensor jacobian(const UnaryTensorFunction& fn, const Tensor& x, bool create_graph = false);
Tensor hessian(const UnaryTensorFunction& fn, const Tensor& x, bool create_graph = false);

}  // namespace mutagrad::autograd
