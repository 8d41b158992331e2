// flip, roll, repeat/tile, tril/triu (and tril_/triu_), diag, diag_embed: each forward made of
// raw copies (mutagrad::native, so every device runs it) and its backward node. See shape_ops.h.
#include "autograd/ops/shape_ops.h"

#include <cstdlib>
#include <limits>
#include <utility>
#include <vector>

#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/view_ops.h"
#include "tensor/native/copy.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {

class FlipBackward0 final : public Node {
 public:
  const char* name() const override { return "FlipBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].flip(dims_)}; }
  DimVector dims_;
};

class RollBackward0 final : public Node {
 public:
  const char* name() const override { return "RollBackward0"; }
  VariableList apply(VariableList&& grads) override {
    DimVector back;
    for (int64_t s : shifts_) back.push_back(-s);
    return {grads[0].roll(back, dims_)};
  }
  DimVector shifts_, dims_;
};

// The gradient of each element of self is the sum over its copies: the gradient viewed as
// [r0, s0, r1, s1, ...] summed over the r dims.
class RepeatBackward0 final : public Node {
 public:
  const char* name() const override { return "RepeatBackward0"; }
  VariableList apply(VariableList&& grads) override {
    const size_t lead = repeats_.size() - self_sizes_.size();
    if (repeats_.empty()) return {grads[0]};
    DimVector split, summed;
    for (size_t i = 0; i < repeats_.size(); ++i) {
      summed.push_back(static_cast<int64_t>(split.size()));
      split.push_back(repeats_[i]);
      split.push_back(i < lead ? 1 : self_sizes_[i - lead]);
    }
    return {grads[0].reshape(split).sum(summed, false).reshape(self_sizes_)};
  }
  DimVector self_sizes_, repeats_;
};

// tril (TrilBackward0) and triu (TriuBackward0): the gradient keeps the same triangle.
class TriangleBackward final : public Node {
 public:
  explicit TriangleBackward(bool lower) : lower_(lower) {}
  const char* name() const override { return lower_ ? "TrilBackward0" : "TriuBackward0"; }
  VariableList apply(VariableList&& grads) override {
    return {lower_ ? grads[0].tril(diagonal_) : grads[0].triu(diagonal_)};
  }
  int64_t diagonal_ = 0;

 private:
  bool lower_;
};

class DiagBackward0 final : public Node {
 public:
  const char* name() const override { return "DiagBackward0"; }
  VariableList apply(VariableList&& grads) override {
    const Tensor& grad = grads[0];
    if (self_sizes_.size() == 1) return {grad.diagonal(diagonal_)};
    // 2-D self: the gradient of its diagonal, written into zeros of self's shape.
    const int64_t cols = self_sizes_[1];
    Tensor zero = zeros(self_sizes_, TensorOptions(grad.dtype()).device(grad.device()));
    if (grad.numel() == 0) return {zero};
    const int64_t offset = diagonal_ >= 0 ? diagonal_ : -diagonal_ * cols;
    return {as_strided_scatter(zero, grad, {grad.size(0)}, {cols + 1}, offset)};
  }
  DimVector self_sizes_;
  int64_t diagonal_ = 0;
};

class DiagEmbedBackward0 final : public Node {
 public:
  const char* name() const override { return "DiagEmbedBackward0"; }
  VariableList apply(VariableList&& grads) override {
    return {grads[0].diagonal(offset_, dim1_, dim2_)};
  }
  int64_t offset_ = 0, dim1_ = 0, dim2_ = 1;
};

}  // namespace autograd

using autograd::compute_requires_grad_has_jvp;
using autograd::make_node;
using autograd::set_history;

namespace {

TensorOptions options_of(const Tensor& t) { return TensorOptions(t.dtype()).device(t.device()); }

// self reversed along each of `dims` (wrapped, distinct): a gather per dim.
Tensor flip_raw(const Tensor& self, IntArrayRef dims) {
  Tensor out = self;
  for (int64_t d : dims) {
    const int64_t n = out.size(d);
    if (n <= 1) continue;
    std::vector<Tensor> index(static_cast<size_t>(d));
    index.push_back(arange(n - 1, -1, -1, kInt64, self.device()));
    out = native::index(out, index);
  }
  return out.is_same(self) ? native::clone(self) : out;
}

// self rolled by shifts[i] along dims[i] (wrapped): two copies per dim.
Tensor roll_raw(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  Tensor src = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    const int64_t n = src.size(d);
    const int64_t s = n == 0 ? 0 : ((shifts[i] % n) + n) % n;
    Tensor out = empty(src.sizes(), options_of(src));
    if (s == 0) {
      native::copy_(out, src);
    } else {
      native::copy_(native::narrow(out, d, s, n - s), native::narrow(src, d, 0, n - s));
      native::copy_(native::narrow(out, d, 0, s), native::narrow(src, d, n - s, s));
    }
    src = out;
  }
  return dims.empty() ? native::clone(self) : src;
}

// Where tril (lower) / triu zeroes the last two dims of `self`: a bool [rows, cols] mask.
Tensor zeroed_triangle(const Tensor& self, int64_t diagonal, bool lower) {
  const int64_t rows = self.size(-2), cols = self.size(-1);
  Tensor r = native::view(arange(rows, kInt64, self.device()), {rows, 1});
  Tensor c = native::view(arange(cols, kInt64, self.device()), {1, cols});
  Tensor offset = native::binary(BinaryOp::kSub, c, r);  // column - row
  return native::binary(lower ? BinaryOp::kGt : BinaryOp::kLt, offset, Scalar(diagonal));
}

// torch checks the dims only of a non-empty tensor (tril of an empty 1-D tensor is a copy).
void check_matrix_dims(const Tensor& self, const char* op) {
  if (self.dim() < 2 && self.numel() > 0) {
    throw IndexError(
        str(op, "(): dimension out of range (expected to be in range of [",
            -std::max<int64_t>(self.dim(), 1), ", ", std::max<int64_t>(self.dim(), 1) - 1,
            "], but got -2): the tensor needs at least 2 dims, its shape is ", self.sizes()));
  }
}

std::shared_ptr<autograd::TriangleBackward> triangle_node(const Tensor& self, int64_t diagonal,
                                                          bool lower) {
  auto node = make_pooled<autograd::TriangleBackward>(lower);
  node->set_next_edges(autograd::collect_next_edges(self));
  node->diagonal_ = diagonal;
  return node;
}

Tensor triangle(const Tensor& self, int64_t diagonal, bool lower) {
  check_matrix_dims(self, lower ? "tril" : "triu");
  Tensor result = native::clone(self);
  if (self.dim() >= 2) {
    native::masked_fill_(result, zeroed_triangle(self, diagonal, lower), Scalar(0));
  }
  // The triangle node's tangent: the same triangle of the tangent (linear).
  autograd::fwd::propagate(lower ? "tril" : "triu", result, {self},
                           [&](const auto& t) { return triangle(t[0], diagonal, lower); });
  if (compute_requires_grad_has_jvp(self)) {
    set_history(result, triangle_node(self, diagonal, lower));
  }
  return result;
}

void triangle_(const Tensor& self, int64_t diagonal, bool lower, const MutationSite& site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self);
  autograd::check_inplace(self, requires_grad);
  check_matrix_dims(self, site.op);
  native::assert_no_internal_overlap(self, site.op);
  // The triangle node's tangent: the same triangle of the tangent, written in place.
  autograd::fwd::PendingTangents tangents = autograd::fwd::inplace_tangents(
      self, {}, [&](const auto& t) { return triangle(t[0], diagonal, lower); });
  std::shared_ptr<autograd::Node> node =
      requires_grad ? triangle_node(self, diagonal, lower) : nullptr;
  if (self.dim() >= 2) {
    native::masked_fill_(self, zeroed_triangle(self, diagonal, lower), Scalar(0),
                         &site);  // checks, bumps once, writes
  } else {
    autograd::bump_version(self, site.op, CallSite{site.file, site.line});  // empty: no write
  }
  if (node) autograd::rebase_history(self, node);
  autograd::fwd::write_tangents(self, std::move(tangents), site.op);
}

// The side of the square that holds a vector of `size` elements on diagonal `offset` (diag,
// diag_embed): size + |offset|, or a ShapeError naming `op` when it exceeds int64 (Note [Size
// overflow] in tensor/shape.h). |INT64_MIN| itself does not fit either.
int64_t diagonal_square_side(const char* op, int64_t size, int64_t offset) {
  int64_t side = 0;
  if (offset == std::numeric_limits<int64_t>::min() ||
      __builtin_add_overflow(size, offset < 0 ? -offset : offset, &side)) {
    throw ShapeError(str(op, "(): a vector of ", size, " elements on diagonal offset ", offset,
                         " needs a square of side ", size, " + |", offset,
                         "|, more than int64 can count; use an offset of magnitude at most ",
                         std::numeric_limits<int64_t>::max() - size));
  }
  return side;
}

}  // namespace

Tensor flip(const Tensor& self, IntArrayRef dims) {
  DimVector wrapped;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, self.dim(), "flip");
    for (int64_t seen : wrapped) {
      if (seen == w) {
        throw ValueError(str("flip(): dim ", w, " appears multiple times in the list of dims ",
                             dims, "; name each dim once"));
      }
    }
    wrapped.push_back(w);
  }
  if (self.dim() == 0) wrapped.clear();
  Tensor result = flip_raw(self, wrapped);
  // FlipBackward0's tangent: the flipped tangent (linear).
  autograd::fwd::propagate("flip", result, {self}, [&](const auto& t) { return flip(t[0], dims); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::FlipBackward0>(self);
    node->dims_ = wrapped;
    set_history(result, node);
  }
  return result;
}

Tensor fliplr(const Tensor& self) {
  if (self.dim() < 2) {
    throw ShapeError(str("fliplr(): Input must be >= 2-d, got shape ", self.sizes()));
  }
  return flip(self, {1});
}

Tensor flipud(const Tensor& self) {
  if (self.dim() < 1) throw ShapeError("flipud(): Input must be >= 1-d, got a 0-dim tensor");
  return flip(self, {0});
}

Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  if (shifts.empty()) throw ValueError("roll(): `shifts` required (one or more shifts)");
  if (dims.empty() ? shifts.size() != 1 : shifts.size() != dims.size()) {
    throw ValueError(str("roll(): shifts and dimensions must align. shifts: ", shifts.size(),
                         ", dims:", dims.size(), "; give one shift per dim"));
  }
  DimVector wrapped;
  for (int64_t d : dims) {
    if (self.dim() == 0) {
      throw IndexError(str("roll(): Dimension specified as ", d,
                           " but tensor has no dimensions; roll a 0-dim tensor without dims"));
    }
    wrapped.push_back(wrap_dim(d, self.dim(), "roll"));
  }
  Tensor result;
  if (wrapped.empty()) {
    // Along the flattened tensor, then back to self's shape.
    Tensor flat = native::reshape(self, {self.numel()});
    result = native::view(roll_raw(flat, shifts, {0}), self.sizes());
  } else {
    result = roll_raw(self, shifts, wrapped);
  }
  // RollBackward0's tangent: the rolled tangent (linear).
  autograd::fwd::propagate("roll", result, {self},
                           [&](const auto& t) { return roll(t[0], shifts, dims); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::RollBackward0>(self);
    node->shifts_ = DimVector(shifts);
    node->dims_ = wrapped;
    set_history(result, node);
  }
  return result;
}

Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  const int64_t ndim = static_cast<int64_t>(repeats.size());
  if (ndim < self.dim()) {
    throw ShapeError(str("repeat(): Number of dimensions of repeat dims (", ndim,
                         ") can not be smaller than number of dimensions of tensor (", self.dim(),
                         "); give one repeat count per dim"));
  }
  const int64_t lead = ndim - self.dim();
  DimVector padded(static_cast<size_t>(lead), 1);
  for (int64_t s : self.sizes()) padded.push_back(s);
  DimVector target, split;
  for (int64_t i = 0; i < ndim; ++i) {
    int64_t size = 0;
    if (__builtin_mul_overflow(repeats[i], padded[i], &size)) {
      throw ShapeError(str("repeat(): repeating sizes ", self.sizes(), " by ", repeats,
                           " gives a size int64 cannot hold at dim ", i));
    }
    target.push_back(size);
    split.push_back(repeats[i]);
    split.push_back(padded[i]);
  }
  for (int64_t s : target) {
    if (s < 0) {
      throw ValueError(str("repeat(): Trying to create tensor with negative dimension ", s, ": ",
                           IntArrayRef(target), "; repeat counts must be non-negative"));
    }
  }
  Tensor result = empty(target, options_of(self));
  if (result.numel() > 0) {
    DimVector source_shape;
    for (int64_t s : padded) {
      source_shape.push_back(1);
      source_shape.push_back(s);
    }
    native::copy_(native::view(result, split), native::reshape(self, source_shape));
  }
  // RepeatBackward0's tangent: the repeated tangent (linear).
  autograd::fwd::propagate("repeat", result, {self},
                           [&](const auto& t) { return repeat(t[0], repeats); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::RepeatBackward0>(self);
    node->self_sizes_ = DimVector(self.sizes());
    node->repeats_ = DimVector(repeats);
    set_history(result, node);
  }
  return result;
}

Tensor tile(const Tensor& self, IntArrayRef dims) {
  const int64_t missing = self.dim() - static_cast<int64_t>(dims.size());
  if (missing <= 0) return repeat(self, dims);
  DimVector padded(static_cast<size_t>(missing), 1);
  for (int64_t d : dims) padded.push_back(d);
  return repeat(self, padded);
}

Tensor tril(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, true); }
Tensor triu(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, false); }

Tensor diag(const Tensor& self, int64_t diagonal) {
  Tensor result;
  if (self.dim() == 1) {
    const int64_t n = diagonal_square_side("diag", self.size(0), diagonal);
    result = zeros({n, n}, options_of(self));
    native::copy_(native::diagonal(result, diagonal, 0, 1), self);
  } else if (self.dim() == 2) {
    if (diagonal > self.size(1) || diagonal < -self.size(0)) {
      throw ShapeError(str("diag(): diagonal ", diagonal, " is outside a matrix of shape ",
                           self.sizes(),
                           " (torch: \"numel: integer multiplication overflow\"); "
                           "expected a diagonal in [",
                           -self.size(0), ", ", self.size(1), "]"));
    }
    result = native::clone(native::diagonal(self, diagonal, 0, 1));
  } else {
    throw ShapeError(str("diag(): matrix or a vector expected, got a ", self.dim(),
                         "-D tensor; use diagonal() or diag_embed() for batches"));
  }
  // DiagBackward0's tangent: diag of the tangent (linear).
  autograd::fwd::propagate("diag", result, {self},
                           [&](const auto& t) { return diag(t[0], diagonal); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::DiagBackward0>(self);
    node->self_sizes_ = DimVector(self.sizes());
    node->diagonal_ = diagonal;
    set_history(result, node);
  }
  return result;
}

Tensor diag_embed(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t ndim = self.dim() + 1;
  const int64_t d1 = wrap_dim(dim1, ndim, "diag_embed");
  const int64_t d2 = wrap_dim(dim2, ndim, "diag_embed");
  if (d1 == d2) {
    throw ValueError(str("diag_embed(): diagonal dimensions cannot be identical ", dim1, ", ", dim2,
                         "; pick two different dims of the result"));
  }
  const int64_t n = diagonal_square_side("diag_embed", self.size(-1), offset);
  DimVector shape;
  int64_t next = 0;
  for (int64_t p = 0; p < ndim; ++p) shape.push_back(p == d1 || p == d2 ? n : self.size(next++));
  Tensor result = zeros(shape, options_of(self));
  native::copy_(native::diagonal(result, offset, d1, d2), self);
  // DiagEmbedBackward0's tangent: diag_embed of the tangent (linear).
  autograd::fwd::propagate("diag_embed", result, {self},
                           [&](const auto& t) { return diag_embed(t[0], offset, dim1, dim2); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::DiagEmbedBackward0>(self);
    node->offset_ = offset;
    node->dim1_ = d1;
    node->dim2_ = d2;
    set_history(result, node);
  }
  return result;
}

// ---- Tensor members ----------------------------------------------------------------------------
Tensor Tensor::flip(IntArrayRef dims) const { return mutagrad::flip(*this, dims); }
Tensor Tensor::fliplr() const { return mutagrad::fliplr(*this); }
Tensor Tensor::flipud() const { return mutagrad::flipud(*this); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const {
  return mutagrad::roll(*this, shifts, dims);
}
Tensor Tensor::repeat(IntArrayRef repeats) const { return mutagrad::repeat(*this, repeats); }
Tensor Tensor::tile(IntArrayRef dims) const { return mutagrad::tile(*this, dims); }
Tensor Tensor::tril(int64_t diagonal) const { return mutagrad::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return mutagrad::triu(*this, diagonal); }
Tensor Tensor::diag(int64_t diagonal) const { return mutagrad::diag(*this, diagonal); }
Tensor Tensor::diag_embed(int64_t offset, int64_t dim1, int64_t dim2) const {
  return mutagrad::diag_embed(*this, offset, dim1, dim2);
}
Tensor& Tensor::tril_(int64_t diagonal, CallSite site) {
  triangle_(*this, diagonal, true, MutationSite{"tril_", site.file, site.line});
  return *this;
}
Tensor& Tensor::triu_(int64_t diagonal, CallSite site) {
  triangle_(*this, diagonal, false, MutationSite{"triu_", site.file, site.line});
  return *this;
}

}  // namespace mutagrad
