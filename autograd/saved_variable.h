// SavedVariable: a tensor a backward formula needs, and the version it had when saved.
//
// See Note [Saved outputs do not own their node] below. unpack() costs one integer compare
// when nothing changed; a mismatch throws AutogradError naming the tensor, the versions, the
// first in-place write after the save (op and file:line) and the node that needed it.
//
//   node->self_ = SavedVariable(self, /*is_output=*/false);   // at forward time
//   Tensor self = self_.unpack(this);                          // in apply()
#pragma once

#include <cstdint>
#include <memory>

#include "autograd/forward_ad.h"
#include "autograd/mutation_policy.h"
#include "tensor/tensor.h"

namespace mutagrad::autograd {

class Node;
class ViewFn;
struct PackedSavedTensor;  // autograd/saved_tensor_hooks.h

// Note [Saved outputs do not own their node]
// A node that saves its own forward output (SigmoidBackward0 saves the result) must not hold
// the output's handle: the output's AutogradMeta owns the node, so that would be a cycle. We
// keep an alias of the data without autograd metadata, plus output_nr, and rebuild the
// gradient edge to the unpacking node (the one that saved it) when unpacked in grad mode.
// Likewise a leaf that requires grad is kept as a data alias plus a weak reference to its
// AccumulateGrad: with create_graph=true the leaf's .grad holds a graph that may save the leaf,
// and holding the leaf itself would be a cycle (PyTorch's documented create_graph leak).
// Note [Saved views do not own their base]
// A differentiable view holds its base. Saving the view itself would let a later in-place write
// into the base close a cycle: base -> CopySlices -> the write's node -> ... -> the node that
// saved the view -> view -> base (`v = a[:2]; w = v * v; a[2:].copy_(w)`). A saved view is
// therefore kept as an alias of its data with the view's grad_fn at save time and no view
// metadata (alias_with_current_edge): the same values, version counter and gradient edge.
//
// Note [Saved inputs do not own their history]
// Likewise for any input with a grad_fn: a later in-place write of the input can rebase its
// history onto a node that reaches the saving node, `t.add_(t.sin().sum())`: t -> AddBackward0
// -> SumBackward0 -> SinBackward0 -> t, a reference cycle that leaks the whole graph, with or
// without backward (found by autograd_program_fuzzer, docs/reliability.md; PyTorch 1.13 keeps
// the input's own handle and leaks there). So the input too is kept as
// alias_with_current_edge(input), plus a weak reference to it: while the input is alive and its
// grad_fn is still the saved edge, unpack() returns the input itself. So is an input without
// history (a detached alias): it may get one later, `y = t * w; t.add_(y)` on a plain t, or a
// result saved by its own tangent formula before its node is set (issue 40), and holding it
// would close the same cycle.
//
// Note [Saved result of an in-place op on a view]
// `v.sigmoid_()` on a view v of a non-leaf: the node (SigmoidBackward0) becomes the `fn` of
// the base's CopySlices and is not itself in the graph; the value it saves (v after the write)
// has the view's history, i.e. a replay of the view on the base's new grad_fn, CopySlices.
// Rebuilding the edge to SigmoidBackward0 itself (as for an ordinary saved output) would put
// the node into a double-backward graph twice (standalone and inside CopySlices), and the
// first to run would free what the other needs. So such a result keeps a detached alias of
// the base, the view's replay function and a weak reference to that CopySlices, and unpack()
// replays the view on it; only when the CopySlices is gone does it fall back to the node.
class SavedVariable {
 public:
  SavedVariable() = default;
  // `is_output`: `tensor` is an output of the node that saves it. `is_inplace_on_view`: it is
  // the differentiable view an in-place op just wrote (see the Note above).
  SavedVariable(const Tensor& tensor, bool is_output, bool is_inplace_on_view = false);

  // The saved tensor. `needed_by` is the node whose apply() asks (used in messages, and as
  // the grad_fn of a saved output). Throws AutogradError if an in-place op changed the tensor
  // since it was saved, or if the graph was freed (backward twice without retain_graph).
  Tensor unpack(Node* needed_by) const;

  // Frees the tensor; unpack() then reports the backward-twice error.
  void reset_data();

  // Whether a tensor was saved (false for a default-constructed SavedVariable).
  bool was_saved() const { return was_saved_; }
  bool is_released() const { return was_saved_ && !data().defined() && !packed_; }
  bool is_output() const { return is_output_; }
  uint32_t saved_version() const { return slot_ ? slot_->saved_version() : saved_version_; }
  // The saved data without any check (graph export); undefined once released.
  Tensor data_unchecked() const { return data(); }
  // Whether MutationPolicy::kSnapshot copied the value out of the way of a write.
  bool was_snapshotted() const { return slot_ && slot_->snapshotted(); }
  // The version counter unpack() compares with saved_version() (graph inspection:
  // check_backward, to_dot); null when nothing is held. Under saved-tensor hooks it is the
  // original's, which unpack() checks when the pack hook kept an alias of the tensor
  // (packed_may_alias()) or the unpack hook returns one (Note [Saved-tensor hooks]).
  const VersionCounter* checked_counter() const;
  // Whether this SavedVariable is kept by saved-tensor hooks.
  bool is_packed() const { return packed_ != nullptr; }
  // Whether the pack hook kept an alias of the saved tensor (then unpack() always checks).
  bool packed_may_alias() const;

 private:
  // `counter`: the one that moved (under hooks the original's, not `saved`'s).
  [[noreturn]] void throw_stale(Node* needed_by, const Tensor& saved, uint32_t expected,
                                const VersionCounter& counter) const;
  // Saved-tensor hooks (autograd/saved_tensor_hooks.cc): pack at save time, unpack on use.
  void pack_with_hooks();
  Tensor unpack_packed() const;
  Tensor with_packed_edge(const Tensor& saved) const;
  // The saved value: slot_'s when saved under MutationPolicy::kSnapshot, else data_.
  // A handle, not a reference: a slot's value may be replaced by another thread's write.
  Tensor data() const { return slot_ ? slot_->data() : data_; }

  // The input itself when unpacked while alive and unchanged (Note [Saved inputs do not own
  // their history]).
  Tensor original_or(const Tensor& saved) const;
  Tensor unpack_primal(Node* needed_by) const;

  Tensor data_;
  // The saved tensor's tangents (forward-over-reverse): version checked and restored on
  // unpack (Note [Tangents under mutation] in autograd/forward_ad.h).
  std::shared_ptr<const fwd::SavedTangents> tangents_;
  std::weak_ptr<TensorImpl> original_;  // set for inputs with a grad_fn (the Note above)
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool is_leaf_ = false;  // a leaf that requires grad (see the Note above)
  bool was_saved_ = false;
  std::weak_ptr<Node> grad_accumulator_;
  std::shared_ptr<SnapshotSlot> slot_;         // set (and data_ empty) under kSnapshot
  std::shared_ptr<PackedSavedTensor> packed_;  // set (and data_ empty) under saved-tensor hooks
  // Set for an in-place-on-view result only (see the Note above).
  struct ViewOrigin {
    Tensor base;  // a detached alias of the view's base
    Tensor view;  // a detached alias of the view (its geometry; a snapshot has its own)
    std::shared_ptr<const ViewFn> view_fn;
    std::weak_ptr<Node> base_grad_fn;  // the CopySlices the write installed on the base
    uint32_t base_output_nr = 0;
  };
  std::shared_ptr<const ViewOrigin> view_origin_;
  // The saved output with the gradient edge of the view it is (null if the CopySlices died).
  Tensor unpack_view_result(const Tensor& saved) const;
};

}  // namespace mutagrad::autograd
