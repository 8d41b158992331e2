// take, put_, masked_select, masked_scatter_ and their out-of-place forms: see take_put_ops.h.
// Writes go through the mutation engine's steps (check_inplace, every check, one bump with the
// call site, the write, rebase_history), as index_put_ does.
#include "autograd/ops/take_put_ops.h"

#include <memory>
#include <utility>
#include <vector>

#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/scatter_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/index_rules.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {
namespace {

Tensor as_nonempty(const Tensor& t) { return t.dim() == 0 ? native::view(t, {1}) : t; }

void check_long_index(const char* op, const Tensor& self, const Tensor& index) {
  if (index.dtype() != kInt64) {
    throw DTypeError(str(op, "(): Expected a long tensor for index, but got ",
                         dtype_name(index.dtype()), "; convert it with .to(kInt64)"));
  }
  check_same_device(op, self.device(), index.device());
}

void check_bool_mask(const char* op, const Tensor& self, const Tensor& mask) {
  if (mask.dtype() != kBool) {
    throw DTypeError(str(op, "(): expected BoolTensor for mask, but got ", dtype_name(mask.dtype()),
                         "; build it with a comparison or .to(kBool)"));
  }
  check_same_device(op, self.device(), mask.device());
}

void check_same_dtype(const char* op, const Tensor& self, const Tensor& source) {
  if (source.dtype() != self.dtype()) {
    throw DTypeError(str(op, "(): self and source expected to have the same dtype, but got ",
                         dtype_name(self.dtype()), " and ", dtype_name(source.dtype()),
                         "; convert the source with .to(", dtype_name(self.dtype()), ")"));
  }
  check_same_device(op, self.device(), source.device());
}

// ---- take / put_ ---------------------------------------------------------------------------

// A put_ ready to run: validated (bounds included) before the bump.
struct PutPlan {
  Tensor dest;  // 1-D: self's elements (a view), or self's whole storage span
  Tensor values;
  native::AdvancedIndex adv;
  bool accumulate = false;
};

// Note [put_ on a strided tensor]
// put_ numbers self's elements in row-major order. A contiguous self is viewed as 1-D. Any
// other layout is written through a 1-D view of the storage span it covers, with each index
// mapped to its element's storage offset (a gather from the table of offsets, which also checks
// the index's bounds against self's element count). Elements outside self in that span are
// never targeted, so every alias sees exactly the writes to self's elements. Such a write is
// never staged (Note [Staged writes] in tensor/native/index_ops.cc): its copy back would
// rewrite the whole span, elements of other tensors included, with the values they had before
// the bump (a write to them in between, by another thread or the pre-write hook, would be lost).
PutPlan plan_put(const char* op, const Tensor& self, const Tensor& index, const Tensor& source,
                 bool accumulate) {
  check_long_index(op, self, index);
  check_same_dtype(op, self, source);
  if (index.numel() != source.numel()) {
    // IndexError, as PyTorch.
    throw IndexError(str(op, "(): Expected source and index to have the same number of elements, ",
                         "but got source.numel() = ", source.numel(),
                         ", index.numel() = ", index.numel(), "; give one source value per index"));
  }
  native::assert_no_internal_overlap(self, op);
  const Tensor s = native::detach(self);
  const int64_t n = s.numel();
  const Tensor index1 = native::reshape(index, {index.numel()});
  PutPlan p;
  p.accumulate = accumulate;
  p.values = native::reshape(native::detach(source), {source.numel()});
  Tensor targets = index1;
  if (s.is_contiguous()) {
    p.dest = native::view(s, {n});
  } else {
    int64_t span = 1;
    for (int64_t d = 0; d < s.dim(); ++d) span += (s.size(d) - 1) * s.stride(d);
    const Tensor offsets = native::contiguous(
        native::as_strided(arange(span, kInt64, s.device()), s.sizes(), s.strides(), 0));
    targets = native::index(native::view(offsets, {n}), {index1},
                            native::negative_index_wraps(native::IndexedOp::kPut));
    p.dest = native::as_strided(s, {span}, {1}, s.storage_offset());
  }
  p.adv = native::prepare_index_put(p.dest, {targets}, p.values, accumulate,
                                    native::negative_index_wraps(native::IndexedOp::kPut),
                                    /*may_stage=*/s.is_contiguous());
  return p;
}

void run_put(const PutPlan& p, const PendingBump* bump = nullptr) {
  native::index_put_validated(p.dest, p.adv, p.values, p.accumulate, bump);
}

class TakeBackward0 final : public Node {
 public:
  const char* name() const override { return "TakeBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!should_compute_output(0) || !grads[0].defined()) return {Tensor()};
    const Tensor index = index_.unpack(this);
    Tensor zero = zeros(self_sizes_, TensorOptions(grads[0].dtype()).device(grads[0].device()));
    return {mutagrad::put(zero, index, grads[0], /*accumulate=*/true)};
  }
  void visit_saved(SavedVisitor& v) override { v.visit("index", index_); }
  SavedVariable index_;
  DimVector self_sizes_;
};

class PutBackward0 final : public Node {
 public:
  const char* name() const override { return "PutBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    const Tensor index = index_.unpack(this);
    if (should_compute_output(0)) {
      const Tensor zero = zeros(source_sizes_, TensorOptions(grad.dtype()).device(grad.device()));
      out[0] = accumulate_ ? grad : mutagrad::put(grad, index, zero);
    }
    if (should_compute_output(1)) {
      Tensor g = mutagrad::take(grad, index);
      if (!accumulate_) {
        // Only the winning (last) occurrence of a duplicated index was written.
        // (Negative indices wrap in the kernels, so -1 and numel - 1 are one destination.)
        const Tensor flat = native::reshape(index, {index.numel()});
        const Tensor won = scatter_winners(flat, 0, {grad.numel()});
        g = g * native::to(native::view(won, index.sizes()), g.dtype());
      }
      out[1] = g.reshape(source_sizes_);
    }
    return out;
  }
  // Tangent (linear): the same put of the source's tangent into self's, through the same
  // deterministic kernel (duplicates resolve as for the primal).
  static Tensor jvp(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate,
                    const Tensor& ts, const Tensor& tsrc) {
    return mutagrad::put(fwd::tangent_or_zeros(ts, self), index,
                         fwd::tangent_or_zeros(tsrc, source), accumulate);
  }
  void visit_saved(SavedVisitor& v) override { v.visit("index", index_); }
  SavedVariable index_;
  DimVector source_sizes_;
  bool accumulate_ = false;
};

std::shared_ptr<Node> make_put_node(const Tensor& self, const Tensor& index, const Tensor& source,
                                    bool accumulate) {
  auto node = make_node<PutBackward0>(self, source);
  node->index_ = SavedVariable(index, /*is_output=*/false);
  node->source_sizes_ = DimVector(source.sizes());
  node->accumulate_ = accumulate;
  return node;
}

// ---- masked_select / masked_scatter_ -----------------------------------------------------------

// A masked_scatter_ ready to run: the coordinates of the mask's true elements (one device sync
// on a GPU, for their count) and the source's leading elements.
struct MaskedScatterPlan {
  Tensor self;  // >= 1-dim view
  Tensor values;
  native::AdvancedIndex adv;
};

MaskedScatterPlan plan_masked_scatter(const char* op, const Tensor& self, const Tensor& mask,
                                      const Tensor& source) {
  check_bool_mask(op, self, mask);
  check_same_dtype(op, self, source);
  if (!native::is_expandable_to(mask.sizes(), self.sizes())) {
    throw ShapeError(str(op, "(): the mask of shape ", mask.sizes(),
                         " does not broadcast to the tensor's shape ", self.sizes(),
                         " (an in-place op keeps the tensor's shape); give the mask that shape "
                         "or sizes of 1 in the dims to broadcast"));
  }
  MaskedScatterPlan p;
  p.self = as_nonempty(native::detach(self));
  const Tensor m = native::expand(as_nonempty(mask), p.self.sizes());
  const Tensor coords = native::nonzero(m);
  const int64_t count = coords.size(0);
  if (source.numel() < count) {
    throw ShapeError(str(op, "(): Number of elements of source < number of ones in mask (",
                         source.numel(), " < ", count,
                         "); give a source with at least as many elements as the mask selects"));
  }
  std::vector<Tensor> columns;
  for (int64_t d = 0; d < coords.size(1); ++d) columns.push_back(native::select(coords, 1, d));
  p.values = native::narrow(native::reshape(native::detach(source), {source.numel()}), 0, 0, count);
  p.adv =
      native::prepare_index_put(p.self, columns, p.values, /*accumulate=*/false,
                                native::negative_index_wraps(native::IndexedOp::kMaskedScatter));
  return p;
}

void run_masked_scatter(const MaskedScatterPlan& p, const PendingBump* bump = nullptr) {
  native::index_put_validated(p.self, p.adv, p.values, false, bump);
}

class MaskedSelectBackward0 final : public Node {
 public:
  const char* name() const override { return "MaskedSelectBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!should_compute_output(0) || !grads[0].defined()) return {Tensor()};
    const Tensor mask = mask_.unpack(this);
    Tensor zero = zeros(shape_, TensorOptions(grads[0].dtype()).device(grads[0].device()));
    Tensor g = mutagrad::masked_scatter(zero, native::expand(mask, shape_), grads[0]);
    return {sum_to(g, self_sizes_)};
  }
  void visit_saved(SavedVisitor& v) override { v.visit("mask", mask_); }
  SavedVariable mask_;
  DimVector self_sizes_;
  DimVector shape_;  // self and mask broadcast
};

class MaskedScatterBackward0 final : public Node {
 public:
  const char* name() const override { return "MaskedScatterBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    const Tensor mask = mask_.unpack(this);
    if (should_compute_output(0)) out[0] = grad.masked_fill(mask, 0);
    if (should_compute_output(1)) {
      // The source's leading elements got the masked gradient, the rest nothing.
      const Tensor g = mutagrad::masked_select(grad, mask);
      const int64_t n = compute_numel(source_sizes_);
      out[1] = pad_gradient_to(g, {n}).reshape(source_sizes_);
    }
    return out;
  }
  // Tangent (linear): the same masked_scatter of the source's tangent into self's.
  static Tensor jvp(const Tensor& self, const Tensor& mask, const Tensor& source, const Tensor& ts,
                    const Tensor& tsrc) {
    return mutagrad::masked_scatter(fwd::tangent_or_zeros(ts, self), mask,
                                    fwd::tangent_or_zeros(tsrc, source));
  }
  void visit_saved(SavedVisitor& v) override { v.visit("mask", mask_); }
  SavedVariable mask_;
  DimVector source_sizes_;
};

std::shared_ptr<Node> make_masked_scatter_node(const Tensor& self, const Tensor& mask,
                                               const Tensor& source) {
  auto node = make_node<MaskedScatterBackward0>(self, source);
  node->mask_ = SavedVariable(mask, /*is_output=*/false);
  node->source_sizes_ = DimVector(source.sizes());
  return node;
}

// put and masked_scatter have tangent formulas (PutBackward0::jvp, MaskedScatterBackward0::jvp).
bool requires_grad_of(const Tensor& self, const Tensor& source) {
  return self.is_floating_point() && compute_requires_grad_has_jvp(self, source);
}

}  // namespace

Tensor take(const Tensor& self, const Tensor& index) {
  const char* op = "take";
  check_long_index(op, self, index);
  const Tensor flat = native::reshape(native::detach(self), {self.numel()});
  Tensor result =
      native::view(native::index(flat, {as_nonempty(index)},
                                 native::negative_index_wraps(native::IndexedOp::kTake)),
                   index.sizes());
  // TakeBackward0's tangent: the same elements of the tangent (linear).
  fwd::propagate(op, result, {self}, [&](const auto& t) { return autograd::take(t[0], index); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<TakeBackward0>(self);
    node->index_ = SavedVariable(index, /*is_output=*/false);
    node->self_sizes_ = DimVector(self.sizes());
    set_history(result, node);
  }
  return result;
}

void put_(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate,
          const MutationSite& site) {
  const bool requires_grad = requires_grad_of(self, source);
  check_inplace(self, requires_grad);
  const PutPlan p = plan_put(site.op, self, index, source, accumulate);
  // Note [Tangents under mutation]: computed before the write (source may alias self).
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {source}, [&](const auto& t) {
    return PutBackward0::jvp(self, index, source, accumulate, t[0], t[1]);
  });
  std::shared_ptr<Node> node =
      requires_grad ? make_put_node(self, index, source, accumulate) : nullptr;
  const PendingBump bump(self.version_counter(), site, self.unsafe_impl());  // checks passed
  run_put(p, &bump);
  if (node) rebase_history(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  const char* op = "masked_select";
  check_bool_mask(op, self, mask);
  const DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), op);
  const Tensor s = native::expand(native::detach(self), shape);
  const Tensor m = native::expand(mask, shape);
  Tensor result = shape.empty() ? native::index(native::view(s, {1}), {native::view(m, {1})})
                                : native::index(s, {m});
  // MaskedSelectBackward0's tangent: the same elements of the tangent (linear).
  fwd::propagate(op, result, {self},
                 [&](const auto& t) { return autograd::masked_select(t[0], mask); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<MaskedSelectBackward0>(self);
    node->mask_ = SavedVariable(mask, /*is_output=*/false);
    node->self_sizes_ = DimVector(self.sizes());
    node->shape_ = shape;
    set_history(result, node);
  }
  return result;
}

void masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source,
                     const MutationSite& site) {
  const bool requires_grad = requires_grad_of(self, source);
  check_inplace(self, requires_grad);
  const MaskedScatterPlan p = plan_masked_scatter(site.op, self, mask, source);
  // Note [Tangents under mutation]: computed before the write (source may alias self).
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {source}, [&](const auto& t) {
    return MaskedScatterBackward0::jvp(self, mask, source, t[0], t[1]);
  });
  std::shared_ptr<Node> node =
      requires_grad ? make_masked_scatter_node(self, mask, source) : nullptr;
  const PendingBump bump(self.version_counter(), site, self.unsafe_impl());  // checks passed
  run_masked_scatter(p, &bump);
  if (node) rebase_history(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}

}  // namespace autograd

namespace {
MutationSite site_of(const char* op, CallSite site) {
  return MutationSite{op, site.file, site.line};
}
}  // namespace

Tensor take(const Tensor& self, const Tensor& index) { return autograd::take(self, index); }

Tensor put(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  Tensor result = native::clone(native::detach(self));
  autograd::run_put(autograd::plan_put("put", result, index, source, accumulate));
  if (self.is_floating_point()) {
    autograd::fwd::propagate("put", result, {self, source}, [&](const auto& t) {
      return autograd::PutBackward0::jvp(self, index, source, accumulate, t[0], t[1]);
    });
  }
  if (autograd::requires_grad_of(self, source)) {
    autograd::set_history(result, autograd::make_put_node(self, index, source, accumulate));
  }
  return result;
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  return autograd::masked_select(self, mask);
}

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  const char* op = "masked_scatter";
  autograd::check_bool_mask(op, self, mask);
  const DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), op);
  // The mask may broadcast self too (torch's out-of-place form): expand self differentiably.
  if (!self.sizes().equals(shape)) return masked_scatter(self.expand(shape), mask, source);
  Tensor result = native::clone(native::detach(self));
  autograd::run_masked_scatter(autograd::plan_masked_scatter(op, result, mask, source));
  if (self.is_floating_point()) {
    autograd::fwd::propagate(op, result, {self, source}, [&](const auto& t) {
      return autograd::MaskedScatterBackward0::jvp(self, mask, source, t[0], t[1]);
    });
  }
  if (autograd::requires_grad_of(self, source)) {
    autograd::set_history(result, autograd::make_masked_scatter_node(self, mask, source));
  }
  return result;
}

Tensor Tensor::take(const Tensor& index) const { return autograd::take(*this, index); }
Tensor& Tensor::put_(const Tensor& index, const Tensor& source, bool accumulate, CallSite site) {
  autograd::put_(*this, index, source, accumulate, site_of("put_", site));
  return *this;
}
Tensor Tensor::put(const Tensor& index, const Tensor& source, bool accumulate) const {
  return mutagrad::put(*this, index, source, accumulate);
}
Tensor Tensor::masked_select(const Tensor& mask) const {
  return autograd::masked_select(*this, mask);
}
Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source, CallSite site) {
  autograd::masked_scatter_(*this, mask, source, site_of("masked_scatter_", site));
  return *this;
}
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return mutagrad::masked_scatter(*this, mask, source);
}

}  // namespace mutagrad
