// Saved-tensor hooks: pack a tensor when a node saves it for backward, unpack it when backward
// needs it (torch.autograd.graph.saved_tensors_hooks). See docs/extending.md.
//
//   autograd::SavedTensorHooksGuard guard(
//       [](const Tensor& t) -> std::any { return t.to(kFloat32); },       // pack: store compact
//       [](const std::any& p) { return std::any_cast<Tensor>(p).to(kFloat64); });  // unpack
//   Tensor y = (x * x).sum();   // MulBackward0 keeps only what pack returned
//   y.backward();               // unpack runs here
#pragma once

#include <any>
#include <functional>
#include <memory>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

// pack: called once per saved tensor, with an alias of its data (no autograd history), under
// no_grad; returns anything. unpack: called with that object each time backward needs the
// tensor, under no_grad; returns a tensor of the saved one's shape and dtype.
using PackHook = std::function<std::any(const Tensor& tensor)>;
using UnpackHook = std::function<Tensor(const std::any& packed)>;
// Whether `packed` (what pack returned) holds a tensor sharing `saved`'s storage
// (detail::shares_storage); see Note [Saved-tensor hooks].
using HoldsAliasFn = std::function<bool(const std::any& packed, const Tensor& saved)>;

// Note [Saved-tensor hooks]
// - Scope: the innermost guard of the calling thread applies to every tensor saved while it is
//   alive (built-in nodes and custom Functions alike); the node keeps the pair it was saved
//   with, so unpack works after the guard is gone.
// - Version check: the node keeps what pack returned, not the tensor, and the original's
//   version counter. Whether the saved value can have changed since the save depends on what
//   pack kept, not on what unpack returns (an identity pack with a copying unpack still reads
//   the written memory). So at save time we note whether pack kept an alias of the tensor:
//   (a) the tensor it was given outlives pack (pack returned it, stored it in a dict by id,
//       captured it, or kept a view of it: a view holds its base), or
//   (b) what pack returned holds a tensor sharing its storage (a detach(), a view, .data;
//       SavedTensorHooks::holds_alias looks: into a Tensor or std::vector<Tensor> by default,
//       into tuples, lists, dicts and attributes from Python).
//   Such a tensor is version-checked at unpack against the original's counter, whatever
//   unpack returns; so is one whose unpack returns a tensor sharing the original's counter. A
//   write after the save then makes backward raise, naming the write. A pack that copies
//   (clone, a dtype or device conversion) is not checked: writes to the original cannot reach
//   the copy. Not detected: a pack that keeps, outside its result, a new detach() or .data
//   alias of the tensor while unpack returns a copy of it. torch 1.13 checks nothing under
//   hooks: an aliasing pack silently differentiates the written values.
// - Pack must not write its input: see Note [A pack hook must not write its input].
// - MutationPolicy::kSnapshot protects values a node holds itself; with hooks the node holds
//   only the packed object, which kSnapshot cannot copy, so tensors saved under hooks are not
//   snapshotted: the pack hook decides what is kept (a copying pack is a snapshot taken at save
//   time; an aliasing pack gets the version check as under kError).
// - Gradient history is rebuilt on unpack as without hooks (the node's own output, a leaf's
//   accumulator, an input's grad_fn at save time), so double backward works through packed
//   tensors. The node keeps no handle of the tensor itself, so the graph can be freed as
//   without hooks (Note [Saved inputs do not own their history]); what pack returns and what
//   the hooks capture are the user's references.
//
// Note [A pack hook must not write its input]
// `pack(t)` with `t += 1` would change the value the graph saves (and the forward's result)
// behind the version check's back. torch 1.13 notices after pack returned (the version moved)
// and raises, leaving the write done. We refuse the write itself: while pack runs, the calling
// thread's pre-write hook (detail::check_write_during_pack) raises AutogradError, before
// anything changes, for an in-place write that bumps the given tensor's version counter or
// goes through a tensor over its storage (.data included). Writes by other threads are not
// refused.
struct SavedTensorHooks {
  PackHook pack;
  UnpackHook unpack;
  // Null: the default, which looks into a Tensor or a std::vector<Tensor>. A pack returning
  // another type that may hold a view or detach() of its input passes its own.
  HoldsAliasFn holds_alias;
};

class SavedTensorHooksGuard {
 public:
  SavedTensorHooksGuard(PackHook pack, UnpackHook unpack, HoldsAliasFn holds_alias = nullptr);
  ~SavedTensorHooksGuard();
  SavedTensorHooksGuard(const SavedTensorHooksGuard&) = delete;
  SavedTensorHooksGuard& operator=(const SavedTensorHooksGuard&) = delete;

 private:
  std::shared_ptr<SavedTensorHooks> previous_;
};

namespace detail {
// The calling thread's innermost hooks, or null (one thread-local load).
const std::shared_ptr<SavedTensorHooks>& current_saved_tensor_hooks();
// Sets them (the Python context manager's enter/exit); returns the previous ones.
std::shared_ptr<SavedTensorHooks> set_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> hooks);
// The pre-write check of Note [A pack hook must not write its input]: throws AutogradError when
// a pack hook runs on this thread and the write bumps `counter` of the tensor it was given or
// goes through `written` over its storage. One thread-local load otherwise.
void check_write_during_pack(const VersionCounter& counter, const MutationSite& site,
                             const TensorImpl* written);
// Whether `a` and `b` share a storage (a write through one is seen through the other).
bool shares_storage(const Tensor& a, const Tensor& b);
}  // namespace detail

// What a SavedVariable keeps for a tensor saved under hooks.
struct PackedSavedTensor {
  std::any packed;
  std::shared_ptr<SavedTensorHooks> hooks;
  VersionCounter counter;         // the original's (see the Note)
  bool may_alias = false;         // pack kept an alias of the tensor: checked at unpack
  std::shared_ptr<Node> grad_fn;  // a saved input's history, rebuilt on unpack
  uint32_t output_nr = 0;
};

}  // namespace mutagrad::autograd
