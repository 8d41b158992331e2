#include "autograd/history.h"

#include <atomic>

#include "autograd/accumulate_grad.h"
#include "autograd/anomaly_mode.h"
#include "autograd/copy_slices.h"
#include "autograd/errors.h"
#include "autograd/forward_ad.h"
#include "autograd/ops/view_ops.h"
#include "tensor/native/views.h"

namespace mutagrad::autograd {

bool tensor_requires_grad(const Tensor& t) {
  AutogradMeta* meta = get_autograd_meta(t);
  return meta != nullptr && meta->requires_grad();
}

bool compute_requires_grad_list(const char* op, TensorList tensors) {
  if (fwd::enabled()) fwd::check_no_tangent(op, tensors);
  return compute_requires_grad_list_has_jvp(tensors);
}

bool compute_requires_grad_list_has_jvp(TensorList tensors) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : tensors) {
    if (t.defined() && tensor_requires_grad(t)) return true;
  }
  return false;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta* meta = get_autograd_meta(leaf);
  if (meta == nullptr || !meta->requires_grad_) return nullptr;
  // Backward passes on several threads may reach one leaf: exactly one accumulator is created.
  std::lock_guard<std::mutex> lock(meta->accumulator_mutex_);
  std::shared_ptr<Node> acc = meta->grad_accumulator_.lock();
  if (!acc) {
    acc = make_pooled<AccumulateGrad>(leaf);
    acc->set_hooks(meta->hooks_);  // the leaf's tensor hooks (autograd/hooks.h)
    meta->grad_accumulator_ = acc;
  }
  return acc;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* meta = get_autograd_meta(t);
  if (meta == nullptr) return Edge();
  const std::shared_ptr<Node>& fn = t.grad_fn();  // regenerates a stale view's grad_fn
  if (fn) return Edge(fn, meta->output_nr_);
  if (meta->requires_grad_) return Edge(grad_accumulator(t), 0);
  return Edge();
}

EdgeList collect_next_edges_list(TensorList tensors) {
  EdgeList edges;
  edges.reserve(tensors.size());
  for (const Tensor& t : tensors) edges.push_back(gradient_edge(t));
  return edges;
}

void set_history(const Tensor& output, const std::shared_ptr<Node>& node) {
  if (is_anomaly_enabled()) detail::record_forward_site(*node);  // Note [Anomaly mode]
  AutogradMeta& meta = materialize_autograd_meta(output);
  meta.grad_fn_ = node;
  meta.output_nr_ = node->add_input_metadata(output);
}

namespace {
std::atomic<bool> g_view_replay_enabled{true};
}  // namespace

void set_view_replay_enabled(bool enabled) {
  g_view_replay_enabled.store(enabled, std::memory_order_relaxed);
}
bool is_view_replay_enabled() { return g_view_replay_enabled.load(std::memory_order_relaxed); }

void set_view_history(const Tensor& base, const Tensor& view, CreationMeta creation_meta,
                      const std::shared_ptr<Node>& node, std::shared_ptr<const ViewFn> view_fn) {
  if (!view.is_floating_point()) {
    if (node) set_history(view, node);
    return;
  }
  auto info = std::make_unique<ViewInfo>();
  ViewInfo* base_info = get_view_info(base);
  info->base = base_info != nullptr ? base_info->base : base;
  if (!GradMode::is_enabled()) creation_meta = CreationMeta::kNoGradMode;
  // A view of a non-DEFAULT view inherits its restriction.
  if (base_info != nullptr && creation_meta == CreationMeta::kDefault) {
    creation_meta = base_info->creation_meta;
  }
  info->creation_meta = creation_meta;
  info->view_fn = std::move(view_fn);
  info->attr_version = view.version();
  AutogradMeta& meta = materialize_autograd_meta(view);
  meta.view_ = std::move(info);
  if (node) {
    if (is_anomaly_enabled()) detail::record_forward_site(*node);
    meta.grad_fn_ = node;
    meta.output_nr_ = node->add_input_metadata(view);
  }
  if (fwd::enabled()) fwd::on_view_created(base, view);  // Note [Where tangents live]
}

namespace {

// What PyTorch's handle_view_on_rebase raises for a view that cannot be rebased, or "" when it
// can. `indirect`: the write went through the base or another view, not through this view.
std::string view_rebase_error(const AutogradMeta& meta, bool indirect) {
  const CreationMeta creation_meta = meta.view_->creation_meta;
  if (creation_meta == CreationMeta::kDefault) return "";
  const char* modified = indirect ? "its base or another view of its base has been" : "is being";
  std::string msg;
  if (meta.grad_fn_) {
    msg = str("Output ", meta.output_nr_, " of ", meta.grad_fn_->name(), " is a view and ",
              modified, " modified inplace.");
  } else {
    msg = str("A view was created in no_grad mode and ", modified,
              " modified inplace with grad mode enabled.");
  }
  if (creation_meta == CreationMeta::kInCustomFunction) {
    msg +=
        " This view was created inside a custom Function (or is an input it returned as is); "
        "writing it in place would bypass the Function's backward and give wrong gradients, so "
        "it is forbidden. Clone the Function's output (out.clone()) before writing it.";
  } else if (creation_meta == CreationMeta::kMultiOutputNode) {
    msg +=
        " This view is the output of a function that returns multiple views. Such functions "
        "do not allow the output views to be modified inplace. You should replace the inplace "
        "operation by an out-of-place one.";
  } else {
    msg +=
        " Given that this use case is ambiguous and error-prone, it is forbidden. You can "
        "clarify your code by moving both the view and the inplace either both inside the "
        "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
        "want the inplace to be tracked).";
  }
  return msg;
}

void handle_view_on_rebase(const AutogradMeta& meta, bool indirect) {
  std::string msg = view_rebase_error(meta, indirect);
  if (!msg.empty()) throw AutogradError(msg);
}

// Whether view_grad_fn() would regenerate the grad_fn of the view `view` (meta.view_ set).
bool view_grad_fn_is_stale(const Tensor& view, const AutogradMeta& meta) {
  const ViewInfo& info = *meta.view_;
  if (!meta.grad_fn_ && !tensor_requires_grad(info.base)) return false;
  return info.attr_version != view.version();
}

}  // namespace

Edge observed_gradient_edge(const Tensor& t) {
  AutogradMeta* meta = get_autograd_meta(t);
  if (meta == nullptr) return Edge();
  if (meta->view_ != nullptr && view_grad_fn_is_stale(t, *meta)) {
    // The node grad_fn() would make is the view op's over the base's history (it saves no
    // tensor); backward goes on from the base's edge. The base is never a view.
    return observed_gradient_edge(meta->view_->base);
  }
  if (meta->grad_fn_) return Edge(meta->grad_fn_, meta->output_nr_);
  if (meta->requires_grad_) {
    std::lock_guard<std::mutex> lock(meta->accumulator_mutex_);
    if (std::shared_ptr<Node> acc = meta->grad_accumulator_.lock()) return Edge(acc, 0);
  }
  return Edge();
}

std::string observed_view_error(const Tensor& t) {
  AutogradMeta* meta = get_autograd_meta(t);
  if (meta == nullptr || meta->view_ == nullptr || !view_grad_fn_is_stale(t, *meta)) return "";
  return view_rebase_error(*meta, /*indirect=*/true);
}

std::shared_ptr<Node> replace_grad_fn(const Tensor& self, AutogradMeta& meta,
                                      std::shared_ptr<Node> node, uint32_t output_nr) {
  std::shared_ptr<Node> old = std::move(meta.grad_fn_);
  if (meta.retains_grad_ && old) old->remove_retained_grad(self.unsafe_impl());
  meta.grad_fn_ = std::move(node);
  meta.output_nr_ = output_nr;
  if (meta.retains_grad_) meta.grad_fn_->add_retained_grad(output_nr, self.impl_ptr());
  return old;
}

namespace {
// The view's grad_fn becomes the replay of the view on its base's history now.
void regenerate_view_grad_fn(const Tensor& view, AutogradMeta& meta) {
  ViewInfo& info = *meta.view_;
  const uint32_t current = view.version();
  std::shared_ptr<Node> old =
      replace_grad_fn(view, meta, make_view_replay_node(info.base, view, info.view_fn), 0);
  info.attr_version = current;
  release_node(old);
}
}  // namespace

const std::shared_ptr<Node>& view_grad_fn(const Tensor& view, AutogradMeta& meta) {
  if (view_grad_fn_is_stale(view, meta)) {
    // The base or another view was written in place: replay this view on the base.
    handle_view_on_rebase(meta, /*indirect=*/true);
    regenerate_view_grad_fn(view, meta);
  }
  return meta.grad_fn_;
}

Tensor alias_with_current_edge(const Tensor& operand) {
  AutogradMeta* meta = get_autograd_meta(operand);
  if (meta == nullptr) return native::detach(operand);
  std::shared_ptr<Node> fn = operand.grad_fn();
  // A leaf requiring grad is saved as data + its accumulator (no cycle); others carry nothing.
  if (!fn) return meta->requires_grad_ ? operand : native::detach(operand);
  Tensor alias = native::detach(operand);
  auto alias_meta = std::make_unique<AutogradMeta>();
  alias_meta->grad_fn_ = std::move(fn);
  alias_meta->output_nr_ = meta->output_nr_;
  alias.unsafe_impl()->set_autograd_meta(std::move(alias_meta));
  return alias;
}

void check_inplace(const Tensor& self, bool requires_grad) {
  if (!requires_grad || !GradMode::is_enabled()) return;
  AutogradMeta* meta = get_autograd_meta(self);
  if (meta == nullptr) return;
  if (meta->view_ != nullptr) {
    handle_view_on_rebase(*meta, /*indirect=*/false);
    if (meta->requires_grad() && meta->view_->base.is_leaf()) {
      throw AutogradError(kViewOfLeafInplaceMessage);
    }
  }
  if (meta->requires_grad() && self.is_leaf()) throw AutogradError(kLeafInplaceMessage);
}

void rebase_history(const Tensor& self, std::shared_ptr<Node> node) {
  if (is_anomaly_enabled()) {  // the write just bumped: its site is the node's forward
    const uint32_t v = self.version();
    const std::optional<MutationSite> write =
        v > 0 ? self.version_counter().site_of_bump(v - 1) : std::nullopt;
    if (write && write->file != nullptr) {
      detail::record_forward_site(*node, CallSite{write->file, write->line});
    }
  }
  AutogradMeta& meta = materialize_autograd_meta(self);
  if (meta.view_ != nullptr) {
    MG_INTERNAL_ASSERT(meta.view_->creation_meta == CreationMeta::kDefault,
                       "rebase_history() on a view that check_inplace() should have rejected");
    node->add_input_metadata(self);
    const Tensor& base = meta.view_->base;
    auto copy_slices = make_pooled<CopySlices>(base, self, meta.view_->view_fn, std::move(node));
    rebase_history(base, std::move(copy_slices));
    // Replay the view on the new base history, even when its version says its grad_fn is
    // current: code between the write and this call (a custom Function's forward and
    // mark_dirty) may have regenerated it from the old history at the new version.
    regenerate_view_grad_fn(self, meta);
    return;
  }
  const uint32_t output_nr = node->add_input_metadata(self);
  std::shared_ptr<Node> old = replace_grad_fn(self, meta, std::move(node), output_nr);
  release_node(old);
}

}  // namespace mutagrad::autograd
