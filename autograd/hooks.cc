#include "autograd/hooks.h"

#include <utility>

#include "autograd/autograd_meta.h"
#include "autograd/errors.h"
#include "autograd/history.h"

namespace mutagrad::autograd {
namespace {

template <typename T>
bool erase_id(std::vector<uint64_t>& ids, std::vector<T>& hooks, uint64_t id) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != id) continue;
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(i));
    hooks.erase(hooks.begin() + static_cast<std::ptrdiff_t>(i));
    return true;
  }
  return false;
}

// A tensor hook's replacement must look like the gradient it replaces (PyTorch's checks).
void check_replacement(const Tensor& before, const Tensor& after, const Node& node,
                       uint32_t input_nr) {
  if (!before.defined()) return;
  const char* what = nullptr;
  std::string was, got;
  if (!after.sizes().equals(before.sizes())) {
    what = "size";
    was = str(before.sizes());
    got = str(after.sizes());
  } else if (after.dtype() != before.dtype()) {
    what = "type";
    was = dtype_name(before.dtype());
    got = dtype_name(after.dtype());
  } else if (after.device() != before.device()) {
    what = "device";
    was = str(before.device());
    got = str(after.device());
  }
  if (what == nullptr) return;
  throw AutogradError(str("hook registered on the gradient of output ", input_nr, " of ",
                          node.name(), " has changed the ", what, " of value (was ", was, " got ",
                          got, "); a hook must return a gradient of the same shape, dtype and ",
                          "device as the one it receives, or nothing to keep it"));
}

void store_retained(const Node& node, uint32_t input_nr, const Tensor& grad) {
  if (!grad.defined()) return;
  for (const Node::RetainedGrad& retained : node.retained_grads()) {
    if (retained.input_nr != input_nr) continue;
    std::shared_ptr<TensorImpl> impl = retained.tensor.lock();
    if (impl == nullptr) continue;
    AutogradMeta& meta = materialize_autograd_meta(Tensor(impl));
    meta.grad_ = meta.grad_.defined() ? meta.grad_.add(grad) : grad.clone();
  }
}

NodeHooks::Slot& tensor_slot(NodeHooks& hooks, const Tensor& tensor, uint32_t input_nr) {
  for (NodeHooks::Slot& slot : hooks.pre) {
    if (slot.kind == NodeHooks::Kind::kTensor && slot.input_nr == input_nr &&
        slot.tensor.lock().get() == tensor.unsafe_impl()) {
      return slot;
    }
  }
  NodeHooks::Slot slot(NodeHooks::Kind::kTensor);
  slot.input_nr = input_nr;
  slot.tensor = tensor.impl_ptr();
  hooks.pre.push_back(std::move(slot));
  return hooks.pre.back();
}

}  // namespace

void RemovableHandle::remove() {
  std::shared_ptr<NodeHooks> hooks = hooks_.lock();
  if (!hooks) return;
  hooks_.reset();
  if (erase_id(hooks->post_ids, hooks->post, id_)) return;
  for (NodeHooks::Slot& slot : hooks->pre) {
    const bool erased =
        slot.kind == NodeHooks::Kind::kTensor
            ? erase_id(slot.ids, slot.tensor_hooks, id_)
            : slot.kind == NodeHooks::Kind::kPre && erase_id(slot.ids, slot.pre_hooks, id_);
    if (erased) return;
  }
}

namespace detail {

NodeHooks& materialize_hooks(Node& node) {
  if (node.hooks() == nullptr) {
    auto hooks = std::make_shared<NodeHooks>();
    for (const Node::RetainedGrad& retained : node.retained_grads()) {
      note_retained_grad(*hooks, retained.input_nr);
    }
    node.set_hooks(std::move(hooks));
  }
  return *node.hooks();
}

void note_retained_grad(NodeHooks& hooks, uint32_t input_nr) {
  // One slot per input: the latest retain_grad() decides its place.
  for (size_t i = 0; i < hooks.pre.size(); ++i) {
    if (hooks.pre[i].kind == NodeHooks::Kind::kRetain && hooks.pre[i].input_nr == input_nr) {
      hooks.pre.erase(hooks.pre.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  NodeHooks::Slot slot(NodeHooks::Kind::kRetain);
  slot.input_nr = input_nr;
  hooks.pre.push_back(std::move(slot));
}

std::shared_ptr<NodeHooks> leaf_hooks(const Tensor& leaf) {
  AutogradMeta& meta = materialize_autograd_meta(leaf);
  if (!meta.hooks_) {
    meta.hooks_ = std::make_shared<NodeHooks>();
    if (std::shared_ptr<Node> acc = meta.grad_accumulator_.lock()) acc->set_hooks(meta.hooks_);
  }
  return meta.hooks_;
}

void call_pre_hooks(Node& node, Tensor* inputs) {
  // Hold the hooks: a hook may remove itself (or others) while the list is walked.
  std::shared_ptr<NodeHooks> hooks = node.shared_hooks();
  const size_t num_inputs = node.num_inputs();
  for (size_t s = 0; s < hooks->pre.size(); ++s) {
    switch (hooks->pre[s].kind) {
      case NodeHooks::Kind::kRetain:
        store_retained(node, hooks->pre[s].input_nr, inputs[hooks->pre[s].input_nr]);
        break;
      case NodeHooks::Kind::kTensor: {
        const uint32_t nr = hooks->pre[s].input_nr;
        const std::vector<TensorHook> fns = hooks->pre[s].tensor_hooks;  // removal-safe copy
        for (const TensorHook& fn : fns) {
          Tensor replacement = fn(inputs[nr]);
          if (!replacement.defined()) continue;
          check_replacement(inputs[nr], replacement, node, nr);
          inputs[nr] = std::move(replacement);
        }
        break;
      }
      case NodeHooks::Kind::kPre: {
        const std::vector<FunctionPreHook> fns = hooks->pre[s].pre_hooks;
        for (const FunctionPreHook& fn : fns) {
          VariableList grads(inputs, inputs + num_inputs);
          VariableList replaced = fn(grads);
          if (replaced.empty()) continue;
          if (replaced.size() != num_inputs) {
            throw AutogradError(str("a pre-hook of ", node.name(),
                                    " has returned an incorrect number of values (got ",
                                    replaced.size(), ", but expected ", num_inputs,
                                    "); return one gradient per output of the forward op, or "
                                    "nothing to keep them"));
          }
          for (size_t i = 0; i < num_inputs; ++i) inputs[i] = std::move(replaced[i]);
        }
        break;
      }
    }
  }
}

void call_post_hooks(Node& node, VariableList& results, const VariableList& inputs) {
  std::shared_ptr<NodeHooks> hooks = node.shared_hooks();
  const std::vector<FunctionPostHook> fns = hooks->post;
  for (const FunctionPostHook& fn : fns) {
    VariableList replaced = fn(results, inputs);
    if (replaced.empty()) continue;
    if (replaced.size() != results.size()) {
      throw AutogradError(str("a hook of ", node.name(),
                              " has returned an incorrect number of values (got ", replaced.size(),
                              ", but expected ", results.size(),
                              "); return one gradient per input of the forward op, or nothing "
                              "to keep them"));
    }
    results = std::move(replaced);
  }
}

}  // namespace detail

RemovableHandle Node::register_prehook(FunctionPreHook hook) {
  NodeHooks& hooks = detail::materialize_hooks(*this);
  NodeHooks::Slot* slot = nullptr;
  for (NodeHooks::Slot& s : hooks.pre) {
    if (s.kind == NodeHooks::Kind::kPre) slot = &s;
  }
  if (slot == nullptr) {
    hooks.pre.emplace_back(NodeHooks::Kind::kPre);
    slot = &hooks.pre.back();
  }
  const uint64_t id = hooks.next_id++;
  slot->ids.push_back(id);
  slot->pre_hooks.push_back(std::move(hook));
  return RemovableHandle(hooks_, id);
}

RemovableHandle Node::register_hook(FunctionPostHook hook) {
  NodeHooks& hooks = detail::materialize_hooks(*this);
  const uint64_t id = hooks.next_id++;
  hooks.post_ids.push_back(id);
  hooks.post.push_back(std::move(hook));
  return RemovableHandle(hooks_, id);
}

RemovableHandle register_hook(const Tensor& tensor, TensorHook hook) {
  if (!tensor.defined() || !tensor.requires_grad()) {
    throw AutogradError(
        "cannot register a hook on a tensor that doesn't require gradient; call "
        "requires_grad_() on it (or on the leaf it is computed from) first");
  }
  std::shared_ptr<NodeHooks> hooks;
  uint32_t input_nr = 0;
  if (const std::shared_ptr<Node>& fn = tensor.grad_fn()) {
    detail::materialize_hooks(*fn);
    hooks = fn->shared_hooks();
    input_nr = tensor.output_nr();
  } else {
    hooks = detail::leaf_hooks(tensor);
  }
  NodeHooks::Slot& slot = tensor_slot(*hooks, tensor, input_nr);
  const uint64_t id = hooks->next_id++;
  slot.ids.push_back(id);
  slot.tensor_hooks.push_back(std::move(hook));
  return RemovableHandle(hooks, id);
}

}  // namespace mutagrad::autograd

namespace mutagrad {
autograd::RemovableHandle Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  return autograd::register_hook(*this, std::move(hook));
}
}  // namespace mutagrad
