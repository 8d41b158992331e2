#include "autograd/saved_variable.h"

#include <sstream>

#include "autograd/autograd_meta.h"
#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "tensor/native/views.h"

namespace mutagrad::autograd {

SavedVariable::SavedVariable(const Tensor& tensor, bool is_output) {
  if (!tensor.defined()) return;
  was_saved_ = true;
  is_output_ = is_output;
  saved_version_ = tensor.version();
  if (is_output) {
    // See Note [Saved outputs do not own their node]: an alias without autograd metadata.
    AutogradMeta* meta = get_autograd_meta(tensor);
    output_nr_ = meta != nullptr ? meta->output_nr_ : 0;
    data_ = native::detach(tensor);
  } else if (AutogradMeta* meta = get_autograd_meta(tensor);
             meta != nullptr && meta->requires_grad_ && !tensor.grad_fn()) {
    is_leaf_ = true;
    grad_accumulator_ = grad_accumulator(tensor);
    data_ = native::detach(tensor);
  } else {
    data_ = tensor;
  }
  if (MutationPolicyState::current() == MutationPolicy::kSnapshot) {
    slot_ = make_snapshot_slot(data_, saved_version_);
    data_ = Tensor();
  }
}

void SavedVariable::reset_data() {
  data_ = Tensor();
  if (slot_) slot_->release();
}

Tensor SavedVariable::unpack(Node* needed_by) const {
  if (!was_saved_) return Tensor();
  const Tensor& saved = data();  // the slot's value under kSnapshot
  if (!saved.defined()) throw AutogradError(kBackwardTwiceMessage);
  if (saved.version() != saved_version()) throw_stale(needed_by);
  if (!GradMode::is_enabled()) return saved;
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
  if (!is_output_ || needed_by == nullptr) return saved;
  // Rebuild the edge to the node that saved this output (double backward through it).
  Tensor out = native::detach(saved);
  auto meta = std::make_unique<AutogradMeta>();
  meta->grad_fn_ = needed_by->shared_from_this();
  meta->output_nr_ = output_nr_;
  out.unsafe_impl()->set_autograd_meta(std::move(meta));
  return out;
}

void SavedVariable::throw_stale(Node* needed_by) const {
  const Tensor& saved = data();
  const uint32_t expected = saved_version();
  const uint32_t current = saved.version();
  std::ostringstream msg;
  msg << "one of the variables needed for gradient computation has been modified by an "
         "inplace operation: [torch."
      << legacy_type_name(saved.dtype()) << "Tensor " << saved.sizes() << "]";
  const char* creator = nullptr;
  uint32_t creator_output = 0;
  if (is_output_) {
    creator = needed_by != nullptr ? needed_by->name() : nullptr;
    creator_output = output_nr_;
  } else if (AutogradMeta* meta = get_autograd_meta(saved); meta != nullptr && meta->grad_fn_) {
    creator = meta->grad_fn_->name();
    creator_output = meta->output_nr_;
  }
  if (creator != nullptr) msg << ", which is output " << creator_output << " of " << creator << ",";
  msg << " is at version " << current << "; expected version " << expected << " instead.";
  // Our addition: the write that made it stale, and who needed the tensor.
  const MutationSite* site = saved.version_counter().site_of_bump(expected);
  if (site != nullptr && site->op != nullptr) {
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
  }
  msg << " Hint: the write above changed a tensor that backward needs; use the out-of-place op "
         "instead (e.g. mul instead of mul_), or write into a clone() of the tensor.";
  throw AutogradError(msg.str());
}

}  // namespace mutagrad::autograd
