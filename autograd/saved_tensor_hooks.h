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

// Note [Saved-tensor hooks]
// - Scope: the innermost guard of the calling thread applies to every tensor saved while it is
//   alive (built-in nodes and custom Functions alike); the node keeps the pair it was saved
//   with, so unpack works after the guard is gone.
// - Version check: the node keeps what pack returned, not the tensor. When the unpacked tensor
//   shares the original's version counter (pack kept an alias of it, e.g. the identity pair)
//   the usual check applies: a write after the save makes backward raise, naming the write.
//   A tensor with its own counter (a copy, a conversion) cannot have been changed by writes to
//   the original, so it is not checked. torch 1.13 checks neither, so an identity pair there
//   silently computes gradients with the written values.
// - MutationPolicy::kSnapshot protects values a node holds itself; with hooks the node holds
//   only the packed object, which kSnapshot cannot copy, so tensors saved under hooks are not
//   snapshotted: the pack hook decides what is kept (a copying pack is a snapshot taken at save
//   time; an aliasing pack gets the version check as under kError).
// - Gradient history is rebuilt on unpack as without hooks (the node's own output, a leaf's
//   accumulator, an input's grad_fn), so double backward works through packed tensors.
struct SavedTensorHooks {
  PackHook pack;
  UnpackHook unpack;
};

class SavedTensorHooksGuard {
 public:
  SavedTensorHooksGuard(PackHook pack, UnpackHook unpack);
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
}  // namespace detail

// What a SavedVariable keeps for a tensor saved under hooks.
struct PackedSavedTensor {
  std::any packed;
  std::shared_ptr<SavedTensorHooks> hooks;
  VersionCounter counter;         // the original's (see the Note)
  std::shared_ptr<Node> grad_fn;  // a saved input's history, rebuilt on unpack
  uint32_t output_nr = 0;
};

}  // namespace mutagrad::autograd
