#include "autograd/history.h"

#include <atomic>

#include "autograd/accumulate_grad.h"
#include "autograd/copy_slices.h"
#include "autograd/errors.h"
#include "autograd/ops/view_ops.h"

namespace mutagrad::autograd {

bool tensor_requires_grad(const Tensor& t) {
  AutogradMeta* meta = get_autograd_meta(t);
  return meta != nullptr && meta->requires_grad();
}

bool compute_requires_grad_list(TensorList tensors) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : tensors) {
    if (t.defined() && tensor_requires_grad(t)) return true;
  }
  return false;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta* meta = get_autograd_meta(leaf);
  if (meta == nullptr || !meta->requires_grad_) return nullptr;
  std::shared_ptr<Node> acc = meta->grad_accumulator_.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(leaf);
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
    meta.grad_fn_ = node;
    meta.output_nr_ = node->add_input_metadata(view);
  }
}

namespace {

// PyTorch's handle_view_on_rebase: views that cannot be rebased raise here. `indirect`: the
// write went through the base or another view, not through this view.
void handle_view_on_rebase(const AutogradMeta& meta, bool indirect) {
  const CreationMeta creation_meta = meta.view_->creation_meta;
  if (creation_meta == CreationMeta::kDefault) return;
  const char* modified = indirect ? "its base or another view of its base has been" : "is being";
  std::string msg;
  if (meta.grad_fn_) {
    msg = str("Output ", meta.output_nr_, " of ", meta.grad_fn_->name(), " is a view and ",
              modified, " modified inplace.");
  } else {
    msg = str("A view was created in no_grad mode and ", modified,
              " modified inplace with grad mode enabled.");
  }
  if (creation_meta == CreationMeta::kMultiOutputNode) {
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
  throw AutogradError(msg);
}

}  // namespace

const std::shared_ptr<Node>& view_grad_fn(const Tensor& view, AutogradMeta& meta) {
  ViewInfo& info = *meta.view_;
  if (!meta.grad_fn_ && !tensor_requires_grad(info.base)) return meta.grad_fn_;
  const uint32_t current = view.version();
  if (info.attr_version != current) {
    // The base or another view was written in place: replay this view on the base.
    handle_view_on_rebase(meta, /*indirect=*/true);
    std::shared_ptr<Node> old = std::move(meta.grad_fn_);
    meta.grad_fn_ = make_view_replay_node(info.base, view, info.view_fn);
    meta.output_nr_ = 0;
    info.attr_version = current;
    release_node(old);
  }
  return meta.grad_fn_;
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
  AutogradMeta& meta = materialize_autograd_meta(self);
  if (meta.view_ != nullptr) {
    MG_INTERNAL_ASSERT(meta.view_->creation_meta == CreationMeta::kDefault,
                       "rebase_history() on a view that check_inplace() should have rejected");
    node->add_input_metadata(self);
    const Tensor& base = meta.view_->base;
    auto copy_slices =
        std::make_shared<CopySlices>(base, self, meta.view_->view_fn, std::move(node));
    rebase_history(base, std::move(copy_slices));
    self.grad_fn();  // regenerate the view's grad_fn from the new base history
    return;
  }
  std::shared_ptr<Node> old = std::move(meta.grad_fn_);
  if (meta.retains_grad_ && old) old->remove_retained_grad(self.unsafe_impl());
  meta.grad_fn_ = std::move(node);
  meta.output_nr_ = meta.grad_fn_->add_input_metadata(self);
  if (meta.retains_grad_) meta.grad_fn_->add_retained_grad(meta.output_nr_, self.impl_ptr());
  release_node(old);
}

}  // namespace mutagrad::autograd
