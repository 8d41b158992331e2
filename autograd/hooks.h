// Gradient hooks: tensor hooks (register_hook), node pre-hooks and post-hooks.
//
// A tensor hook sees the gradient of a tensor during backward and may return a replacement (an
// undefined tensor keeps it). Node hooks see a node's gradients before / after it runs.
//
//   Tensor y = x * 2;
//   RemovableHandle h = autograd::register_hook(y, [](const Tensor& g) { return g * 10; });
//   y.grad_fn()->register_hook([](const VariableList& grad_inputs, const VariableList&) {
//     return VariableList();   // observe only
//   });
//   h.remove();
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "autograd/node.h"

namespace mutagrad::autograd {

// Returns the replacement gradient, or an undefined tensor to keep `grad` (which may itself be
// undefined: no gradient reached the tensor through this node).
using TensorHook = std::function<Tensor(const Tensor& grad)>;

// Note [Hook order]
// PyTorch 1.13's order, which we follow: each node keeps one ordered list of pre-hook slots.
// A slot is created where its first member is registered and keeps that position:
//  - the node's own pre-hooks (register_prehook) share one slot;
//  - the tensor hooks of one tensor (register_hook) share one slot on the tensor's grad_fn at
//    the time of the registration (for a leaf, on its AccumulateGrad);
//  - retain_grad() of a tensor is a slot placed when retain_grad() is called (moved to the
//    end of the list of the new grad_fn when an in-place write replaces it), so it stores the
//    gradient as modified by the hooks registered before it.
// The slots run in order before the node; within a slot hooks run in registration order, each
// on the previous one's result. Post-hooks run after the node in registration order.
// In-place writes: a hook stays on the grad_fn it was registered on and so sees the gradient
// of the value before the write. A hook registered after the write goes to the new grad_fn
// (torch 2's behaviour; torch 1.13's Python appends it to the old one, a known bug).
struct NodeHooks {
  enum class Kind : uint8_t { kPre, kTensor, kRetain };
  struct Slot {
    explicit Slot(Kind k) : kind(k) {}
    Kind kind;
    uint32_t input_nr = 0;                   // kTensor, kRetain
    std::weak_ptr<TensorImpl> tensor;        // kTensor: whose hooks
    std::vector<uint64_t> ids;               // one per hook, parallel to the hook vector
    std::vector<TensorHook> tensor_hooks;    // kTensor
    std::vector<FunctionPreHook> pre_hooks;  // kPre
  };
  std::vector<Slot> pre;
  std::vector<uint64_t> post_ids;
  std::vector<FunctionPostHook> post;
  uint64_t next_id = 1;
};

// Unregisters one hook; remove() twice, or after the node died, does nothing.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  RemovableHandle(std::weak_ptr<NodeHooks> hooks, uint64_t id)
      : hooks_(std::move(hooks)), id_(id) {}
  void remove();
  uint64_t id() const { return id_; }

 private:
  std::weak_ptr<NodeHooks> hooks_;
  uint64_t id_ = 0;
};

// Registers `hook` on the gradient of `tensor` (libtorch's Tensor::register_hook). AutogradError
// if the tensor does not require grad.
RemovableHandle register_hook(const Tensor& tensor, TensorHook hook);

namespace detail {
// The hooks of `node`, created on first use (with the retain_grad slots it already has).
NodeHooks& materialize_hooks(Node& node);
// Records that retain_grad() of input `input_nr` was registered now (Note [Hook order]).
void note_retained_grad(NodeHooks& hooks, uint32_t input_nr);
// The engine's calls, made only for a node whose hooks() is not null: the pre-hook slots
// (including retain_grad) on the node's input buffers, and the post-hooks on its results.
void call_pre_hooks(Node& node, Tensor* inputs);
void call_post_hooks(Node& node, VariableList& results, const VariableList& inputs);
// The hooks of a leaf: kept by the leaf (AutogradMeta) and shared with its AccumulateGrad.
std::shared_ptr<NodeHooks> leaf_hooks(const Tensor& leaf);
}  // namespace detail

}  // namespace mutagrad::autograd
