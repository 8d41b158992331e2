// trace, repeat_interleave, meshgrid, kron, cross, cdist and fill_diagonal_. See composite_ops.h.
// trace, cross and cdist compute their forward under no_grad from differentiable ops and record
// their own node; the others are compositions whose last op is torch's.
#include "autograd/ops/composite_ops.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/index_family_ops.h"
#include "autograd/ops/inplace_ops.h"
#include "autograd/ops/linalg_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/shape_ops.h"
#include "autograd/ops/unary_ops.h"
#include "autograd/ops/view_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {

// The gradient of trace is grad on the diagonal: eye * grad (differentiable in grad).
class TraceBackward0 final : public Node {
 public:
  const char* name() const override { return "TraceBackward0"; }
  VariableList apply(VariableList&& grads) override {
    const Tensor& grad = grads[0];
    return {eye(self_sizes_[0], self_sizes_[1], TensorOptions(grad.dtype()).device(grad.device())) *
            grad};
  }
  DimVector self_sizes_;
};

// c = a x b: da = b x g, db = g x a (in the broadcast shape; the engine sums each back).
class LinalgCrossBackward0 final : public Node {
 public:
  const char* name() const override { return "LinalgCrossBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = linalg_cross(other_.unpack(this), grads[0], dim_);
    if (should_compute_output(1)) out[1] = linalg_cross(grads[0], self_.unpack(this), dim_);
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("other", other_);
  }
  SavedVariable self_, other_;
  int64_t dim_ = -1;  // wrapped
};

// d dist[p, r] / d x1[p] = sign(diff) |diff|^(p-1) / dist^(p-1) with diff = x1[p] - x2[r]
// (zero where dist is zero); p = 1, 2 and inf in their simple forms, p = 0 has none.
class CdistBackward0 final : public Node {
 public:
  const char* name() const override { return "CdistBackward0"; }
  VariableList apply(VariableList&& grads) override {
    const Tensor x1 = x1_.unpack(this);
    const Tensor x2 = x2_.unpack(this);
    VariableList out(2);
    if (p_ == 0.0) {
      if (should_compute_output(0)) out[0] = zeros_like(x1);
      if (should_compute_output(1)) out[1] = zeros_like(x2);
      return out;
    }
    const Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);  // [..., P, R, M]
    const Tensor g = grads[0].unsqueeze(-1);
    const Tensor dist = result_.unpack(this).unsqueeze(-1);
    Tensor term;
    if (p_ == 1.0) {
      term = g * diff.sign();
    } else if (p_ == 2.0) {
      term = (g * diff / dist).masked_fill(native::binary(BinaryOp::kEq, dist, Scalar(0)), 0);
    } else if (std::isinf(p_)) {
      const Tensor not_max = native::binary(BinaryOp::kNe, native::unary(UnaryOp::kAbs, diff),
                                            native::expand(dist, diff.sizes()));
      term = (g * diff.sign()).masked_fill(not_max, 0);
    } else {
      const Tensor none = native::binary(
          BinaryOp::kLogicalOr, native::binary(BinaryOp::kEq, diff, Scalar(0)),
          native::expand(native::binary(BinaryOp::kEq, dist, Scalar(0)), diff.sizes()));
      term = (g * diff.sign() * diff.abs().pow(p_ - 1) / dist.pow(p_ - 1)).masked_fill(none, 0);
    }
    if (should_compute_output(0)) out[0] = term.sum({-2}, false);
    if (should_compute_output(1)) out[1] = term.sum({-3}, false).neg();
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("x1", x1_);
    v.visit("x2", x2_);
    v.visit("result", result_);
  }
  SavedVariable x1_, x2_, result_;
  double p_ = 2.0;
};

}  // namespace autograd

using autograd::compute_requires_grad;
using autograd::make_node;
using autograd::SavedVariable;
using autograd::set_history;

// ---- trace
// ---------------------------------------------------------------------------------------

Tensor trace(const Tensor& self) {
  if (self.dim() != 2) {
    throw ShapeError(str("trace: expected a matrix, but got tensor with dim ", self.dim(),
                         " (shape ", self.sizes(), "); use diagonal() and sum() on batches"));
  }
  if (self.dtype() == kBool) {
    throw DTypeError(
        "trace(): \"trace\" not implemented for 'Bool'; convert the tensor to an integer or "
        "floating dtype first");
  }
  Tensor result;
  {
    NoGradGuard no_grad;
    result = mutagrad::sum(self.diagonal());
  }
  // TraceBackward0's tangent: from the composite forward above (Note [Composite tangents]).
  if (autograd::compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::TraceBackward0>(self);
    node->self_sizes_ = DimVector(self.sizes());
    set_history(result, node);
  }
  return result;
}

// ---- repeat_interleave
// ---------------------------------------------------------------------------

namespace {

// The counts of `repeats` (integers, 0-D or 1-D) on the host, one per slice of `n` (a single
// count repeats every slice; n < 0: as many as given).
std::vector<int64_t> repeat_counts(const Tensor& repeats, int64_t n) {
  if (repeats.dim() > 1) {
    throw ShapeError(str("repeat_interleave(): repeats must be 0-dim or 1-dim tensor, got shape ",
                         repeats.sizes()));
  }
  if (repeats.is_floating_point() || repeats.dtype() == kBool) {
    throw DTypeError(str("repeat_interleave(): \"repeat_interleave\" not implemented for '",
                         legacy_type_name(repeats.dtype()),
                         "'; repeats must be an integer tensor (convert with .to(kInt64))"));
  }
  // The counts decide the result's size: read on the host (one device-to-host copy).
  const Tensor host = native::contiguous(native::to(repeats, kCPU, kInt64));
  std::vector<int64_t> counts(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
  if (n >= 0 && counts.size() == 1) counts.assign(static_cast<size_t>(n), counts[0]);
  if (n >= 0 && static_cast<int64_t>(counts.size()) != n) {
    throw ShapeError(str("repeats must have the same size as input along dim, but got ",
                         host.numel(), " repeats for a dim of size ", n));
  }
  for (int64_t c : counts) {
    if (c < 0) throw ValueError(str("repeat_interleave(): repeats can not be negative, got ", c));
  }
  return counts;
}

// 0, 1, ... each repeated counts[i] times, int64 on `device`.
Tensor repeated_positions(const std::vector<int64_t>& counts, std::optional<int64_t> output_size,
                          Device device) {
  std::vector<int64_t> index;
  for (size_t i = 0; i < counts.size(); ++i) index.insert(index.end(), counts[i], i);
  const int64_t total = static_cast<int64_t>(index.size());
  if (output_size && *output_size != total) {
    throw ShapeError(
        str("repeat_interleave(): allocated size does not match required size: "
            "output_size is ",
            *output_size, " but the repeats sum to ", total));
  }
  return native::to(from_vector(index, {total}), device);
}

Tensor repeat_interleave_impl(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                              std::optional<int64_t> output_size) {
  const Tensor input = dim ? self : self.reshape({-1});
  const int64_t d = dim ? wrap_dim(*dim, self.dim(), "repeat_interleave") : 0;
  const int64_t n = input.dim() == 0 ? 1 : input.size(d);
  const Tensor index = repeated_positions(repeat_counts(repeats, n), output_size, self.device());
  return (input.dim() == 0 ? input.reshape({1}) : input).index_select(d, index);
}

}  // namespace

Tensor repeat_interleave(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  return repeat_interleave_impl(self, repeats, dim, output_size);
}

Tensor repeat_interleave(const Tensor& self, int64_t repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  return repeat_interleave_impl(self, scalar_tensor(repeats, kInt64), dim, output_size);
}

Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  return repeated_positions(repeat_counts(repeats, -1), output_size, repeats.device());
}

// ---- meshgrid
// ------------------------------------------------------------------------------------

std::vector<Tensor> meshgrid(TensorList tensors, std::string_view indexing) {
  if (tensors.empty()) throw ValueError("meshgrid expects a non-empty TensorList");
  if (indexing != "ij" && indexing != "xy") {
    throw ValueError(
        str("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", indexing));
  }
  DimVector shape;
  for (const Tensor& t : tensors) {
    if (t.dim() > 1) {
      throw ShapeError(str("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a ",
                           t.dim(), "-D tensor of shape ", t.sizes()));
    }
    if (t.dtype() != tensors[0].dtype()) {
      throw DTypeError(str("meshgrid expects all tensors to have the same dtype, got ",
                           dtype_name(tensors[0].dtype()), " and ", dtype_name(t.dtype())));
    }
    check_same_device("meshgrid", tensors[0].device(), t.device());
    shape.push_back(t.numel());
  }
  // "xy": the first two inputs vary along dims 1 and 0.
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Tensor> grids;
  for (size_t i = 0; i < tensors.size(); ++i) {
    DimVector view(shape.size(), 1);
    const size_t along = swap && i < 2 ? 1 - i : i;
    view[along] = -1;
    grids.push_back(tensors[i].reshape(view).expand(shape));
  }
  return grids;
}

// ---- kron
// ----------------------------------------------------------------------------------------

Tensor kron(const Tensor& self, const Tensor& other) {
  const int64_t nd = std::max(self.dim(), other.dim());
  DimVector a_sizes, b_sizes, result_sizes;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t a = i < nd - self.dim() ? 1 : self.size(i - (nd - self.dim()));
    const int64_t b = i < nd - other.dim() ? 1 : other.size(i - (nd - other.dim()));
    a_sizes.push_back(a);
    a_sizes.push_back(1);
    b_sizes.push_back(1);
    b_sizes.push_back(b);
    result_sizes.push_back(a * b);
  }
  // [a0, 1, a1, 1, ...] * [1, b0, 1, b1, ...], then the pairs merged, as torch's _unsafe_view.
  const Tensor product = self.reshape(a_sizes) * other.reshape(b_sizes);
  return unsafe_view(product, result_sizes);
}

// ---- cross
// ---------------------------------------------------------------------------------------

namespace {

// a x b along dim d of the broadcast shape: a[i+1] b[i+2] - a[i+2] b[i+1] by rolling.
Tensor cross_values(const Tensor& a, const Tensor& b, int64_t d) {
  NoGradGuard no_grad;
  return a.roll({-1}, {d}) * b.roll({-2}, {d}) - a.roll({-2}, {d}) * b.roll({-1}, {d});
}

Tensor cross_impl(const Tensor& self, const Tensor& other, int64_t dim) {
  const DimVector shape = broadcast_shapes(self.sizes(), other.sizes(), "linalg.cross");
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(shape.size()), "linalg.cross");
  auto size_at = [&](const Tensor& t) {
    const int64_t k = d - (static_cast<int64_t>(shape.size()) - t.dim());
    return k < 0 ? 1 : t.size(k);
  };
  if (size_at(self) != 3 || size_at(other) != 3) {
    throw ShapeError(str("linalg.cross: inputs dimension ", dim, " must have length 3. Got ",
                         size_at(self), " and ", size_at(other)));
  }
  Tensor result = cross_values(self.expand(shape), other.expand(shape), d);
  // LinalgCrossBackward0's tangent: from the composite forward (Note [Composite tangents]).
  if (autograd::compute_requires_grad_has_jvp(self, other)) {
    auto node = make_node<autograd::LinalgCrossBackward0>(self, other);
    node->self_ = SavedVariable(self, false);
    node->other_ = SavedVariable(other, false);
    node->dim_ = d;
    set_history(result, node);
  }
  return result;
}

}  // namespace

Tensor linalg_cross(const Tensor& self, const Tensor& other, int64_t dim) {
  detail::check_same_dtype("linalg.cross", self, other);
  if (self.dim() != other.dim()) {
    throw ShapeError(str("linalg.cross: inputs must have the same number of dimensions, got ",
                         self.dim(), " and ", other.dim()));
  }
  return cross_impl(self, other, dim);
}

Tensor cross(const Tensor& self, const Tensor& other, std::optional<int64_t> dim) {
  if (dim) return linalg_cross(self, other, *dim);
  // torch.cross's default: the first dim of size 3 of self.
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (self.size(i) == 3) return linalg_cross(self, other, i);
  }
  throw ShapeError(
      str("cross(): no dimension of size 3 in input (shape ", self.sizes(), "); pass dim="));
}

// ---- cdist
// ---------------------------------------------------------------------------------------

Tensor cdist(const Tensor& x1, const Tensor& x2, double p) {
  for (const auto& [t, name] : {std::pair{&x1, "X1"}, std::pair{&x2, "X2"}}) {
    if (t->dim() < 2) {
      throw ShapeError(
          str("cdist only supports at least 2D tensors, ", name, " got: ", t->dim(), "D"));
    }
    if (!t->is_floating_point()) {
      throw DTypeError(str("cdist only supports floating-point dtypes, ", name,
                           " got: ", legacy_type_name(t->dtype())));
    }
  }
  detail::check_same_dtype("cdist", x1, x2);
  if (x1.size(-1) != x2.size(-1)) {
    throw ShapeError(str("X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
                         " X2: ", x2.size(-1)));
  }
  if (!(p >= 0)) throw ValueError(str("cdist only supports non-negative p values, got p = ", p));
  Tensor result;
  {
    NoGradGuard no_grad;
    const Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);  // [..., P, R, M]
    if (p == 0.0) {
      result = mutagrad::sum(native::to(native::binary(BinaryOp::kNe, diff, Scalar(0)), x1.dtype()),
                             {-1}, false);
    } else if (p == 1.0) {
      result = diff.abs().sum({-1}, false);
    } else if (p == 2.0) {
      result = (diff * diff).sum({-1}, false).sqrt();
    } else if (std::isinf(p)) {
      result = x1.size(-1) == 0 ? diff.sum({-1}, false) : amax(diff.abs(), {-1}, false);
    } else {
      result = diff.abs().pow(p).sum({-1}, false).pow(1.0 / p);
    }
  }
  // CdistBackward0's tangent: from the composite forward above (Note [Composite tangents]).
  if (autograd::compute_requires_grad_has_jvp(x1, x2)) {
    auto node = make_node<autograd::CdistBackward0>(x1, x2);
    node->x1_ = SavedVariable(x1, false);
    node->x2_ = SavedVariable(x2, false);
    node->p_ = p;
    set_history(result, node);
    node->result_ = SavedVariable(result, /*is_output=*/true);
  }
  return result;
}

// ---- fill_diagonal_
// ------------------------------------------------------------------------------

Tensor& Tensor::fill_diagonal_(const Scalar& value, bool wrap, CallSite site) {
  const MutationSite ms{"fill_diagonal_", site.file, site.line};
  // Composite: the fill_/masked_fill_ below write the tangent's diagonal too (a zero: the value
  // is a number), through a view of it (Note [Composite tangents]).
  autograd::check_inplace(*this, autograd::compute_requires_grad_has_jvp(*this));
  if (dim() < 2) {
    throw ShapeError(str("fill_diagonal_(): dimensions must larger than 1, got a ", dim(),
                         "-D tensor; fill a 2-D or larger tensor"));
  }
  for (int64_t i = 1; i < dim() && dim() > 2; ++i) {
    if (size(i) != size(0)) {
      throw ShapeError(
          str("fill_diagonal_(): all dimensions of input must be of equal length, "
              "got shape ",
              sizes()));
    }
  }
  const int64_t height = size(0), width = size(1);
  int64_t diag_stride = 0;
  for (int64_t i = 0; i < dim(); ++i) diag_stride += stride(i);
  if (wrap && dim() == 2 && height > width + 1) {
    // The diagonal restarts every width + 1 rows: flat positions k (width + 1), as torch.
    const int64_t step = width + 1;
    const int64_t count = (numel() + step - 1) / step;
    if (stride(0) == width * stride(1)) {  // rows packed: those positions are one stride apart
      autograd::fill_(mutagrad::as_strided(*this, {count}, {step * stride(1)}, storage_offset()),
                      value, ms);
      return *this;
    }
    // Other layouts: one masked write of those positions (MaskedFillBackward0).
    std::vector<uint8_t> mask(static_cast<size_t>(numel()), 0);
    for (int64_t k = 0; k < count; ++k) mask[static_cast<size_t>(k * step)] = 1;
    const Tensor m = native::to(native::to(from_vector(mask, {height, width}), kBool), device());
    autograd::masked_fill_(*this, m, value, ms);
    return *this;
  }
  const int64_t n = std::min(height, width);
  autograd::fill_(mutagrad::as_strided(*this, {n}, {diag_stride}, storage_offset()), value, ms);
  return *this;
}

// ---- Tensor members ----------------------------------------------------------------------------
Tensor Tensor::trace() const { return mutagrad::trace(*this); }
Tensor Tensor::repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim,
                                 std::optional<int64_t> output_size) const {
  return mutagrad::repeat_interleave(*this, repeats, dim, output_size);
}
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim,
                                 std::optional<int64_t> output_size) const {
  return mutagrad::repeat_interleave(*this, repeats, dim, output_size);
}
Tensor Tensor::kron(const Tensor& other) const { return mutagrad::kron(*this, other); }
Tensor Tensor::cross(const Tensor& other, std::optional<int64_t> dim) const {
  return mutagrad::cross(*this, other, dim);
}

}  // namespace mutagrad
