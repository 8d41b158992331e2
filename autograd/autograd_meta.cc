#include "autograd/autograd_meta.h"

namespace mutagrad::autograd {

const char* creation_meta_name(CreationMeta meta) {
  switch (meta) {
    case CreationMeta::kDefault:
      return "DEFAULT";
    case CreationMeta::kNoGradMode:
      return "NO_GRAD_MODE";
    case CreationMeta::kMultiOutputNode:
      return "MULTI_OUTPUT_NODE";
    case CreationMeta::kInCustomFunction:
      return "IN_CUSTOM_FUNCTION";
  }
  return "?";
}

AutogradMeta::~AutogradMeta() { release_node(grad_fn_); }

bool AutogradMeta::requires_grad() const {
  if (requires_grad_ || grad_fn_) return true;
  // A view made in no_grad mode of a tensor that requires grad still reports it, as PyTorch.
  if (view_ != nullptr) {
    const AutogradMetaInterface* base = view_->base.unsafe_impl()->autograd_meta();
    return base != nullptr && base->requires_grad();
  }
  return false;
}

std::string AutogradMeta::grad_fn_name() const { return grad_fn_ ? grad_fn_->name() : ""; }

AutogradMeta& materialize_autograd_meta(const Tensor& t) {
  MG_INTERNAL_ASSERT(t.defined(), "materialize_autograd_meta() on an undefined tensor");
  TensorImpl* impl = t.unsafe_impl();
  if (impl->autograd_meta() == nullptr) impl->set_autograd_meta(std::make_unique<AutogradMeta>());
  return *static_cast<AutogradMeta*>(impl->autograd_meta());
}

}  // namespace mutagrad::autograd
