#include "autograd/saved_tensor_hooks.h"

#include <utility>

#include "autograd/autograd_meta.h"
#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "autograd/saved_variable.h"
#include "tensor/native/views.h"

namespace mutagrad::autograd {
namespace {
thread_local std::shared_ptr<SavedTensorHooks> t_current_hooks;
}  // namespace

namespace detail {
const std::shared_ptr<SavedTensorHooks>& current_saved_tensor_hooks() { return t_current_hooks; }

std::shared_ptr<SavedTensorHooks> set_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> hooks) {
  std::shared_ptr<SavedTensorHooks> previous = std::move(t_current_hooks);
  t_current_hooks = std::move(hooks);
  return previous;
}
}  // namespace detail

SavedTensorHooksGuard::SavedTensorHooksGuard(PackHook pack, UnpackHook unpack) {
  if (!pack || !unpack) {
    throw ValueError(
        "SavedTensorHooksGuard: both pack and unpack hooks must be callables (pack returns what "
        "the graph keeps, unpack turns it back into the saved tensor)");
  }
  previous_ = detail::set_saved_tensor_hooks(
      std::make_shared<SavedTensorHooks>(SavedTensorHooks{std::move(pack), std::move(unpack)}));
}

SavedTensorHooksGuard::~SavedTensorHooksGuard() {
  detail::set_saved_tensor_hooks(std::move(previous_));
}

void SavedVariable::pack_with_hooks() {
  auto packed = std::make_shared<PackedSavedTensor>();
  packed->hooks = detail::current_saved_tensor_hooks();
  packed->counter = data_.version_counter();
  if (!is_output_ && !is_leaf_) {
    if (const AutogradMeta* meta = get_autograd_meta(data_); meta != nullptr && data_.grad_fn()) {
      packed->grad_fn = data_.grad_fn();
      packed->output_nr = meta->output_nr_;
    }
  }
  Tensor alias = native::detach(data_);
  data_ = Tensor();  // the graph keeps only what pack returns
  {
    // The hooks are off inside pack (a pack that saves nothing needs none; one that calls ops
    // in grad mode would otherwise recurse).
    std::shared_ptr<SavedTensorHooks> outer = detail::set_saved_tensor_hooks(nullptr);
    AutoGradMode no_grad(false);
    try {
      packed->packed = packed->hooks->pack(alias);
    } catch (...) {
      detail::set_saved_tensor_hooks(std::move(outer));
      throw;
    }
    detail::set_saved_tensor_hooks(std::move(outer));
  }
  packed_ = std::move(packed);
}

Tensor SavedVariable::unpack_packed() const {
  Tensor t;
  {
    AutoGradMode no_grad(false);
    t = packed_->hooks->unpack(packed_->packed);
  }
  if (!t.defined()) {
    throw AutogradError(
        "the unpack hook of saved_tensors_hooks returned an undefined tensor; it must return the "
        "saved tensor (e.g. the tensor pack stored, converted back)");
  }
  return t;
}

Tensor SavedVariable::with_packed_edge(const Tensor& saved) const {
  if (!packed_->grad_fn) return saved;
  Tensor out = native::detach(saved);
  auto meta = std::make_unique<AutogradMeta>();
  meta->grad_fn_ = packed_->grad_fn;
  meta->output_nr_ = packed_->output_nr;
  out.unsafe_impl()->set_autograd_meta(std::move(meta));
  return out;
}

}  // namespace mutagrad::autograd
