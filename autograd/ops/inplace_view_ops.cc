// The in-place view ops: t_, transpose_, unsqueeze_, squeeze_, as_strided_ (Tensor members,
// declared with shape_ops.h's family in tensor/tensor.h).
//
// Note [In-place view ops]
// These change the geometry (sizes, strides, storage offset) of the tensor itself; the data is
// untouched. torch 1.13 treats them as in-place ops: check_inplace first (a leaf that requires
// grad, a view of one, a view made in no_grad mode or by a multi-output op are refused), then
// one version bump (saved copies of the tensor become stale, and the stale error names the op),
// then the change. The history differs from a write's: the op's node (TBackward1,
// TransposeBackward1, UnsqueezeBackward1, SqueezeBackward2/3, AsStridedBackward1) becomes the
// tensor's grad_fn directly, over its previous one; a view's base keeps its history (no
// CopySlices: no element of the base changed). A differentiable view also extends the chain
// that replays it on its base with the op's out-of-place twin (as_strided_ has none: the view
// is then replayed with as_strided), so that regenerating its grad_fn after a write to the base,
// and a later in-place write through it, see its new geometry. When a base changes its own
// geometry, its views' replay chains no longer apply; make_view_replay_node and CopySlices
// then fall back to as_strided (see Note [Regenerating a view's grad_fn] in history.h).
//
// Forward AD (the tangent rule of each of these nodes): the op is applied in place to self's
// tangent too, as torch's `self_t.t_()`, so the tangent keeps its primal's geometry and stays
// the same view of its base's tangent. The tangent's new geometry is the primal's, its storage
// offset moved by as much (the tangent has its own storage); a tangent unpacked earlier is the
// same tensor and changes with it (torch's behaviour).
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/history.h"
#include "autograd/ops/view_ops.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {
namespace {

class TBackward1 final : public Node {
 public:
  const char* name() const override { return "TBackward1"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].t()}; }
};

class TransposeBackward1 final : public Node {
 public:
  const char* name() const override { return "TransposeBackward1"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].transpose(dim0_, dim1_)}; }
  int64_t dim0_ = 0, dim1_ = 0;
};

class UnsqueezeBackward1 final : public Node {
 public:
  const char* name() const override { return "UnsqueezeBackward1"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].squeeze(dim_)}; }
  int64_t dim_ = 0;
};

// squeeze_() (SqueezeBackward2) and squeeze_(dim) (SqueezeBackward3): back to self's shape.
class SqueezeInPlaceBackward final : public Node {
 public:
  const char* name() const override { return all_ ? "SqueezeBackward2" : "SqueezeBackward3"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].reshape(self_sizes_)}; }
  DimVector self_sizes_;
  bool all_ = true;
};

// as_strided_: the formula of as_strided's node (AsStridedBackward0, view_ops.cc), built over
// detached aliases of the input's and the result's geometry.
class AsStridedBackward1 final : public Node {
 public:
  const char* name() const override { return "AsStridedBackward1"; }
  VariableList apply(VariableList&& grads) override { return formula_->apply(std::move(grads)); }
  std::shared_ptr<Node> formula_;
};

// Replays `parent` (a view's chain, on its root base), then `op`.
class ChainedViewFn final : public ViewFn {
 public:
  using Op = std::function<Tensor(const Tensor&)>;
  ChainedViewFn(std::shared_ptr<const ViewFn> parent, Op op)
      : parent_(std::move(parent)), op_(std::move(op)) {}
  Tensor operator()(const Tensor& base) const override { return op_((*parent_)(base)); }

 private:
  std::shared_ptr<const ViewFn> parent_;
  Op op_;
};

struct InPlaceView {
  const char* op;
  // The new geometry as a raw view of self; runs every check.
  std::function<Tensor(const Tensor&)> geometry;
  // The node, given self before the change (its next edge: self's current history).
  std::function<std::shared_ptr<Node>(const Tensor&, const Tensor&)> make_node;
  // The out-of-place differentiable op (extends a view's replay chain); null for as_strided_.
  ChainedViewFn::Op replay;
};

void view_in_place(const Tensor& self, const InPlaceView& op, CallSite site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self);
  check_inplace(self, requires_grad);
  const Tensor geometry = op.geometry(self);
  const int64_t offset_before = self.storage_offset();
  std::vector<std::pair<int64_t, Tensor>> tangents;  // (level, self's tangent)
  if (fwd::enabled()) {
    for (int64_t level : fwd::active_levels()) {
      Tensor tg = fwd::tangent(self, level);
      if (tg.defined()) {
        check_inplace(tg, compute_requires_grad_has_jvp(tg));  // before anything changes
        tangents.emplace_back(level, std::move(tg));
      }
    }
  }
  std::shared_ptr<Node> node = requires_grad ? op.make_node(self, geometry) : nullptr;
  bump_version(self, op.op, site);  // every check passed
  self.unsafe_impl()->set_geometry(DimVector(geometry.sizes()), DimVector(geometry.strides()),
                                   geometry.storage_offset());
  if (ViewInfo* info = get_view_info(self)) {
    info->view_fn = op.replay && info->view_fn
                        ? std::make_shared<ChainedViewFn>(info->view_fn, op.replay)
                        : nullptr;
  }
  // The same op on each tangent (Note [In-place view ops], forward AD), after self's change.
  const int64_t delta = geometry.storage_offset() - offset_before;
  for (const auto& [level, tg] : tangents) {
    fwd::SuspendLevel suspend(level);
    const InPlaceView on_tangent{op.op,
                                 [&geometry, delta](const Tensor& t) {
                                   return native::as_strided(t, geometry.sizes(),
                                                             geometry.strides(),
                                                             t.storage_offset() + delta);
                                 },
                                 op.make_node, op.replay};
    view_in_place(tg, on_tangent, site);
  }
  if (!node) return;
  // torch's set_history: the node becomes self's grad_fn, a view's base is left alone.
  AutogradMeta& meta = materialize_autograd_meta(self);
  const uint32_t output_nr = node->add_input_metadata(self);
  std::shared_ptr<Node> old = replace_grad_fn(self, meta, std::move(node), output_nr);
  if (meta.view_) meta.view_->attr_version = self.version();
  release_node(old);
}

template <typename NodeT>
std::shared_ptr<NodeT> node_over(const Tensor& self) {
  auto node = std::make_shared<NodeT>();
  node->set_next_edges(collect_next_edges(self));
  return node;
}

}  // namespace
}  // namespace autograd

using autograd::InPlaceView;
using autograd::node_over;
using autograd::view_in_place;

Tensor& Tensor::t_(CallSite site) {
  view_in_place(
      *this,
      InPlaceView{"t_",
                  [](const Tensor& s) {
                    if (s.dim() > 2) {
                      throw ShapeError(
                          str("t_() expects a tensor with <= 2 dimensions, "
                              "but self is ",
                              s.dim(), "D; use transpose_(dim0, dim1)"));
                    }
                    return native::t(s);
                  },
                  [](const Tensor& s, const Tensor&) { return node_over<autograd::TBackward1>(s); },
                  [](const Tensor& b) { return mutagrad::t(b); }},
      site);
  return *this;
}

Tensor& Tensor::transpose_(int64_t dim0, int64_t dim1, CallSite site) {
  view_in_place(*this,
                InPlaceView{"transpose_",
                            [dim0, dim1](const Tensor& s) {
                              wrap_dim(dim0, s.dim(), "transpose_");
                              wrap_dim(dim1, s.dim(), "transpose_");
                              return native::transpose(s, dim0, dim1);
                            },
                            [dim0, dim1](const Tensor& s, const Tensor&) {
                              auto node = node_over<autograd::TransposeBackward1>(s);
                              node->dim0_ = s.dim() == 0 ? 0 : wrap_dim(dim0, s.dim(), "");
                              node->dim1_ = s.dim() == 0 ? 0 : wrap_dim(dim1, s.dim(), "");
                              return node;
                            },
                            [dim0, dim1](const Tensor& b) { return b.transpose(dim0, dim1); }},
                site);
  return *this;
}

Tensor& Tensor::unsqueeze_(int64_t dim, CallSite site) {
  view_in_place(*this,
                InPlaceView{"unsqueeze_",
                            [dim](const Tensor& s) {
                              wrap_dim(dim, s.dim() + 1, "unsqueeze_");
                              return native::unsqueeze(s, dim);
                            },
                            [dim](const Tensor& s, const Tensor&) {
                              auto node = node_over<autograd::UnsqueezeBackward1>(s);
                              node->dim_ = wrap_dim(dim, s.dim() + 1, "unsqueeze_");
                              return node;
                            },
                            [dim](const Tensor& b) { return b.unsqueeze(dim); }},
                site);
  return *this;
}

namespace {
std::shared_ptr<autograd::Node> squeeze_node(const Tensor& self, bool all) {
  auto node = node_over<autograd::SqueezeInPlaceBackward>(self);
  node->self_sizes_ = DimVector(self.sizes());
  node->all_ = all;
  return node;
}
}  // namespace

Tensor& Tensor::squeeze_(CallSite site) {
  view_in_place(*this,
                InPlaceView{"squeeze_", [](const Tensor& s) { return native::squeeze(s); },
                            [](const Tensor& s, const Tensor&) { return squeeze_node(s, true); },
                            [](const Tensor& b) { return b.squeeze(); }},
                site);
  return *this;
}

Tensor& Tensor::squeeze_(int64_t dim, CallSite site) {
  view_in_place(*this,
                InPlaceView{"squeeze_",
                            [dim](const Tensor& s) {
                              wrap_dim(dim, s.dim(), "squeeze_");
                              return native::squeeze(s, dim);
                            },
                            [](const Tensor& s, const Tensor&) { return squeeze_node(s, false); },
                            [dim](const Tensor& b) { return b.squeeze(dim); }},
                site);
  return *this;
}

Tensor& Tensor::as_strided_(IntArrayRef sizes, IntArrayRef strides,
                            std::optional<int64_t> storage_offset, CallSite site) {
  const DimVector size_list(sizes), stride_list(strides);
  view_in_place(*this,
                InPlaceView{"as_strided_",
                            [&](const Tensor& s) {
                              return native::as_strided(s, size_list, stride_list, storage_offset);
                            },
                            [](const Tensor& s, const Tensor& geometry) {
                              auto node = node_over<autograd::AsStridedBackward1>(s);
                              node->formula_ = autograd::make_view_replay_node(native::detach(s),
                                                                               geometry, nullptr);
                              return node;
                            },
                            nullptr},
                site);
  return *this;
}

}  // namespace mutagrad
