// Recording history: what every differentiable op calls around its raw (native) computation.
//
//   Tensor result = native::unary(UnaryOp::kExp, self);
//   if (compute_requires_grad(self)) {
//     auto node = make_node<ExpBackward0>(self);   // next edges = self's gradient edge
//     node->result_ = SavedVariable(result, /*is_output=*/true);  // after set_history is fine too
//     set_history(result, node);
//   }
//
// In-place ops: check_inplace(), bump the version, write, then rebase_history(). Views:
// set_view_history(). See Note [View + in-place] below.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "autograd/autograd_meta.h"
#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"

namespace mutagrad::autograd {

// Whether `t` takes part in autograd: a leaf with requires_grad, or a tensor with history.
bool tensor_requires_grad(const Tensor& t);

// True when grad mode is on and any defined argument requires grad.
// Note [Ops without a tangent formula]: every differentiable op asks this about its inputs, so
// it is also where an op without a tangent formula refuses a dual input (forward AD active);
// ops with one (which propagate tangents themselves) ask compute_requires_grad_has_jvp.
template <typename... Ts>
bool compute_requires_grad_has_jvp(const Ts&... tensors) {
  if (!GradMode::is_enabled()) return false;
  return (... || (tensors.defined() && tensor_requires_grad(tensors)));
}
// `op` names the op in the refusal (ForwardADNotImplementedError).
template <typename... Ts>
bool compute_requires_grad(const char* op, const Ts&... tensors) {
  if (fwd::enabled()) fwd::check_no_tangent(op, {tensors...});
  return compute_requires_grad_has_jvp(tensors...);
}
// Without a name (callers outside the ops; an op passes its name, above).
template <typename... Ts,
          typename = std::enable_if_t<(std::is_convertible_v<const Ts&, const Tensor&> && ...)>>
bool compute_requires_grad(const Ts&... tensors) {
  if (fwd::enabled()) fwd::check_no_tangent(nullptr, {tensors...});
  return compute_requires_grad_has_jvp(tensors...);
}
bool compute_requires_grad_list(const char* op, TensorList tensors);
bool compute_requires_grad_list_has_jvp(TensorList tensors);

// Where the gradient of `t` goes: {grad_fn, output_nr}; {AccumulateGrad, 0} for a leaf that
// requires grad; invalid otherwise.
Edge gradient_edge(const Tensor& t);
// The AccumulateGrad node of a leaf that requires grad (created on first use), else null.
std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

// Note [Observers change nothing]
// What inspects a graph without running it (check_backward, MutationLog's saved_by, to_dot and
// render, anomaly mode's records) only reads: it must not regenerate a view's grad_fn, create
// an AccumulateGrad, raise where the program would not, or change any tensor, version or
// grad_fn, so that a program behaves the same with and without it (tests/autograd/
// observer_test.cc runs a corpus both ways). gradient_edge() is not such a reader: through
// Tensor::grad_fn() it replaces a stale view's grad_fn (and raises for a view that cannot be
// rebased), and it creates a leaf's accumulator. Observers start from observed_gradient_edge:
// - a view whose grad_fn grad_fn() would regenerate: its base's observed edge (the node that
//   backward would make is the view op's over the base's history, and saves no tensor);
// - a leaf without an AccumulateGrad yet: no edge (an accumulator saves nothing either);
// - otherwise the tensor's gradient edge as it is.
Edge observed_gradient_edge(const Tensor& t);
// The AutogradError message that t.grad_fn() (and so backward from t) would raise because t is
// a view, made in no_grad mode or by a multi-output op, whose base was written in place; ""
// when it would not raise. Changes nothing.
std::string observed_view_error(const Tensor& t);

template <typename... Ts>
EdgeList collect_next_edges(const Ts&... tensors) {
  EdgeList edges;
  edges.reserve(sizeof...(Ts));
  (edges.push_back(gradient_edge(tensors)), ...);
  return edges;
}
EdgeList collect_next_edges_list(TensorList tensors);

// make_shared<T>() (from the small-object pool) with next edges = the gradient edges of `inputs`.
template <typename T, typename... Ts>
std::shared_ptr<T> make_node(const Ts&... inputs) {
  auto node = make_pooled<T>();
  node->set_next_edges(collect_next_edges(inputs...));
  return node;
}

// Makes `node` the grad_fn of the fresh (metadata-free or leaf) tensor `output`; its
// output_nr is the node's next input (outputs are added in order).
void set_history(const Tensor& output, const std::shared_ptr<Node>& node);

// ---- Views -------------------------------------------------------------------------------------
// Marks `view` (made by a native view op from `base`) as a differentiable view and, when `node`
// is not null, sets it as grad_fn with the next output_nr. Float views get view state even when
// nothing requires grad (an in-place write with a value that requires grad may come later).
// `view_fn` replays the view on the root base (see Note [Regenerating a view's grad_fn]); null:
// the view is replayed with as_strided.
void set_view_history(const Tensor& base, const Tensor& view, CreationMeta creation_meta,
                      const std::shared_ptr<Node>& node,
                      std::shared_ptr<const ViewFn> view_fn = nullptr);
// Whether `t` is a differentiable view (carries ViewInfo).
inline bool is_differentiable_view(const Tensor& t) { return get_view_info(t) != nullptr; }

// ---- In-place ----------------------------------------------------------------------------------
// Note [View + in-place]
// Writing in place into a tensor in the graph makes the op's node its new grad_fn. If the
// tensor is a view, the write changes the base too: the base's grad_fn becomes
// CopySlices(base geometry, view geometry or ViewFn, node), and the view's grad_fn is
// regenerated lazily whenever its version moved since it was last computed.
// Views made in no_grad mode or by multi-output ops cannot be rebased: the checks below raise
// PyTorch's errors for them.
//
// Note [Regenerating a view's grad_fn]
// A view records how to replay it on its root base: the chain of view ops that made it
// (ViewInfo::view_fn, composed through views of views). Regeneration replays that chain on the
// base with grad mode on, so the view's new grad_fn is the view op's own node (SliceBackward0,
// TBackward0, ...) over the base's new history, and CopySlices takes the gradient's slice with
// the same chain. Views without a replayable chain (as_strided, or a view of one) fall back to
// as_strided with the view's geometry (AsStridedBackward0), which PyTorch uses for every
// strided tensor. set_view_replay_enabled(false) gives that fallback everywhere, as PyTorch
// 1.13 does (the gradients are the same; only the node names and the backward cost differ).
// A base whose own geometry an in-place view op changed (t_(), as_strided_(), ...) no longer
// replays its views' chains; they fall back to as_strided too (Note [In-place view ops] in
// autograd/ops/inplace_view_ops.cc).

// PyTorch's check_inplace: when `requires_grad` (any operand requires grad) and grad mode is
// on, raises AutogradError for a forbidden view, a view of a leaf requiring grad, or a leaf
// requiring grad. Call it before validating further and before bumping.
void check_inplace(const Tensor& self, bool requires_grad);
// Bumps self's version counter once: the single bump of an in-place op.
inline void bump_version(const Tensor& self, const char* op, CallSite site) {
  self.version_counter().bump(MutationSite{op, site.file, site.line}, self.unsafe_impl());
}
// After the write: `node` (next edges set, edge 0 = self's previous gradient edge; no input
// metadata yet) becomes self's history; a view rebases its base through CopySlices.
void rebase_history(const Tensor& self, std::shared_ptr<Node> node);

// Note [Saving an operand that aliases the written tensor]
// `a.mul_(a)` (or an operand that is a view of a, or a's base) saves the operand for the
// backward of the write that changes it. The node must not hold the operand itself: after the
// write its history leads back to the node (a reference cycle). It saves this instead: an
// alias of the operand's data whose grad_fn is the operand's gradient edge *before* the write.
// Under MutationPolicy::kError the write makes it stale (PyTorch's error); under kSnapshot the
// copy taken at the bump keeps that edge, so double backward reaches the operand's history.
Tensor alias_with_current_edge(const Tensor& operand);

// Note [History attachments move with grad_fn]
// What a tensor attaches to its history (retain_grad: the engine stores the gradient arriving
// at grad_fn's input output_nr into .grad) lives on its grad_fn. Every replacement of a grad_fn
// (an in-place write's rebase_history, a view's regenerated grad_fn) goes through
// replace_grad_fn, which moves the attachments to the new node. Returns the old grad_fn (the
// caller releases it with release_node).
std::shared_ptr<Node> replace_grad_fn(const Tensor& self, AutogradMeta& meta,
                                      std::shared_ptr<Node> node, uint32_t output_nr);

// Tensor::grad_fn() of a differentiable view: regenerated (the view's ViewFn replayed on the
// base, or AsStridedBackward0 of the base) when the version moved since it was computed.
const std::shared_ptr<Node>& view_grad_fn(const Tensor& view, AutogradMeta& meta);

}  // namespace mutagrad::autograd
