// Views: each forward function and its backward node, side by side. Every forward makes the
// raw view with mutagrad::native, then set_view_history() records ViewInfo (and the node when
// grad is required). Backward formulas of select/slice/diagonal/as_strided scatter the
// gradient into zeros with as_strided_scatter, which is itself differentiable (double
// backward gathers with as_strided).
#include "autograd/ops/view_ops.h"

#include <algorithm>
#include <functional>
#include <type_traits>

#include "autograd/capture_hook.h"
#include "autograd/errors.h"
#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/copy_ops.h"
#include "autograd/ops/join_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {
namespace {

struct Geometry {
  DimVector sizes, strides;
  int64_t offset = 0;
};

Tensor zeros_for(IntArrayRef sizes, const Tensor& like) {
  return zeros(sizes, TensorOptions(like.dtype()).device(like.device()));
}

// dst (contiguous) at geometry g (offset relative to dst's) = src, or += src when positions
// repeat (`accumulate`). Raw: records nothing.
void scatter_into(const Tensor& dst, const Tensor& src, const Geometry& g, bool accumulate) {
  Tensor view = native::as_strided(dst, g.sizes, g.strides, dst.storage_offset() + g.offset);
  if (!accumulate) {
    native::copy_(view, src);
    return;
  }
  Tensor positions =
      native::as_strided(arange(dst.numel(), kInt64, dst.device()), g.sizes, g.strides, g.offset);
  Tensor values = native::to(native::expand(src, g.sizes), dst.dtype());
  native::index_put_(native::view(dst, {-1}), {native::reshape(positions, {-1})},
                     native::reshape(values, {-1}), /*accumulate=*/true);
}

// t's elements at geometry g relative to a contiguous layout of t (differentiable).
Tensor gather_geometry(const Tensor& t, const Geometry& g) {
  Tensor c = t.contiguous();
  return c.as_strided(g.sizes, g.strides, c.storage_offset() + g.offset);
}

// The gradient of a view made by `native_view` from a tensor of `input_sizes`: zeros with
// `grad` written where the view looks.
template <typename F>
Tensor view_backward(const Tensor& grad, IntArrayRef input_sizes, F&& native_view) {
  Tensor base = zeros_for(input_sizes, grad);
  Tensor view = native_view(base);
  if (!compute_requires_grad_has_jvp(grad) && !fwd::has_tangent({grad})) {
    native::copy_(view, grad);
    return base;
  }
  return as_strided_scatter(base, grad, view.sizes(), view.strides(),
                            view.storage_offset() - base.storage_offset());
}

}  // namespace

// The raw view of Tensor::unfold: dim's size becomes the window count (size_d - size) / step +
// 1, its stride step * stride_d, and a last dim of `size` walks one window (stride_d). A 0-dim
// tensor unfolds as one of size 1. Arguments validated here, with torch's messages.
Tensor unfold_view(const Tensor& self, int64_t dim, int64_t size, int64_t step) {
  const int64_t d = wrap_dim(dim, self.dim(), "unfold");
  const int64_t size_d = self.dim() == 0 ? 1 : self.size(d);
  const int64_t stride_d = self.dim() == 0 ? 1 : self.stride(d);
  if (size > size_d) {
    throw ValueError(str("unfold(): maximum size for tensor at dimension ", d, " is ", size_d,
                         " but size is ", size, "; pass a window size <= ", size_d));
  }
  if (size < 0) {
    throw ValueError(str("unfold(): size is ", size, " but must be >= 0"));
  }
  if (step <= 0) {
    throw ValueError(str("unfold(): step is ", step, " but must be > 0"));
  }
  DimVector sizes(self.sizes()), strides(self.strides());
  if (self.dim() > 0) {
    sizes[static_cast<size_t>(d)] = (size_d - size) / step + 1;
    strides[static_cast<size_t>(d)] = step * stride_d;
  }
  sizes.push_back(size);
  strides.push_back(stride_d);
  return native::as_strided(self, sizes, strides, self.storage_offset());
}

namespace {

int64_t max_reach(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  int64_t reach = offset;
  for (size_t i = 0; i < sizes.size(); ++i) reach += (sizes[i] - 1) * strides[i];
  return reach;
}

}  // namespace

class SelectBackward0 final : public Node {
 public:
  const char* name() const override { return "SelectBackward0"; }
  VariableList apply(VariableList&& grads) override {
    return {view_backward(grads[0], self_sizes_,
                          [&](const Tensor& t) { return native::select(t, dim_, index_); })};
  }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override {
    v.visit("dim", dim_);
    v.visit("index", index_);
    v.visit("self_sizes", self_sizes_);
  }
  DimVector self_sizes_;
  int64_t dim_ = 0, index_ = 0;
};

class SliceBackward0 final : public Node {
 public:
  const char* name() const override { return "SliceBackward0"; }
  VariableList apply(VariableList&& grads) override {
    return {view_backward(grads[0], self_sizes_, [&](const Tensor& t) {
      return native::slice(t, dim_, start_, end_, step_);
    })};
  }
  DimVector self_sizes_;
  int64_t dim_ = 0, start_ = 0, end_ = 0, step_ = 1;
};

class DiagonalBackward0 final : public Node {
 public:
  const char* name() const override { return "DiagonalBackward0"; }
  VariableList apply(VariableList&& grads) override {
    return {view_backward(grads[0], self_sizes_, [&](const Tensor& t) {
      return native::diagonal(t, offset_, dim1_, dim2_);
    })};
  }
  DimVector self_sizes_;
  int64_t offset_ = 0, dim1_ = 0, dim2_ = 1;
};

// Geometries are absolute (storage offsets): the input's and the view's.
class AsStridedBackward0 final : public Node {
 public:
  const char* name() const override { return "AsStridedBackward0"; }
  VariableList apply(VariableList&& grads) override {
    const Tensor& grad = grads[0];
    if (compute_numel(input_.sizes) == 0) return {zeros_for(input_.sizes, grad)};
    if (has_internal_overlap(input_.sizes, input_.strides) == MemOverlap::kYes) {
      throw AutogradError(
          str("AsStridedBackward0: the input of as_strided() (sizes ", IntArrayRef(input_.sizes),
              ", strides ", IntArrayRef(input_.strides),
              ") has elements that share memory; its "
              "gradient is not defined. Call contiguous() on the input before as_strided()"));
    }
    const bool out_empty = compute_numel(output_.sizes) == 0;
    int64_t lo = input_.offset;
    int64_t hi = max_reach(input_.sizes, input_.strides, input_.offset);
    if (!out_empty) {
      lo = std::min(lo, output_.offset);
      hi = std::max(hi, max_reach(output_.sizes, output_.strides, output_.offset));
    }
    Tensor flat = zeros_for({hi - lo + 1}, grad);
    if (!out_empty) {
      Geometry out{output_.sizes, output_.strides, output_.offset - lo};
      const bool accumulate = has_internal_overlap(out.sizes, out.strides) != MemOverlap::kNo;
      if (!compute_requires_grad_has_jvp(grad) && !fwd::has_tangent({grad})) {
        scatter_into(flat, grad, out, accumulate);
      } else {
        flat = as_strided_scatter(flat, grad, out.sizes, out.strides, out.offset, accumulate);
      }
    }
    return {gather_geometry(flat, Geometry{input_.sizes, input_.strides, input_.offset - lo})};
  }
  Geometry input_, output_;
};

class AsStridedScatterBackward0 final : public Node {
 public:
  const char* name() const override { return "AsStridedScatterBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    const Tensor& grad = grads[0];
    if (should_compute_output(0)) {
      out[0] = accumulate_
                   ? grad
                   : as_strided_scatter(grad, zeros_for(geometry_.sizes, grad), geometry_.sizes,
                                        geometry_.strides, geometry_.offset);
    }
    if (should_compute_output(1)) out[1] = gather_geometry(grad, geometry_);
    return out;
  }
  Geometry geometry_;
  bool accumulate_ = false;
};

class PermuteBackward0 final : public Node {
 public:
  const char* name() const override { return "PermuteBackward0"; }
  VariableList apply(VariableList&& grads) override {
    DimVector inverse(dims_.size());
    for (size_t i = 0; i < dims_.size(); ++i)
      inverse[static_cast<size_t>(dims_[i])] = static_cast<int64_t>(i);
    return {grads[0].permute(inverse)};
  }
  DimVector dims_;  // wrapped
};

class TransposeBackward0 final : public Node {
 public:
  const char* name() const override { return "TransposeBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].transpose(dim0_, dim1_)}; }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override {
    v.visit("dim0", dim0_);
    v.visit("dim1", dim1_);
  }
  int64_t dim0_ = 0, dim1_ = 1;
};

class TBackward0 final : public Node {
 public:
  const char* name() const override { return "TBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].t()}; }
};

class ExpandBackward0 final : public Node {
 public:
  const char* name() const override { return "ExpandBackward0"; }
  VariableList apply(VariableList&& grads) override { return {sum_to(grads[0], self_sizes_)}; }
  DimVector self_sizes_;
};

class UnsqueezeBackward0 final : public Node {
 public:
  const char* name() const override { return "UnsqueezeBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].squeeze(dim_)}; }
  int64_t dim_ = 0;  // wrapped
};

// The gradient takes back the input's shape. Named per op: SqueezeBackward0 (squeeze()),
// ViewBackward0, ReshapeAliasBackward0 (reshape as a view), UnsafeViewBackward0 (reshape
// that copied).
class ReshapeLikeBackward final : public Node {
 public:
  explicit ReshapeLikeBackward(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override { return {grads[0].reshape(self_sizes_)}; }
  DimVector self_sizes_;

 private:
  const char* name_;
};

class SqueezeBackward1 final : public Node {
 public:
  const char* name() const override { return "SqueezeBackward1"; }
  VariableList apply(VariableList&& grads) override {
    if (self_sizes_.empty() || self_sizes_[static_cast<size_t>(dim_)] != 1) return {grads[0]};
    return {grads[0].unsqueeze(dim_)};
  }
  DimVector self_sizes_;
  int64_t dim_ = 0;  // wrapped
};

// unfold's windows overlap when step < size: their gradients add up where they share an element.
class UnfoldBackward0 final : public Node {
 public:
  const char* name() const override { return "UnfoldBackward0"; }
  VariableList apply(VariableList&& grads) override {
    const Tensor& grad = grads[0];
    Tensor base = zeros_for(self_sizes_, grad);
    Tensor view = unfold_view(base, dim_, size_, step_);
    const Geometry g{DimVector(view.sizes()), DimVector(view.strides()),
                     view.storage_offset() - base.storage_offset()};
    const bool accumulate = step_ < size_;
    if (!compute_requires_grad_has_jvp(grad) && !fwd::has_tangent({grad})) {
      scatter_into(base, grad, g, accumulate);
      return {base};
    }
    return {as_strided_scatter(base, grad, g.sizes, g.strides, g.offset, accumulate)};
  }
  DimVector self_sizes_;
  int64_t dim_ = 0, size_ = 0, step_ = 1;  // dim_ wrapped
};

class AliasBackward0 final : public Node {
 public:
  const char* name() const override { return "AliasBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0]}; }
};

// unbind (stack the gradients) and split/chunk (concatenate them); outputs that got no
// gradient contribute zeros.
class MultiViewBackward final : public Node {
 public:
  MultiViewBackward(const char* name, bool stacked) : name_(name), stacked_(stacked) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override {
    const Tensor* like = nullptr;
    for (const Tensor& g : grads) {
      if (g.defined()) like = &g;
    }
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) grads[i] = zeros_for(input_metadata(i).shape, *like);
    }
    return {stacked_ ? stack(grads, dim_) : cat(grads, dim_)};
  }
  int64_t dim_ = 0;

 private:
  const char* name_;
  bool stacked_;
};

std::shared_ptr<Node> make_view_replay_node(const Tensor& base, const Tensor& view,
                                            const std::shared_ptr<const ViewFn>& view_fn) {
  if (view_fn != nullptr) {
    // Note [Regenerating a view's grad_fn]: the view op's own node over the base's history.
    // A base that changed its own geometry in place (t_(), as_strided_(), ...) since the view
    // was made replays the chain elsewhere, or not at all: as_strided below then.
    EnableGradGuard grad_mode;
    Tensor replayed;
    try {
      replayed = (*view_fn)(base);
    } catch (const Error&) {
    }
    if (replayed.defined() && replayed.sizes() == view.sizes() &&
        replayed.strides() == view.strides() &&
        replayed.storage_offset() == view.storage_offset()) {
      if (std::shared_ptr<Node> node = replayed.grad_fn()) return node;
    }
  }
  auto node = make_node<AsStridedBackward0>(base);
  node->input_ =
      Geometry{DimVector(base.sizes()), DimVector(base.strides()), base.storage_offset()};
  node->output_ =
      Geometry{DimVector(view.sizes()), DimVector(view.strides()), view.storage_offset()};
  node->add_input_metadata(view);
  return node;
}

}  // namespace autograd

using autograd::compute_requires_grad;
using autograd::CreationMeta;
using autograd::make_node;
using autograd::set_view_history;

namespace {

// A ViewFn replaying one view op after its parent's chain (null parent: on the root base). The
// op is the view op's own lambda type, not a std::function: with the object from the small-object
// pool, recording a view takes nothing from the heap (Note [Small-object pool]).
template <typename Op>
class ReplayView final : public autograd::ViewFn {
 public:
  ReplayView(std::shared_ptr<const autograd::ViewFn> parent, Op op)
      : parent_(std::move(parent)), op_(std::move(op)) {}
  Tensor operator()(const Tensor& base) const override {
    return op_(parent_ ? (*parent_)(base) : base);
  }

 private:
  std::shared_ptr<const autograd::ViewFn> parent_;
  Op op_;
};

// Records `view` of `self`, made by the view op `op`; `replay` (the differentiable view op with
// its arguments, or nullptr for none) extends self's replay chain when it has one (see Note
// [Regenerating a view's grad_fn]).
template <typename Op>
Tensor record_view(const char* op, const Tensor& self, const Tensor& view,
                   const std::shared_ptr<autograd::Node>& node, Op replay) {
  autograd::capture::uncovered_view(op, view);
  std::shared_ptr<const autograd::ViewFn> view_fn;
  if constexpr (!std::is_same_v<Op, std::nullptr_t>) {
    if (view.is_floating_point() && autograd::is_view_replay_enabled()) {
      const autograd::ViewInfo* parent = autograd::get_view_info(self);
      if (parent == nullptr || parent->view_fn != nullptr) {
        view_fn = make_pooled<ReplayView<Op>>(parent != nullptr ? parent->view_fn : nullptr,
                                              std::move(replay));
      }
    }
  }
  set_view_history(self, view, CreationMeta::kDefault, node, std::move(view_fn));
  return view;
}

// `op` made `views`; `name` is their node's.
std::vector<Tensor> record_multi_view(const char* op, const Tensor& self, std::vector<Tensor> views,
                                      const char* name, bool stacked, int64_t dim) {
  for (const Tensor& v : views) autograd::capture::uncovered_view(op, v);
  std::shared_ptr<autograd::MultiViewBackward> node;
  // Views need no tangent formula: set_view_history gives a view of a dual the same view of
  // its tangent (Note [Where tangents live] in autograd/forward_ad.h).
  if (autograd::compute_requires_grad_has_jvp(self)) {
    node = make_pooled<autograd::MultiViewBackward>(name, stacked);
    node->set_next_edges(autograd::collect_next_edges(self));
    node->dim_ = wrap_dim(dim, self.dim(), name);
  }
  for (const Tensor& v : views) {
    set_view_history(self, v, CreationMeta::kMultiOutputNode, node);
  }
  return views;
}

template <typename NodeT>
std::shared_ptr<NodeT> node_if_needed(const Tensor& self) {
  return autograd::compute_requires_grad_has_jvp(self) ? make_node<NodeT>(self) : nullptr;
}

std::shared_ptr<autograd::ReshapeLikeBackward> reshape_node(const Tensor& self, const char* name) {
  if (!autograd::compute_requires_grad_has_jvp(self)) return nullptr;
  auto node = make_pooled<autograd::ReshapeLikeBackward>(name);
  node->set_next_edges(autograd::collect_next_edges(self));
  node->self_sizes_ = DimVector(self.sizes());
  return node;
}

}  // namespace

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  autograd::capture::OpScope cap("select", autograd::capture::OpKind::kView);
  Tensor result = native::select(self, dim, index);
  auto node = node_if_needed<autograd::SelectBackward0>(self);
  if (node) {
    node->self_sizes_ = DimVector(self.sizes());
    node->dim_ = wrap_dim(dim, self.dim(), "select");
    node->index_ = index < 0 ? index + self.size(dim) : index;
  }
  return cap.done(
      record_view("select", self, result, node,
                  [dim, index](const Tensor& b) { return mutagrad::select(b, dim, index); }),
      [&] {
        return autograd::capture::Args{self, dim, index};
      });
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step) {
  autograd::capture::OpScope cap("slice", autograd::capture::OpKind::kView);
  Tensor result = native::slice(self, dim, start, stop, step);
  auto node = node_if_needed<autograd::SliceBackward0>(self);
  if (node) {
    const int64_t d = wrap_dim(dim, self.dim(), "slice");
    node->self_sizes_ = DimVector(self.sizes());
    node->dim_ = d;
    const int64_t size = self.size(d);
    int64_t b = start.value_or(0);
    if (b < 0) b += size;
    b = std::clamp<int64_t>(b, 0, size);  // Python slice clamping, as native::slice
    node->start_ = b;
    node->step_ = step;
    node->end_ = std::min(size, b + result.size(d) * step);
  }
  return cap.done(record_view("slice", self, result, node,
                              [dim, start, stop, step](const Tensor& b) {
                                return mutagrad::slice(b, dim, start, stop, step);
                              }),
                  [&] {
                    return autograd::capture::Args{self, dim, autograd::capture::opt(start),
                                                   autograd::capture::opt(stop), step};
                  });
}

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  autograd::capture::OpScope cap("narrow", autograd::capture::OpKind::kView);
  Tensor result = native::narrow(self, dim, start, length);
  auto node = node_if_needed<autograd::SliceBackward0>(self);
  if (node) {
    const int64_t d = wrap_dim(dim, self.dim(), "narrow");
    node->self_sizes_ = DimVector(self.sizes());
    node->dim_ = d;
    node->start_ = start < 0 ? start + self.size(d) : start;
    node->end_ = node->start_ + length;
    node->step_ = 1;
  }
  return cap.done(record_view("narrow", self, result, node,
                              [dim, start, length](const Tensor& b) {
                                return mutagrad::narrow(b, dim, start, length);
                              }),
                  [&] {
                    return autograd::capture::Args{self, dim, start, length};
                  });
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  autograd::capture::OpScope cap("permute", autograd::capture::OpKind::kView);
  Tensor result = native::permute(self, dims);
  auto node = node_if_needed<autograd::PermuteBackward0>(self);
  if (node) {
    for (int64_t d : dims) node->dims_.push_back(wrap_dim(d, self.dim(), "permute"));
  }
  return cap.done(
      record_view("permute", self, result, node,
                  [d = DimVector(dims)](const Tensor& b) { return mutagrad::permute(b, d); }),
      [&] {
        return autograd::capture::Args{self, autograd::capture::ints(dims)};
      });
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  autograd::capture::OpScope cap("transpose", autograd::capture::OpKind::kView);
  Tensor result = native::transpose(self, dim0, dim1);
  auto node = node_if_needed<autograd::TransposeBackward0>(self);
  if (node) {
    node->dim0_ = self.dim() == 0 ? 0 : wrap_dim(dim0, self.dim(), "transpose");
    node->dim1_ = self.dim() == 0 ? 0 : wrap_dim(dim1, self.dim(), "transpose");
  }
  return cap.done(
      record_view("transpose", self, result, node,
                  [dim0, dim1](const Tensor& b) { return mutagrad::transpose(b, dim0, dim1); }),
      [&] {
        return autograd::capture::Args{self, dim0, dim1};
      });
}

Tensor t(const Tensor& self) {
  autograd::capture::OpScope cap("t", autograd::capture::OpKind::kView);
  Tensor result = native::t(self);
  return cap.done(record_view("t", self, result, node_if_needed<autograd::TBackward0>(self),
                              [](const Tensor& b) { return mutagrad::t(b); }),
                  [&] { return autograd::capture::Args{self}; });
}

Tensor expand(const Tensor& self, IntArrayRef sizes) {
  autograd::capture::OpScope cap("expand", autograd::capture::OpKind::kView);
  Tensor result = native::expand(self, sizes);
  auto node = node_if_needed<autograd::ExpandBackward0>(self);
  if (node) node->self_sizes_ = DimVector(self.sizes());
  return cap.done(
      record_view("expand", self, result, node,
                  [s = DimVector(sizes)](const Tensor& b) { return mutagrad::expand(b, s); }),
      [&] {
        return autograd::capture::Args{self, autograd::capture::ints(sizes)};
      });
}

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  autograd::capture::OpScope cap("unsqueeze", autograd::capture::OpKind::kView);
  Tensor result = native::unsqueeze(self, dim);
  auto node = node_if_needed<autograd::UnsqueezeBackward0>(self);
  if (node) node->dim_ = wrap_dim(dim, self.dim() + 1, "unsqueeze");
  return cap.done(record_view("unsqueeze", self, result, node,
                              [dim](const Tensor& b) { return mutagrad::unsqueeze(b, dim); }),
                  [&] {
                    return autograd::capture::Args{self, dim};
                  });
}

Tensor squeeze(const Tensor& self) {
  autograd::capture::OpScope cap("squeeze", autograd::capture::OpKind::kView);
  Tensor result = native::squeeze(self);
  return cap.done(record_view("squeeze", self, result, reshape_node(self, "SqueezeBackward0"),
                              [](const Tensor& b) { return mutagrad::squeeze(b); }),
                  [&] { return autograd::capture::Args{self}; });
}

Tensor squeeze(const Tensor& self, int64_t dim) {
  autograd::capture::OpScope cap("squeeze", autograd::capture::OpKind::kView);
  Tensor result = native::squeeze(self, dim);
  auto node = node_if_needed<autograd::SqueezeBackward1>(self);
  if (node) {
    node->self_sizes_ = DimVector(self.sizes());
    node->dim_ = self.dim() == 0 ? 0 : wrap_dim(dim, self.dim(), "squeeze");
  }
  return cap.done(record_view("squeeze", self, result, node,
                              [dim](const Tensor& b) { return mutagrad::squeeze(b, dim); }),
                  [&] {
                    return autograd::capture::Args{self, dim};
                  });
}

Tensor view(const Tensor& self, IntArrayRef sizes) {
  autograd::capture::OpScope cap("view", autograd::capture::OpKind::kView);
  Tensor result = native::view(self, sizes);
  return cap.done(record_view("view", self, result, reshape_node(self, "ViewBackward0"),
                              [s = DimVector(result.sizes())](const Tensor& b) {
                                return mutagrad::view(b, s);
                              }),
                  [&] {
                    return autograd::capture::Args{self, autograd::capture::ints(sizes)};
                  });
}

Tensor reshape(const Tensor& self, IntArrayRef sizes) {
  autograd::capture::OpScope cap("reshape", autograd::capture::OpKind::kAuto);
  DimVector shape = infer_size(sizes, self.numel(), "reshape");
  if (compute_view_strides(self.sizes(), self.strides(), shape)) {
    Tensor result = native::view(self, shape);
    return cap.done(
        record_view("reshape", self, result, reshape_node(self, "ReshapeAliasBackward0"),
                    [s = shape](const Tensor& b) { return mutagrad::reshape(b, s); }),
        [&] {
          return autograd::capture::Args{self, autograd::capture::ints(sizes)};
        });
  }
  // No view exists: clone (CloneBackward0), then give the copy the new shape without making it
  // a view of the temporary (UnsafeViewBackward0), as PyTorch's _unsafe_view.
  Tensor copy = mutagrad::clone(self);
  Tensor result = native::detach(native::view(copy, shape));
  if (auto node = reshape_node(copy, "UnsafeViewBackward0")) autograd::set_history(result, node);
  autograd::fwd::propagate("reshape", result, {copy},
                           [&](const auto& t) { return t[0].reshape(shape); });
  return cap.done(result, [&] {
    return autograd::capture::Args{self, autograd::capture::ints(sizes)};
  });
}

Tensor unsafe_view(const Tensor& self, IntArrayRef sizes) {
  Tensor result = native::detach(native::view(self, sizes));
  if (auto node = reshape_node(self, "UnsafeViewBackward0")) autograd::set_history(result, node);
  autograd::fwd::propagate("_unsafe_view", result, {self},
                           [&](const auto& t) { return t[0].reshape(sizes); });
  return result;
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return reshape(self, {1});
  const int64_t s = wrap_dim(start_dim, self.dim(), "flatten");
  const int64_t e = wrap_dim(end_dim, self.dim(), "flatten");
  if (s > e) {
    throw ValueError(
        str("flatten() has invalid args: start_dim cannot come after end_dim (start_dim ", s,
            ", end_dim ", e, ")"));
  }
  if (s == e) return self;
  DimVector shape;
  for (int64_t i = 0; i < s; ++i) shape.push_back(self.size(i));
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged *= self.size(i);
  shape.push_back(merged);
  for (int64_t i = e + 1; i < self.dim(); ++i) shape.push_back(self.size(i));
  return reshape(self, shape);
}

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  autograd::capture::OpScope cap("diagonal", autograd::capture::OpKind::kView);
  Tensor result = native::diagonal(self, offset, dim1, dim2);
  auto node = node_if_needed<autograd::DiagonalBackward0>(self);
  if (node) {
    node->self_sizes_ = DimVector(self.sizes());
    node->offset_ = offset;
    node->dim1_ = wrap_dim(dim1, self.dim(), "diagonal");
    node->dim2_ = wrap_dim(dim2, self.dim(), "diagonal");
  }
  return cap.done(record_view("diagonal", self, result, node,
                              [offset, dim1, dim2](const Tensor& b) {
                                return mutagrad::diagonal(b, offset, dim1, dim2);
                              }),
                  [&] {
                    return autograd::capture::Args{self, offset, dim1, dim2};
                  });
}

Tensor unfold(const Tensor& self, int64_t dim, int64_t size, int64_t step) {
  Tensor result = autograd::unfold_view(self, dim, size, step);
  auto node = node_if_needed<autograd::UnfoldBackward0>(self);
  if (node) {
    node->self_sizes_ = DimVector(self.sizes());
    node->dim_ = wrap_dim(dim, self.dim(), "unfold");
    node->size_ = size;
    node->step_ = step;
  }
  return record_view("unfold", self, result, node, [dim, size, step](const Tensor& b) {
    return mutagrad::unfold(b, dim, size, step);
  });
}

Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  const int64_t d = wrap_dim(dim, self.dim(), "unflatten");
  if (sizes.empty()) throw ValueError("unflatten: sizes must be non-empty");
  const int64_t size_d = self.dim() == 0 ? 1 : self.size(d);
  int64_t known = 1;
  int64_t inferred = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && inferred < 0) {
      inferred = static_cast<int64_t>(i);
    } else if (sizes[i] == -1) {
      throw ValueError(str("unflatten(): only one dimension can be inferred, got sizes ", sizes));
    } else {
      known *= sizes[i];
    }
  }
  DimVector shape(sizes);
  if (inferred >= 0 && known != 0 && size_d % known == 0) {
    shape[static_cast<size_t>(inferred)] = size_d / known;
  }
  if (compute_numel(shape) != size_d || (inferred >= 0 && known == 0)) {
    throw ShapeError(str("unflatten: Provided sizes ", sizes,
                         " don't multiply up to the size of dim ", d, " (", size_d,
                         ") in the input tensor"));
  }
  DimVector new_sizes;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i == d) {
      for (int64_t s : shape) new_sizes.push_back(s);
    } else {
      new_sizes.push_back(self.size(i));
    }
  }
  if (self.dim() == 0) new_sizes = shape;
  return view(self, new_sizes);  // ViewBackward0, as torch
}

Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                  std::optional<int64_t> storage_offset) {
  autograd::capture::OpScope cap("as_strided", autograd::capture::OpKind::kView);
  Tensor result = native::as_strided(self, sizes, strides, storage_offset);
  auto node = node_if_needed<autograd::AsStridedBackward0>(self);
  if (node) {
    node->input_ = {DimVector(self.sizes()), DimVector(self.strides()), self.storage_offset()};
    node->output_ = {DimVector(result.sizes()), DimVector(result.strides()),
                     result.storage_offset()};
  }
  return cap.done(record_view("as_strided", self, result, node, nullptr), [&] {
    return autograd::capture::Args{self, autograd::capture::ints(sizes),
                                   autograd::capture::ints(strides),
                                   autograd::capture::opt(storage_offset)};
  });
}

Tensor alias(const Tensor& self) {
  autograd::capture::OpScope cap("alias", autograd::capture::OpKind::kView);
  Tensor result = native::alias(self);
  return cap.done(record_view("alias", self, result, node_if_needed<autograd::AliasBackward0>(self),
                              [](const Tensor& b) { return mutagrad::alias(b); }),
                  [&] { return autograd::capture::Args{self}; });
}

namespace {
// Capture records the results of unbind (stacked) and split/chunk as the select/narrow views
// that make them, one node each (Note [Capture hook]).
std::vector<Tensor> captured_pieces(autograd::capture::OpScope& cap, const Tensor& self,
                                    std::vector<Tensor> views, bool stacked, int64_t dim) {
  if (!cap) return views;
  const int64_t d = wrap_dim(dim, self.dim(), stacked ? "unbind" : "split");
  int64_t start = 0;
  for (size_t i = 0; i < views.size(); ++i) {
    const Tensor& v = views[i];
    if (stacked) {
      cap.done_as("select", autograd::capture::OpKind::kView, v, [&] {
        return autograd::capture::Args{self, d, static_cast<int64_t>(i)};
      });
    } else {
      cap.done_as("narrow", autograd::capture::OpKind::kView, v, [&] {
        return autograd::capture::Args{self, d, start, v.size(d)};
      });
      start += v.size(d);
    }
  }
  return views;
}
}  // namespace

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  autograd::capture::OpScope cap("unbind", autograd::capture::OpKind::kView);
  return captured_pieces(
      cap, self,
      record_multi_view("unbind", self, native::unbind(self, dim), "UnbindBackward0", true, dim),
      true, dim);
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  autograd::capture::OpScope cap("split", autograd::capture::OpKind::kView);
  return captured_pieces(cap, self,
                         record_multi_view("split", self, native::split(self, split_size, dim),
                                           "SplitBackward0", false, dim),
                         false, dim);
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  autograd::capture::OpScope cap("split_with_sizes", autograd::capture::OpKind::kView);
  return captured_pieces(
      cap, self,
      record_multi_view("split_with_sizes", self, native::split_with_sizes(self, split_sizes, dim),
                        "SplitWithSizesBackward0", false, dim),
      false, dim);
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  autograd::capture::OpScope cap("chunk", autograd::capture::OpKind::kView);
  return captured_pieces(cap, self,
                         record_multi_view("chunk", self, native::chunk(self, chunks, dim),
                                           "SplitBackward0", false, dim),
                         false, dim);
}

Tensor as_strided_scatter(const Tensor& self, const Tensor& src, IntArrayRef sizes,
                          IntArrayRef strides, int64_t storage_offset, bool accumulate) {
  Tensor result = native::clone(self);
  autograd::Geometry g{DimVector(sizes), DimVector(strides), storage_offset};
  autograd::scatter_into(result, src, g, accumulate);
  // AsStridedScatterBackward0's tangent: the same scatter of the tangents (linear in both).
  autograd::fwd::propagate("as_strided_scatter", result, {self, src}, [&](const auto& t) {
    return as_strided_scatter(autograd::fwd::tangent_or_zeros(t[0], self),
                              autograd::fwd::tangent_or_zeros(t[1], src), sizes, strides,
                              storage_offset, accumulate);
  });
  if (autograd::compute_requires_grad_has_jvp(self, src)) {
    auto node = make_node<autograd::AsStridedScatterBackward0>(self, src);
    node->geometry_ = std::move(g);
    node->accumulate_ = accumulate;
    autograd::set_history(result, node);
  }
  return result;
}

// ---- Tensor members ----------------------------------------------------------------------------
Tensor Tensor::select(int64_t dim, int64_t index) const {
  return mutagrad::select(*this, dim, index);
}
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
                     int64_t step) const {
  return mutagrad::slice(*this, dim, start, stop, step);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return mutagrad::narrow(*this, dim, start, length);
}
Tensor Tensor::permute(IntArrayRef dims) const { return mutagrad::permute(*this, dims); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return mutagrad::transpose(*this, dim0, dim1);
}
Tensor Tensor::t() const { return mutagrad::t(*this); }
Tensor Tensor::expand(IntArrayRef sizes) const { return mutagrad::expand(*this, sizes); }
Tensor Tensor::expand_as(const Tensor& other) const {
  return mutagrad::expand(*this, other.sizes());
}
Tensor Tensor::unsqueeze(int64_t dim) const { return mutagrad::unsqueeze(*this, dim); }
Tensor Tensor::squeeze() const { return mutagrad::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return mutagrad::squeeze(*this, dim); }
Tensor Tensor::view(IntArrayRef sizes) const { return mutagrad::view(*this, sizes); }
Tensor Tensor::view_as(const Tensor& other) const { return mutagrad::view(*this, other.sizes()); }
Tensor Tensor::reshape(IntArrayRef sizes) const { return mutagrad::reshape(*this, sizes); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return mutagrad::flatten(*this, start_dim, end_dim);
}
Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  return mutagrad::diagonal(*this, offset, dim1, dim2);
}
Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides,
                          std::optional<int64_t> storage_offset) const {
  return mutagrad::as_strided(*this, sizes, strides, storage_offset);
}
Tensor Tensor::alias() const { return mutagrad::alias(*this); }
Tensor Tensor::unfold(int64_t dim, int64_t size, int64_t step) const {
  return mutagrad::unfold(*this, dim, size, step);
}
Tensor Tensor::unflatten(int64_t dim, IntArrayRef sizes) const {
  return mutagrad::unflatten(*this, dim, sizes);
}
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return mutagrad::unbind(*this, dim); }
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  return mutagrad::split(*this, split_size, dim);
}
std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef split_sizes, int64_t dim) const {
  return mutagrad::split_with_sizes(*this, split_sizes, dim);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  return mutagrad::chunk(*this, chunks, dim);
}

}  // namespace mutagrad
