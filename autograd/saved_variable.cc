#include "autograd/saved_variable.h"

#include <optional>
#include <sstream>

#include "autograd/anomaly_mode.h"
#include "autograd/autograd_meta.h"
#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/ops/view_ops.h"
#include "autograd/saved_tensor_hooks.h"
#include "autograd/tensor_names.h"
#include "tensor/native/views.h"

namespace mutagrad::autograd {

SavedVariable::SavedVariable(const Tensor& tensor, bool is_output, bool is_inplace_on_view) {
  if (!tensor.defined()) return;
  if (tensor.version_counter().is_inference()) {  // torch's refusal (tensor/inference_mode.h)
    throw AutogradError(
        "Inference tensors cannot be saved for backward. To work around you can make a clone to "
        "get a normal tensor and use it in autograd.");
  }
  was_saved_ = true;
  is_output_ = is_output;
  saved_version_ = tensor.version();
  if (fwd::enabled()) {
    fwd::SavedTangents tangents = fwd::save_tangents(tensor);
    if (!tangents.empty()) {
      tangents_ = std::make_shared<const fwd::SavedTangents>(std::move(tangents));
    }
  }
  if (is_output) {
    // See Note [Saved outputs do not own their node]: an alias without autograd metadata.
    AutogradMeta* meta = get_autograd_meta(tensor);
    output_nr_ = meta != nullptr ? meta->output_nr_ : 0;
    data_ = native::detach(tensor);
    if (const ViewInfo* info = is_inplace_on_view ? get_view_info(tensor) : nullptr) {
      auto origin = std::make_shared<ViewOrigin>();
      origin->base = native::detach(info->base);
      origin->view = data_;
      origin->view_fn = info->view_fn;
      origin->base_grad_fn = info->base.grad_fn();
      if (const AutogradMeta* base_meta = get_autograd_meta(info->base)) {
        origin->base_output_nr = base_meta->output_nr_;
      }
      view_origin_ = std::move(origin);
    }
  } else if (AutogradMeta* meta = get_autograd_meta(tensor);
             meta != nullptr && meta->requires_grad_ && !tensor.grad_fn()) {
    is_leaf_ = true;
    grad_accumulator_ = grad_accumulator(tensor);
    data_ = native::detach(tensor);
  } else if (is_differentiable_view(tensor)) {
    // See Note [Saved views do not own their base].
    data_ = alias_with_current_edge(tensor);
  } else {
    // See Note [Saved inputs do not own their history]; without a grad_fn, a detached alias.
    data_ = alias_with_current_edge(tensor);
    original_ = tensor.impl_ptr();
  }
  if (detail::current_saved_tensor_hooks()) {
    pack_with_hooks();  // Note [Saved-tensor hooks]: no snapshot slot
    return;
  }
  if (MutationPolicyState::current() == MutationPolicy::kSnapshot) {
    slot_ = make_snapshot_slot(data_, saved_version_);
    data_ = Tensor();
  }
}

void SavedVariable::reset_data() {
  data_ = Tensor();
  packed_.reset();
  if (slot_) slot_->release();
}

Tensor SavedVariable::unpack(Node* needed_by) const {
  Tensor out = unpack_primal(needed_by);
  if (tangents_ && out.defined()) {
    fwd::restore_tangents(*tangents_, out, needed_by != nullptr ? needed_by->name() : "a node");
  }
  return out;
}

Tensor SavedVariable::unpack_primal(Node* needed_by) const {
  if (!was_saved_) return Tensor();
  // Saved-tensor hooks; or the slot's value under kSnapshot, read with its version in one go.
  uint32_t expected = saved_version_;
  if (slot_ && slot_->scope_closed()) throw AutogradError(kClosedSnapshotScopeMessage);
  const Tensor saved = packed_ ? unpack_packed() : slot_ ? slot_->load(&expected) : data_;
  if (!saved.defined()) throw AutogradError(kBackwardTwiceMessage);
  // Under hooks: the original's counter, when pack kept an alias or unpack returned one (Note
  // [Saved-tensor hooks]).
  const VersionCounter& counter = packed_ ? packed_->counter : saved.version_counter();
  if (counter.current() != expected &&
      (!packed_ || packed_->may_alias || saved.version_counter().is_same(packed_->counter))) {
    // The message names the tensor's history now, as PyTorch's ("output 0 of AddBackward0").
    const std::shared_ptr<TensorImpl> original = original_.lock();
    throw_stale(needed_by, original && !slot_ ? Tensor(original) : saved, expected, counter);
  }
  if (!GradMode::is_enabled()) return original_or(saved);
  if (is_leaf_) {
    // Rebuild a leaf that accumulates through the original AccumulateGrad.
    Tensor out = native::detach(saved);
    if (std::shared_ptr<Node> acc = grad_accumulator_.lock()) {
      auto meta = std::make_unique<AutogradMeta>();
      meta->requires_grad_ = true;
      meta->grad_accumulator_ = acc;
      out.unsafe_impl()->set_autograd_meta(std::move(meta));
    }
    return out;
  }
  if (!is_output_ || needed_by == nullptr) {
    return packed_ ? with_packed_edge(saved) : original_or(saved);
  }
  if (view_origin_) {
    Tensor out = unpack_view_result(saved);
    if (out.defined()) return out;
  }
  // Rebuild the edge to the node that saved this output (double backward through it).
  Tensor out = native::detach(saved);
  auto meta = std::make_unique<AutogradMeta>();
  meta->grad_fn_ = needed_by->shared_from_this();
  meta->output_nr_ = output_nr_;
  out.unsafe_impl()->set_autograd_meta(std::move(meta));
  return out;
}

Tensor SavedVariable::original_or(const Tensor& saved) const {
  std::shared_ptr<TensorImpl> impl = original_.lock();
  if (!impl || packed_ || slot_) return saved;
  const Tensor original(std::move(impl));
  const AutogradMeta* now = get_autograd_meta(original);
  const AutogradMeta* then = get_autograd_meta(saved);
  const Node* now_fn = now != nullptr ? now->grad_fn_.get() : nullptr;
  const Node* then_fn = then != nullptr ? then->grad_fn_.get() : nullptr;
  // Its history changed since (a write, or an op's result given its node after the save).
  if (now_fn != then_fn || (now_fn == nullptr && now != nullptr && now->requires_grad_)) {
    return saved;
  }
  return original;
}

Tensor SavedVariable::unpack_view_result(const Tensor& saved) const {
  std::shared_ptr<Node> copy_slices = view_origin_->base_grad_fn.lock();
  if (!copy_slices) return Tensor();
  Tensor base = native::detach(view_origin_->base);
  auto base_meta = std::make_unique<AutogradMeta>();
  base_meta->grad_fn_ = std::move(copy_slices);
  base_meta->output_nr_ = view_origin_->base_output_nr;
  base.unsafe_impl()->set_autograd_meta(std::move(base_meta));
  // The node comes from the view's geometry; the value handed out is the saved one (under
  // kSnapshot a copy with its own geometry).
  std::shared_ptr<Node> replay =
      make_view_replay_node(base, view_origin_->view, view_origin_->view_fn);
  Tensor out = native::detach(saved);
  auto meta = std::make_unique<AutogradMeta>();
  meta->grad_fn_ = std::move(replay);
  meta->output_nr_ = 0;
  out.unsafe_impl()->set_autograd_meta(std::move(meta));
  return out;
}

bool SavedVariable::packed_may_alias() const { return packed_ && packed_->may_alias; }

const VersionCounter* SavedVariable::checked_counter() const {
  if (packed_) return &packed_->counter;
  // Points into the held TensorImpl (kept by data_ or the slot; graph inspection only, not
  // made while another thread writes the saved storage under kSnapshot).
  const Tensor saved = data();
  return saved.defined() ? &saved.version_counter() : nullptr;
}

void SavedVariable::throw_stale(Node* needed_by, const Tensor& saved, uint32_t expected,
                                const VersionCounter& counter) const {
  const uint32_t current = counter.current();
  std::ostringstream msg;
  msg << "one of the variables needed for gradient computation has been modified by an "
         "inplace operation: [torch."
      << legacy_type_name(saved.dtype()) << "Tensor " << saved.sizes() << "]";
  // Our addition: the name its owner gave it (an nn.Module parameter's path, Note [Tensor names]).
  if (const std::optional<std::string> name = tensor_name_of(saved)) msg << " (" << *name << ")";
  const char* creator = nullptr;
  uint32_t creator_output = 0;
  if (is_output_) {
    creator = needed_by != nullptr ? needed_by->name() : nullptr;
    creator_output = output_nr_;
  } else if (AutogradMeta* meta = get_autograd_meta(saved); meta != nullptr && meta->grad_fn_) {
    creator = meta->grad_fn_->name();
    creator_output = meta->output_nr_;
  } else if (packed_ && packed_->grad_fn) {  // what unpack returned has no history yet
    creator = packed_->grad_fn->name();
    creator_output = packed_->output_nr;
  }
  if (creator != nullptr) msg << ", which is output " << creator_output << " of " << creator << ",";
  msg << " is at version " << current << "; expected version " << expected << " instead.";
  // Our addition: the write that made it stale, and who needed the tensor.
  const std::optional<MutationSite> site = counter.site_of_bump(expected);
  if (site && site->op != nullptr) {
    msg << " The first in-place write after it was saved is " << site->op;
    if (site->file != nullptr) msg << " at " << site->file << ":" << site->line;
    msg << ".";
  } else {
    msg << " The first in-place write after it was saved is too old to be remembered (only the "
           "last "
        << VersionCounter::kSiteHistory << " writes are).";
  }
  if (needed_by != nullptr) {
    msg << " " << needed_by->name() << " saved it and needs it to compute gradients.";
    if (const std::optional<std::string> forward = describe_forward(*needed_by)) {  // anomaly
      msg << " The forward of " << needed_by->name() << " ran " << *forward << ".";
      if (forward->rfind("in ", 0) == 0) {
        msg << " (addr2line -Cfie <binary> <offset> gives its line in a build with -g.)";
      }
    }
  }
  msg << " Hint: the write above changed a tensor that backward needs; use the out-of-place op "
         "instead (e.g. mul instead of mul_), or write into a clone() of the tensor.";
  throw AutogradError(msg.str());
}

}  // namespace mutagrad::autograd
