#include "autograd/saved_tensor_hooks.h"

#include <string>
#include <utility>
#include <vector>

#include "autograd/autograd_meta.h"
#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "autograd/mutation_log.h"
#include "autograd/saved_variable.h"
#include "tensor/native/views.h"

namespace mutagrad::autograd {
namespace {
thread_local std::shared_ptr<SavedTensorHooks> t_current_hooks;
// The tensor handed to the pack hook running on this thread, or null (Note [A pack hook must
// not write its input]).
thread_local const Tensor* t_packing = nullptr;

// What pack returned, as the default holds_alias sees it: a Tensor or a std::vector<Tensor>.
bool default_holds_alias(const std::any& packed, const Tensor& saved) {
  if (const Tensor* t = std::any_cast<Tensor>(&packed)) {
    return detail::shares_storage(*t, saved);
  }
  if (const auto* list = std::any_cast<std::vector<Tensor>>(&packed)) {
    for (const Tensor& t : *list) {
      if (detail::shares_storage(t, saved)) return true;
    }
  }
  return false;
}

// Sets t_packing for the pack call, and the pre-write hook that reads it.
class PackingScope {
 public:
  explicit PackingScope(const Tensor& given) : previous_(t_packing) {
    t_packing = &given;
    g_pre_write_hook.store(&detail::observe_write, std::memory_order_relaxed);
  }
  ~PackingScope() { t_packing = previous_; }
  PackingScope(const PackingScope&) = delete;
  PackingScope& operator=(const PackingScope&) = delete;

 private:
  const Tensor* previous_;
};
}  // namespace

namespace detail {
const std::shared_ptr<SavedTensorHooks>& current_saved_tensor_hooks() { return t_current_hooks; }

std::shared_ptr<SavedTensorHooks> set_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> hooks) {
  std::shared_ptr<SavedTensorHooks> previous = std::move(t_current_hooks);
  t_current_hooks = std::move(hooks);
  return previous;
}

bool shares_storage(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.storage().is_same(b.storage());
}

void check_write_during_pack(const VersionCounter& counter, const MutationSite& site,
                             const TensorImpl* written) {
  const Tensor* given = t_packing;
  if (__builtin_expect(given == nullptr, 1)) return;
  const bool same_counter = counter.is_same(given->version_counter());
  const bool same_storage = written != nullptr && written->storage().is_same(given->storage());
  if (!same_counter && !same_storage) return;
  const char* op = site.op != nullptr ? site.op : "an in-place op";
  std::string where;
  if (site.file != nullptr) where = str(" at ", site.file, ":", site.line);
  throw AutogradError(str(kPackHookInplaceMessage, " The write (", op, where,
                          ") was refused before it changed anything; write into a copy instead "
                          "(t = t + 1, or t.clone().add_(1)) and return that."));
}
}  // namespace detail

SavedTensorHooksGuard::SavedTensorHooksGuard(PackHook pack, UnpackHook unpack,
                                             HoldsAliasFn holds_alias) {
  if (!pack || !unpack) {
    throw ValueError(
        "SavedTensorHooksGuard: both pack and unpack hooks must be callables (pack returns what "
        "the graph keeps, unpack turns it back into the saved tensor)");
  }
  previous_ = detail::set_saved_tensor_hooks(std::make_shared<SavedTensorHooks>(
      SavedTensorHooks{std::move(pack), std::move(unpack), std::move(holds_alias)}));
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
    PackingScope packing(alias);
    try {
      packed->packed = packed->hooks->pack(alias);
    } catch (...) {
      detail::set_saved_tensor_hooks(std::move(outer));
      throw;
    }
    detail::set_saved_tensor_hooks(std::move(outer));
  }
  // Note [Saved-tensor hooks]: (a) `alias` is ours alone unless pack kept it (or a view of it);
  // (b) what pack returned holds an alias.
  const auto& holds_alias = packed->hooks->holds_alias;
  packed->may_alias = alias.impl_ptr().use_count() > 1 ||
                      (holds_alias ? holds_alias(packed->packed, alias)
                                   : default_holds_alias(packed->packed, alias));
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
