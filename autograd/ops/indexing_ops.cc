#include "autograd/ops/indexing_ops.h"

#include <memory>
#include <utility>
#include <vector>

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad::autograd {
namespace {

// An index list saved for backward: undefined entries (dims taken whole) stay undefined.
class SavedIndices {
 public:
  SavedIndices() = default;
  explicit SavedIndices(TensorList indices) {
    for (const Tensor& t : indices) {
      saved_.push_back(t.defined() ? SavedVariable(t, /*is_output=*/false) : SavedVariable());
    }
  }
  std::vector<Tensor> unpack(Node* needed_by) const {
    std::vector<Tensor> out;
    out.reserve(saved_.size());
    for (const SavedVariable& s : saved_) {
      out.push_back(s.was_saved() ? s.unpack(needed_by) : Tensor());
    }
    return out;
  }
  void visit(SavedVisitor& visitor) {
    for (SavedVariable& s : saved_) {
      if (s.was_saved()) visitor.visit("indices", s);
    }
  }

 private:
  std::vector<SavedVariable> saved_;
};

// grad (broadcast from `shape`) summed back to `shape`, with differentiable ops.
Tensor sum_to_shape(const Tensor& grad, IntArrayRef shape) {
  if (grad.sizes() == shape) return grad;
  // A one-element value with more dims than the indexed shape (a masked-fill dispatch).
  if (grad.dim() < static_cast<int64_t>(shape.size())) return grad.sum().view(shape);
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = lead + static_cast<int64_t>(i);
    if (shape[i] == 1 && grad.size(d) != 1) dims.push_back(d);
  }
  Tensor r = dims.empty() ? grad : grad.sum(dims, /*keepdim=*/true);
  return r.sizes() == shape ? r : r.view(shape);
}

// For self[indices] = values without accumulate: which elements of the indexed shape are the
// last write to their destination (bool, the indexed shape). Deterministic because the
// kernel's "last occurrence wins" is (see docs/indexing.md).
Tensor winner_mask(IntArrayRef self_sizes, Device device, const std::vector<Tensor>& indices) {
  Tensor scratch = full(self_sizes, -1, kInt64, device);
  native::AdvancedIndex adv = native::make_advanced_index(scratch, indices);
  Tensor ids =
      native::view(arange(compute_numel(adv.result_shape), kInt64, device), adv.result_shape);
  native::index_put_validated(scratch, adv, ids, /*accumulate=*/false);
  return native::binary(BinaryOp::kEq, native::index(scratch, indices), ids);
}

// index_put (out of place, differentiable) with index entries known in range (Note [Indices
// known in range] in tensor/native/index_ops.h).
Tensor index_put_known(const Tensor& self, TensorList indices, const Tensor& values,
                       bool accumulate, native::KnownIndices known);

class IndexBackward0 final : public Node {
 public:
  const char* name() const override { return "IndexBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!should_compute_output(0) || !grads[0].defined()) return {Tensor()};
    Tensor zero = zeros(self_sizes_, TensorOptions(dtype_).device(device_));
    // The forward checked these indices against self's sizes (zero's) and SavedIndices
    // refuses them if modified since: a device skips the screen and its wait. The CPU, whose
    // screen is cheap and tells its kernel whether to wrap negatives, screens again.
    const native::KnownIndices known =
        device_.is_cpu() ? native::KnownIndices{} : native::KnownIndices::all();
    return {index_put_known(zero, indices_.unpack(this), grads[0], /*accumulate=*/true, known)};
  }
  void visit_saved(SavedVisitor& visitor) override { indices_.visit(visitor); }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override {
    v.visit("self_sizes", self_sizes_);
  }

  DimVector self_sizes_;
  ScalarType dtype_ = kFloat32;
  Device device_ = kCPU;
  SavedIndices indices_;
};

class IndexPutBackward0 final : public Node {
 public:
  const char* name() const override { return "IndexPutBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    std::vector<Tensor> indices = indices_.unpack(this);
    if (should_compute_output(0)) {
      out[0] = accumulate_ ? grad
                           : index_put(grad, indices, full({}, 0, grad.dtype(), grad.device()),
                                       /*accumulate=*/false);
    }
    if (should_compute_output(1)) {
      Tensor g = index(grad, indices);
      if (!accumulate_) {
        // Only the winning (last) occurrence of a duplicated destination was written.
        Tensor won = winner_mask(grad.sizes(), grad.device(), indices);
        g = g.masked_fill(native::unary(UnaryOp::kLogicalNot, won), 0);
      }
      out[1] = sum_to_shape(g, values_sizes_);
    }
    return out;
  }
  void visit_saved(SavedVisitor& visitor) override { indices_.visit(visitor); }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override {
    v.visit("accumulate", accumulate_);
  }

  SavedIndices indices_;
  DimVector values_sizes_;
  bool accumulate_ = false;
};

}  // namespace

Tensor index(const Tensor& self, TensorList indices) {
  autograd::capture::OpScope cap("index", autograd::capture::OpKind::kFunctional);
  Tensor result = native::index(self, indices);
  // IndexBackward0's tangent: the same gather of the tangent (linear).
  fwd::propagate("index", result, {self}, [&](const auto& t) { return index(t[0], indices); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<IndexBackward0>(self);
    node->self_sizes_ = DimVector(self.sizes());
    node->dtype_ = self.dtype();
    node->device_ = self.device();
    node->indices_ = SavedIndices(indices);
    set_history(result, node);
  }
  return cap.done(result, [&] {
    return autograd::capture::Args{self, autograd::capture::tensors(indices)};
  });
}

namespace {

std::shared_ptr<IndexPutBackward0> make_index_put_node(const Tensor& self, TensorList indices,
                                                       const Tensor& values, bool accumulate) {
  auto node = make_node<IndexPutBackward0>(self, values);
  node->indices_ = SavedIndices(indices);
  node->values_sizes_ = DimVector(values.sizes());
  node->accumulate_ = accumulate;
  return node;
}

}  // namespace

void index_put__uncaptured(const Tensor& self, TensorList indices, const Tensor& values,
                           bool accumulate, const MutationSite& site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self, values);
  check_inplace(self, requires_grad);
  native::AdvancedIndex adv = native::prepare_index_put(self, indices, values, accumulate);
  // IndexPutBackward0's tangent: the same write of values' tangent into self's, through the
  // same kernel (Note [Tangents under mutation] in autograd/forward_ad.h).
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {values}, [&](const auto& t) {
    return index_put(fwd::tangent_or_zeros(t[0], self), indices,
                     fwd::tangent_or_zeros(t[1], values), accumulate);
  });
  std::shared_ptr<IndexPutBackward0> node;
  if (requires_grad) node = make_index_put_node(self, indices, values, accumulate);
  const PendingBump bump(self.version_counter(), site, self.unsafe_impl());
  native::index_put_validated(self, adv, values, accumulate, &bump);
  if (node) rebase_history(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}

void index_put_(const Tensor& self, TensorList indices, const Tensor& values, bool accumulate,
                const MutationSite& site) {
  autograd::capture::OpScope cap("index_put", autograd::capture::OpKind::kInPlace);
  index_put__uncaptured(self, indices, values, accumulate, site);
  cap.done(self, [&] {
    return autograd::capture::Args{self, autograd::capture::tensors(indices), values, accumulate};
  });
}

// Out of place: a fresh copy written below autograd (no version bump, as PyTorch: the result
// is at version 0), with IndexPutBackward0 over self and values.
Tensor index_put(const Tensor& self, TensorList indices, const Tensor& values, bool accumulate) {
  autograd::capture::OpScope cap("index_put", autograd::capture::OpKind::kFunctional);
  return cap.done(index_put_known(self, indices, values, accumulate, {}), [&] {
    return autograd::capture::Args{self, autograd::capture::tensors(indices), values, accumulate};
  });
}

namespace {

Tensor index_put_known(const Tensor& self, TensorList indices, const Tensor& values,
                       bool accumulate, native::KnownIndices known) {
  Tensor result = native::clone(native::detach(self));
  native::AdvancedIndex adv =
      native::prepare_index_put(result, indices, values, accumulate, true, true, known);
  native::index_put_validated(result, adv, values, accumulate);
  if (compute_requires_grad_has_jvp(self, values)) {
    set_history(result, make_index_put_node(self, indices, values, accumulate));
  }
  // IndexPutBackward0's tangent (linear in self and values).
  fwd::propagate("index_put", result, {self, values}, [&](const auto& t) {
    return index_put_known(fwd::tangent_or_zeros(t[0], self), indices,
                           fwd::tangent_or_zeros(t[1], values), accumulate, known);
  });
  return result;
}

}  // namespace

}  // namespace mutagrad::autograd
