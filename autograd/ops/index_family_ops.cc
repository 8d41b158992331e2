// index_select, index_add_, index_copy_, index_fill_ and their out-of-place forms: see
// index_family_ops.h. Each write is index_put_ with the index list {:, ..., :, index}, through
// the mutation engine's steps (check_inplace, every check, one bump with the call site, the
// write, rebase_history).
#include "autograd/ops/index_family_ops.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
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

enum class Kind { kAdd, kCopy, kFill };

bool is_one(const Scalar& s) { return s.to<double>() == 1.0; }

// A validated dim-wise write: the index as a 1-D int64 tensor, the dim wrapped.
struct DimWrite {
  const char* op = "";
  Kind kind = Kind::kAdd;
  int64_t dim = 0;
  Tensor index;
  Tensor source;        // kAdd, kCopy
  Scalar value;         // kFill
  Tensor value_tensor;  // kFill with a 0-dim tensor value (IndexFillBackward1), else undefined
  Scalar alpha = 1;
};

// The index of a dim-wise op: an int64 (or int32) tensor of at most one dim, on self's device
// or the CPU; returned 1-D and int64.
Tensor vector_index(const char* op, const Tensor& self, const Tensor& index) {
  if (index.dtype() != kInt64 && index.dtype() != kInt32) {
    throw IndexError(str(op, "(): Expected dtype int32/int64 for index but got ",
                         dtype_name(index.dtype()), "; convert it with .to(kInt64)"));
  }
  if (index.dim() > 1) {
    throw ShapeError(str(op, "(): Index is supposed to be a vector, but got an index of shape ",
                         index.sizes(), "; flatten it first (index.reshape({-1}))"));
  }
  if (!index.device().is_cpu()) check_same_device(op, self.device(), index.device());
  Tensor flat = native::reshape(index, {index.numel()});
  return flat.dtype() == kInt64 ? flat : native::to(flat, kInt64);
}

int64_t wrap_dim_of(const char* op, const Tensor& self, int64_t dim) {
  if (self.dim() == 0) {
    throw ShapeError(str(op,
                         "(): self is 0-dimensional; view it as a 1-element tensor first "
                         "(x.view({1}))"));
  }
  return wrap_dim(dim, self.dim(), op);
}

// {Tensor(), ..., Tensor(), index}: index at `dim`, the dims before taken whole.
std::vector<Tensor> dim_indices(int64_t dim, const Tensor& index) {
  std::vector<Tensor> list(static_cast<size_t>(dim));
  list.push_back(index);
  return list;
}

// The source of index_add_/index_copy_: self's dtype and device, self's shape with `dim` of
// size index.numel().
void check_source(const DimWrite& w, const Tensor& self) {
  const Tensor& src = w.source;
  if (src.dtype() != self.dtype()) {
    throw DTypeError(str(w.op, "(): self (", legacy_type_name(self.dtype()), ") and source (",
                         legacy_type_name(src.dtype()),
                         ") must have the same scalar type; convert the source with .to(",
                         dtype_name(self.dtype()), ")"));
  }
  check_same_device(w.op, self.device(), src.device());
  DimVector expected(self.sizes());
  expected[static_cast<size_t>(w.dim)] = w.index.numel();
  if (!src.sizes().equals(expected)) {
    throw ShapeError(str(w.op, "(): source of shape ", src.sizes(), " does not match: expected ",
                         IntArrayRef(expected), " (self's shape with dim ", w.dim,
                         " of the index's length ", w.index.numel(), ")"));
  }
}

DimWrite validate(const char* op, Kind kind, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor& source, const Scalar& value, const Scalar& alpha) {
  DimWrite w;
  w.op = op;
  w.kind = kind;
  w.dim = wrap_dim_of(op, self, dim);
  w.index = vector_index(op, self, index);
  w.source = source;
  w.value = value;
  w.alpha = alpha;
  if (kind == Kind::kFill) {
    check_scalar_fits(value, self.dtype(), op);
  } else {
    check_source(w, self);
    if (kind == Kind::kAdd) native::check_alpha(self.dtype(), alpha, op);
  }
  return w;
}

// index_fill_ with a 0-dim tensor value: PyTorch reads the value (item(): one device-to-host
// copy on a GPU) and fills it; the value's gradient is the sum over the filled elements.
DimWrite validate_fill_tensor(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& value) {
  if (value.dim() != 0) {
    throw ShapeError(str(op, "(): only supports a 0-dimensional value tensor, but got tensor with ",
                         value.dim(), " dimension(s); pass value.squeeze() or a number"));
  }
  DimWrite w = validate(op, Kind::kFill, self, dim, index, Tensor(), value.item(), 1);
  if (value.is_floating_point() && self.is_floating_point()) w.value_tensor = value;
  return w;
}

// The op's rule for negative indices (tensor/native/index_rules.h): index_add_ and index_copy_
// refuse them, index_fill_ wraps them, as PyTorch.
bool negative_wraps(Kind kind) {
  switch (kind) {
    case Kind::kAdd:
      return native::negative_index_wraps(native::IndexedOp::kIndexAdd);
    case Kind::kCopy:
      return native::negative_index_wraps(native::IndexedOp::kIndexCopy);
    case Kind::kFill:
      break;
  }
  return native::negative_index_wraps(native::IndexedOp::kIndexFill);
}

// What index_put_ writes: the source (scaled by alpha) or the fill value as a 0-dim tensor.
Tensor kernel_values(const DimWrite& w, const Tensor& self) {
  switch (w.kind) {
    case Kind::kFill:
      return native::wrap_scalar(w.value, self.dtype(), self.device(), w.op);
    case Kind::kAdd:
      return is_one(w.alpha) ? w.source : native::scale_by_alpha(w.source, w.alpha, self.dtype());
    case Kind::kCopy:
      break;
  }
  return w.source;
}

// For each position of a 1-D index into a dim of `size`: whether it is the last occurrence of
// its value (the write that wins without accumulate), shaped to broadcast along `dim` of an
// `ndim`-dim tensor.
Tensor winners(const Tensor& index, int64_t size, int64_t dim, int64_t ndim) {
  DimVector shape(static_cast<size_t>(ndim), 1);
  shape[static_cast<size_t>(dim)] = index.numel();
  return native::reshape(scatter_winners(index, 0, {size}), shape);
}

class IndexSelectBackward0 final : public Node {
 public:
  const char* name() const override { return "IndexSelectBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!should_compute_output(0) || !grads[0].defined()) return {Tensor()};
    Tensor index = index_.unpack(this);
    Tensor zero = zeros(self_sizes_, TensorOptions(grads[0].dtype()).device(grads[0].device()));
    return {zero.index_add(dim_, index, grads[0])};
  }
  void visit_saved(SavedVisitor& v) override { v.visit("index", index_); }
  SavedVariable index_;
  DimVector self_sizes_;
  int64_t dim_ = 0;
};

// index_add_ (IndexAddBackward0), index_copy_ (IndexCopyBackward0), index_fill_ with a scalar
// (IndexFillBackward0): edges {self, source} (the fill has only self).
class DimWriteBackward final : public Node {
 public:
  const char* name() const override {
    return kind_ == Kind::kAdd    ? "IndexAddBackward0"
           : kind_ == Kind::kCopy ? "IndexCopyBackward0"
           : num_outputs() > 1    ? "IndexFillBackward1"
                                  : "IndexFillBackward0";
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(num_outputs());
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    Tensor index = index_.unpack(this);
    if (should_compute_output(0)) {
      out[0] = kind_ == Kind::kAdd ? grad : grad.index_fill(dim_, index, 0);
    }
    if (num_outputs() > 1 && should_compute_output(1) && kind_ == Kind::kFill) {
      // The value went once to every filled element, however often the index names it.
      Tensor filled = zeros_like(grad).index_fill(dim_, index, 1);
      out[1] = (grad * filled).sum();
    } else if (num_outputs() > 1 && should_compute_output(1)) {
      Tensor g = grad.index_select(dim_, index);
      if (kind_ == Kind::kAdd && !is_one(alpha_)) g = g * alpha_;
      if (kind_ == Kind::kCopy) {
        // Only the winning (last) occurrence of a duplicated index was written.
        g = g * native::to(winners(index, grad.size(dim_), dim_, grad.dim()), g.dtype());
      }
      out[1] = g;
    }
    return out;
  }
  void visit_saved(SavedVisitor& v) override { v.visit("index", index_); }
  Kind kind_ = Kind::kAdd;
  SavedVariable index_;
  int64_t dim_ = 0;
  Scalar alpha_ = 1;
};

std::shared_ptr<Node> make_write_node(const DimWrite& w, const Tensor& self) {
  std::shared_ptr<DimWriteBackward> node =
      w.kind != Kind::kFill      ? make_node<DimWriteBackward>(self, w.source)
      : w.value_tensor.defined() ? make_node<DimWriteBackward>(self, w.value_tensor)
                                 : make_node<DimWriteBackward>(self);
  node->kind_ = w.kind;
  node->index_ = SavedVariable(w.index, /*is_output=*/false);
  node->dim_ = w.dim;
  node->alpha_ = w.alpha;
  return node;
}

Tensor write_copy(const DimWrite& w, const Tensor& self);

// Forward mode: index_add_, index_copy_ and index_fill_ are linear in (self, source or value);
// the tangent is the same write of the source's tangent (the value's, or 0) into self's,
// through the same kernel (IndexAddBackward0, IndexCopyBackward0, IndexFillBackward0/1).
Tensor write_tangent(const DimWrite& w, const Tensor& self, const Tensor& ts, const Tensor& tw) {
  DimWrite t = w;
  if (w.kind != Kind::kFill) {
    t.source = fwd::tangent_or_zeros(tw, w.source);
    return write_copy(t, fwd::tangent_or_zeros(ts, self));
  }
  // The kernel fills a number: self's tangent gets 0 there, plus the 0-dim value's tangent
  // times the filled positions (IndexFillBackward1; torch's self_t.index_fill(dim, index,
  // value_t)).
  t.value = 0;
  t.value_tensor = Tensor();
  Tensor out = write_copy(t, fwd::tangent_or_zeros(ts, self));
  if (w.value_tensor.defined() && tw.defined()) {
    DimWrite filled = t;
    filled.value = 1;
    out = out + write_copy(filled, zeros_like(out)) * tw;
  }
  return out;
}

void write_in_place(const DimWrite& w, const Tensor& self, const MutationSite& site) {
  const bool requires_grad =
      self.is_floating_point() &&
      (w.kind == Kind::kFill ? compute_requires_grad_has_jvp(self, w.value_tensor)
                             : compute_requires_grad_has_jvp(self, w.source));
  check_inplace(self, requires_grad);
  const Tensor& operand = w.kind == Kind::kFill ? w.value_tensor : w.source;
  fwd::PendingTangents tangents = fwd::inplace_tangents(
      self, {operand}, [&](const auto& t) { return write_tangent(w, self, t[0], t[1]); });
  const Tensor values = kernel_values(w, self);
  const std::vector<Tensor> list = dim_indices(w.dim, w.index);
  const bool accumulate = w.kind == Kind::kAdd;
  native::AdvancedIndex adv =
      native::prepare_index_put(self, list, values, accumulate, negative_wraps(w.kind));
  std::shared_ptr<Node> node = requires_grad ? make_write_node(w, self) : nullptr;
  const PendingBump bump(self.version_counter(), site, self.unsafe_impl());  // checks passed
  native::index_put_validated(self, adv, values, accumulate, &bump);
  if (node) rebase_history(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}

// Out of place: a copy written below autograd (version 0, as PyTorch), with the same node.
Tensor write_copy(const DimWrite& w, const Tensor& self) {
  Tensor result = native::clone(native::detach(self));
  const Tensor values = kernel_values(w, result);
  const std::vector<Tensor> list = dim_indices(w.dim, w.index);
  const bool accumulate = w.kind == Kind::kAdd;
  native::AdvancedIndex adv =
      native::prepare_index_put(result, list, values, accumulate, negative_wraps(w.kind));
  native::index_put_validated(result, adv, values, accumulate);
  const Tensor& operand = w.kind == Kind::kFill ? w.value_tensor : w.source;
  fwd::propagate(w.op, result, {self, operand},
                 [&](const auto& t) { return write_tangent(w, self, t[0], t[1]); });
  const bool requires_grad = w.kind == Kind::kFill
                                 ? compute_requires_grad_has_jvp(self, w.value_tensor)
                                 : compute_requires_grad_has_jvp(self, w.source);
  if (requires_grad && self.is_floating_point()) set_history(result, make_write_node(w, self));
  return result;
}

}  // namespace

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  const int64_t d = wrap_dim_of(op, self, dim);
  const Tensor idx = vector_index(op, self, index);
  Tensor result = native::index(self, dim_indices(d, idx),
                                native::negative_index_wraps(native::IndexedOp::kIndexSelect));
  // IndexSelectBackward0's tangent: the same rows of the tangent (linear).
  fwd::propagate(op, result, {self}, [&](const auto& t) { return t[0].index_select(dim, idx); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<IndexSelectBackward0>(self);
    node->index_ = SavedVariable(idx, /*is_output=*/false);
    node->self_sizes_ = DimVector(self.sizes());
    node->dim_ = d;
    set_history(result, node);
  }
  return result;
}

void index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                const Scalar& alpha, const MutationSite& site) {
  write_in_place(validate(site.op, Kind::kAdd, self, dim, index, source, 0, alpha), self, site);
}

void index_copy_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const MutationSite& site) {
  write_in_place(validate(site.op, Kind::kCopy, self, dim, index, source, 0, 1), self, site);
}

void index_fill_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                 const MutationSite& site) {
  write_in_place(validate(site.op, Kind::kFill, self, dim, index, Tensor(), value, 1), self, site);
}

void index_fill_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value,
                 const MutationSite& site) {
  write_in_place(validate_fill_tensor(site.op, self, dim, index, value), self, site);
}

}  // namespace autograd

namespace {
MutationSite site_of(const char* op, CallSite site) {
  return MutationSite{op, site.file, site.line};
}
}  // namespace

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return autograd::index_select(*this, dim, index);
}

Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                           const Scalar& alpha, CallSite site) {
  autograd::capture::OpScope cap("index_add", autograd::capture::OpKind::kInPlace);
  autograd::index_add_(*this, dim, index, source, alpha, site_of("index_add_", site));
  cap.done(*this, [&] { return autograd::capture::Args{*this, dim, index, source, alpha}; });
  return *this;
}

Tensor& Tensor::index_copy_(int64_t dim, const Tensor& index, const Tensor& source, CallSite site) {
  autograd::capture::OpScope cap("index_copy", autograd::capture::OpKind::kInPlace);
  autograd::index_copy_(*this, dim, index, source, site_of("index_copy_", site));
  cap.done(*this, [&] { return autograd::capture::Args{*this, dim, index, source}; });
  return *this;
}

Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Scalar& value, CallSite site) {
  autograd::capture::OpScope cap("index_fill", autograd::capture::OpKind::kInPlace);
  autograd::index_fill_(*this, dim, index, value, site_of("index_fill_", site));
  cap.done(*this, [&] { return autograd::capture::Args{*this, dim, index, value}; });
  return *this;
}

Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) const {
  autograd::capture::OpScope cap("index_add", autograd::capture::OpKind::kFunctional);
  return cap.done(autograd::write_copy(autograd::validate("index_add", autograd::Kind::kAdd, *this,
                                                          dim, index, source, 0, alpha),
                                       *this),
                  [&] {
                    return autograd::capture::Args{*this, dim, index, source, alpha};
                  });
}

Tensor Tensor::index_copy(int64_t dim, const Tensor& index, const Tensor& source) const {
  autograd::capture::OpScope cap("index_copy", autograd::capture::OpKind::kFunctional);
  return cap.done(autograd::write_copy(autograd::validate("index_copy", autograd::Kind::kCopy,
                                                          *this, dim, index, source, 0, 1),
                                       *this),
                  [&] {
                    return autograd::capture::Args{*this, dim, index, source};
                  });
}

Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Tensor& value, CallSite site) {
  autograd::capture::OpScope cap("index_fill", autograd::capture::OpKind::kInPlace);
  autograd::index_fill_(*this, dim, index, value, site_of("index_fill_", site));
  cap.done(*this, [&] { return autograd::capture::Args{*this, dim, index, value}; });
  return *this;
}

Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Tensor& value) const {
  autograd::capture::OpScope cap("index_fill", autograd::capture::OpKind::kFunctional);
  return cap.done(
      autograd::write_copy(autograd::validate_fill_tensor("index_fill", *this, dim, index, value),
                           *this),
      [&] {
        return autograd::capture::Args{*this, dim, index, value};
      });
}

Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Scalar& value) const {
  autograd::capture::OpScope cap("index_fill", autograd::capture::OpKind::kFunctional);
  return cap.done(autograd::write_copy(autograd::validate("index_fill", autograd::Kind::kFill,
                                                          *this, dim, index, Tensor(), value, 1),
                                       *this),
                  [&] {
                    return autograd::capture::Args{*this, dim, index, value};
                  });
}

}  // namespace mutagrad
