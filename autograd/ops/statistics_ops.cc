// cumsum, cumprod, all, any, count_nonzero, var, std, norm, logsumexp: see statistics_ops.h.
// Each backward formula is written with differentiable ops (derivatives.yaml's), so double
// backward works.
#include "autograd/ops/statistics_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/reduce_util.h"
#include "autograd/ops/unary_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"

namespace mutagrad {
namespace autograd {
namespace {

// t reversed along `dim` (differentiable: an index_select).
Tensor flip_dim(const Tensor& t, int64_t dim) {
  const int64_t n = t.size(dim);
  return t.index_select(dim, arange(n - 1, -1, -1, kInt64, t.device()));
}

// sum_{j >= i} t_j along `dim`.
Tensor reversed_cumsum(const Tensor& t, int64_t dim) {
  return flip_dim(mutagrad::cumsum(flip_dim(t, dim), dim), dim);
}

void check_floating(const char* op, const Tensor& self, const char* what) {
  if (!self.is_floating_point()) {
    throw DTypeError(str(op, "(): ", what, " only support floating point dtypes, got ",
                         dtype_name(self.dtype()), "; convert with .to(kFloat64)"));
  }
}

class CumsumBackward0 final : public Node {
 public:
  const char* name() const override { return "CumsumBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor g = grads[0].dtype() == self_dtype_ ? grads[0] : grads[0].to(self_dtype_);
    if (g.dim() == 0 || g.numel() <= 1) return {g};
    return {reversed_cumsum(g, dim_)};
  }
  // Tangent: cumsum of the tangent (linear).
  static Tensor jvp(const Tensor& t, int64_t dim) {
    return t.dim() == 0 ? t : mutagrad::cumsum(t, dim);
  }
  int64_t dim_ = 0;
  ScalarType self_dtype_ = kFloat32;
};

// PyTorch's cumprod_backward: before the first zero of a line, reversed_cumsum(grad * out) /
// x; at the first zero, the same sum with that zero taken as 1 in the product; after it, 0.
class CumprodBackward0 final : public Node {
 public:
  const char* name() const override { return "CumprodBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor self = self_.unpack(this);
    const Tensor result = result_.unpack(this);
    const Tensor grad = grads[0].dtype() == self.dtype() ? grads[0] : grads[0].to(self.dtype());
    if (self.dim() == 0 || self.numel() <= 1) return {grad};
    const Tensor is_zero = self.eq(zeros_like(self));
    const Tensor zeros_so_far = mutagrad::cumsum(is_zero, dim_);
    const Tensor before = zeros_so_far.eq(zeros_like(zeros_so_far));
    const Tensor first = is_zero.logical_and(zeros_so_far.eq(ones_like(zeros_so_far)));
    const Tensor safe_self = where(before, self, 1.0);
    const Tensor g_before = reversed_cumsum(grad * result, dim_) / safe_self;
    const Tensor with_one = where(first, 1.0, self);
    const Tensor g_first = reversed_cumsum(grad * mutagrad::cumprod(with_one, dim_), dim_);
    return {where(before, g_before, where(first, g_first, 0.0))};
  }
  // Tangent: Σ_{j<=i} t_j Π_{k<=i, k!=j} x_k. Before a line's first zero that is
  // result · cumsum(t / x); from the first zero z up to the second, only j = z remains:
  // t_z · cumprod(x with x_z = 1); after the second zero, 0.
  static Tensor jvp(const Tensor& self, const Tensor& result, int64_t dim, const Tensor& t) {
    if (self.dim() == 0 || self.numel() <= 1) return t;
    const Tensor is_zero = self.eq(zeros_like(self));
    const Tensor zeros_so_far = mutagrad::cumsum(is_zero, dim);
    const Tensor before = zeros_so_far.eq(zeros_like(zeros_so_far));
    const Tensor one_zero = zeros_so_far.eq(ones_like(zeros_so_far));
    const Tensor first = is_zero.logical_and(one_zero);
    const Tensor t_before = result * mutagrad::cumsum(t / where(before, self, 1.0), dim);
    const Tensor t_first = mutagrad::cumsum(where(first, t, 0.0), dim) *
                           mutagrad::cumprod(where(first, 1.0, self), dim);
    return where(before, t_before, where(one_zero, t_first, 0.0));
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("result", result_);
  }
  int64_t dim_ = 0;
  SavedVariable self_, result_;
};

// var (VarBackward0) and std (StdBackward0): d var = 2 (x - mean) / (N - correction).
class VarianceBackward final : public Node {
 public:
  explicit VarianceBackward(bool is_std) : is_std_(is_std) {}
  const char* name() const override { return is_std_ ? "StdBackward0" : "VarBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor self = self_.unpack(this);
    const int64_t nd = self.dim();
    Tensor g = keepdim_form(grads[0], dims_, nd, keepdim_);
    if (divisor_ == 0 && !is_std_ && all_dims_) {
      // No degrees of freedom over every dim: PyTorch 1.13 gives grad * inf everywhere (and
      // over given dims its general formula, inf * 0 = nan).
      return {g * std::numeric_limits<double>::infinity() + zeros_like(self)};
    }
    if (is_std_) g = g / (keepdim_form(result_.unpack(this), dims_, nd, keepdim_) * 2);
    const Tensor centered = self - mutagrad::mean(self, dims_, /*keepdim=*/true);
    return {g * centered * (2.0 / divisor_)};
  }
  // Tangent: Σ 2 (x - mean) t / divisor over the dims; for std, that over 2 std.
  static Tensor jvp(bool is_std, const Tensor& self, const Tensor& result, IntArrayRef dims,
                    bool keepdim, double divisor, const Tensor& t) {
    const Tensor centered = self - mutagrad::mean(self, dims, /*keepdim=*/true);
    const Tensor dvar = mutagrad::sum(centered * t, dims, keepdim) * (2.0 / divisor);
    return is_std ? dvar / (result * 2) : dvar;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    if (is_std_) v.visit("result", result_);
  }
  DimVector dims_;
  bool keepdim_ = false;
  bool all_dims_ = false;  // no dims given (or a 0-dim self)
  double divisor_ = 1;
  SavedVariable self_, result_;

 private:
  bool is_std_;
};

// PyTorch's norm_backward for NormBackward1; grad and norm in keepdim form.
class NormBackward1 final : public Node {
 public:
  const char* name() const override { return "NormBackward1"; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor self = self_.unpack(this);
    const int64_t nd = self.dim();
    return {vjp(self, keepdim_form(grads[0], dims_, nd, keepdim_),
                keepdim_form(result_.unpack(this), dims_, nd, keepdim_), p_, dims_)};
  }
  // Tangent: Σ over the dims of (d norm / d x) · t, the partials being vjp with grad 1.
  static Tensor jvp(const Tensor& self, const Tensor& result, double p, IntArrayRef dims,
                    bool keepdim, const Tensor& t) {
    const Tensor norm = keepdim_form(result, dims, self.dim(), keepdim);
    return mutagrad::sum(vjp(self, ones_like(norm), norm, p, dims) * t, dims, keepdim);
  }
  // grad and norm in keepdim form.
  static Tensor vjp(const Tensor& self, const Tensor& grad, const Tensor& norm, double p_,
                    IntArrayRef dims_) {
    const Tensor norm_zero = norm.eq(zeros_like(norm));
    if (p_ == 0.0) return zeros_like(self);
    if (p_ == 1.0) return self.sign() * grad;
    if (p_ == 2.0) return self * (grad / norm).masked_fill(norm_zero, 0);
    if (std::isinf(p_)) {
      // The gradient is shared evenly between the elements whose |x| is the norm.
      const Tensor hit = native::to(self.abs().eq(norm), self.dtype());
      const Tensor count = mutagrad::sum(hit, dims_, /*keepdim=*/true);
      return self.sign() * (grad / count) * hit;
    }
    const Tensor scaled = (grad / norm.pow(p_ - 1)).masked_fill(norm_zero, 0);
    if (p_ < 2.0) {
      const Tensor self_zero = self.eq(zeros_like(self));
      return (self.sign() * self.abs().pow(p_ - 1) * scaled).masked_fill(self_zero, 0);
    }
    return self * self.abs().pow(p_ - 2) * scaled;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("result", result_);
  }
  double p_ = 2;
  DimVector dims_;
  bool keepdim_ = false;
  SavedVariable self_, result_;
};

class LogsumexpBackward0 final : public Node {
 public:
  const char* name() const override { return "LogsumexpBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor self = self_.unpack(this);
    const int64_t nd = self.dim();
    const Tensor g = keepdim_form(grads[0], dims_, nd, keepdim_);
    const Tensor r = keepdim_form(result_.unpack(this), dims_, nd, keepdim_);
    return {g * (self - r).exp()};
  }
  // Tangent: Σ softmax(x) t over the dims.
  static Tensor jvp(const Tensor& self, const Tensor& result, IntArrayRef dims, bool keepdim,
                    const Tensor& t) {
    const Tensor r = keepdim_form(result, dims, self.dim(), keepdim);
    return mutagrad::sum((self - r).exp() * t, dims, keepdim);
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("result", result_);
  }
  DimVector dims_;
  bool keepdim_ = false;
  SavedVariable self_, result_;
};

int64_t count_over(const Tensor& self, IntArrayRef sorted_dims) {
  int64_t n = 1;
  for (int64_t d : sorted_dims) {
    if (self.dim() > 0) n *= self.size(d);
  }
  return n;
}

Tensor scan_op(ReduceOp op, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  Tensor result = native::scan(op, self, dim, dtype);
  const int64_t d = self.dim() == 0 ? 0 : wrap_dim(dim, self.dim(), "cumsum");
  fwd::propagate(op == ReduceOp::kSum ? "cumsum" : "cumprod", result, {self}, [&](const auto& t) {
    return op == ReduceOp::kSum ? CumsumBackward0::jvp(t[0], d)
                                : CumprodBackward0::jvp(self, result, d, t[0]);
  });
  if (!compute_requires_grad_has_jvp(self) || !result.is_floating_point()) return result;
  if (op == ReduceOp::kSum) {
    auto node = make_node<CumsumBackward0>(self);
    node->dim_ = d;
    node->self_dtype_ = self.dtype();
    set_history(result, node);
    return result;
  }
  auto node = make_node<CumprodBackward0>(self);
  node->dim_ = d;
  node->self_ = SavedVariable(self, /*is_output=*/false);
  set_history(result, node);
  node->result_ = SavedVariable(result, /*is_output=*/true);
  return result;
}

// x != 0 as bool.
Tensor nonzero_mask(const Tensor& self) { return native::binary(BinaryOp::kNe, self, Scalar(0)); }

Tensor variance(const Tensor& self, IntArrayRef dims, double correction, bool keepdim,
                bool is_std) {
  const char* op = is_std ? "std" : "var";
  check_floating(op, self, "std and var");
  const DimVector sorted = reduced_dims(dims, self.dim(), op);
  const double divisor = std::max(0.0, static_cast<double>(count_over(self, sorted)) - correction);
  const Tensor centered =
      native::binary(BinaryOp::kSub, self, native::reduce(ReduceOp::kMean, self, sorted, true));
  Tensor result = native::binary(
      BinaryOp::kDiv,
      native::reduce(ReduceOp::kSum, native::binary(BinaryOp::kMul, centered, centered), sorted,
                     keepdim),
      Scalar(divisor));
  if (is_std) result = native::unary(UnaryOp::kSqrt, result);
  fwd::propagate(op, result, {self}, [&](const auto& t) {
    return VarianceBackward::jvp(is_std, self, result, sorted, keepdim, divisor, t[0]);
  });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_pooled<VarianceBackward>(is_std);
    node->set_next_edges(collect_next_edges(self));
    node->dims_ = sorted;
    node->keepdim_ = keepdim;
    node->divisor_ = divisor;
    node->all_dims_ = dims.empty() || self.dim() == 0;
    node->self_ = SavedVariable(self, /*is_output=*/false);
    set_history(result, node);
    if (is_std) node->result_ = SavedVariable(result, /*is_output=*/true);
  }
  return result;
}

Tensor norm_forward(const Tensor& self, double p, IntArrayRef sorted, bool keepdim) {
  const Tensor a = native::unary(UnaryOp::kAbs, self);
  if (p == 0.0) {
    return native::reduce(ReduceOp::kSum, native::to(nonzero_mask(self), self.dtype()), sorted,
                          keepdim);
  }
  if (p == 1.0) return native::reduce(ReduceOp::kSum, a, sorted, keepdim);
  if (std::isinf(p)) {
    // Over nothing, every norm is 0 (PyTorch), the max/min reductions refuse an empty dim.
    if (count_over(self, sorted) == 0) return native::reduce(ReduceOp::kSum, a, sorted, keepdim);
    return native::reduce(p > 0 ? ReduceOp::kMax : ReduceOp::kMin, a, sorted, keepdim);
  }
  UnaryArgs pow_p;
  pow_p.arg = Scalar(p);
  pow_p.has_arg = true;
  const Tensor s =
      native::reduce(ReduceOp::kSum, native::unary(UnaryOp::kPowScalar, a, pow_p), sorted, keepdim);
  if (p == 2.0) return native::unary(UnaryOp::kSqrt, s);
  UnaryArgs root;
  root.arg = Scalar(1.0 / p);
  root.has_arg = true;
  return native::unary(UnaryOp::kPowScalar, s, root);
}

}  // namespace
}  // namespace autograd

using autograd::compute_requires_grad_has_jvp;

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return autograd::scan_op(ReduceOp::kSum, self, dim, dtype);
}

Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return autograd::scan_op(ReduceOp::kProd, self, dim, dtype);
}

namespace {
// all/any return bool, except on uint8, where torch keeps uint8 (a legacy of masks as bytes).
Tensor logical_result(const Tensor& self, const Tensor& verdict) {
  return self.dtype() == kUInt8 ? native::to(verdict, kUInt8) : verdict;
}
}  // namespace

Tensor all(const Tensor& self) {
  const Tensor zeros =
      native::reduce(ReduceOp::kSum, native::binary(BinaryOp::kEq, self, Scalar(0)), {}, false);
  return logical_result(self, native::binary(BinaryOp::kEq, zeros, Scalar(0)));
}

Tensor all(const Tensor& self, int64_t dim, bool keepdim) {
  const Tensor zeros = native::reduce(
      ReduceOp::kSum, native::binary(BinaryOp::kEq, self, Scalar(0)), {dim}, keepdim);
  return logical_result(self, native::binary(BinaryOp::kEq, zeros, Scalar(0)));
}

Tensor any(const Tensor& self) {
  return logical_result(
      self, native::binary(BinaryOp::kGt,
                           native::reduce(ReduceOp::kSum, autograd::nonzero_mask(self), {}, false),
                           Scalar(0)));
}

Tensor any(const Tensor& self, int64_t dim, bool keepdim) {
  return logical_result(
      self,
      native::binary(BinaryOp::kGt,
                     native::reduce(ReduceOp::kSum, autograd::nonzero_mask(self), {dim}, keepdim),
                     Scalar(0)));
}

Tensor count_nonzero(const Tensor& self, IntArrayRef dims) {
  const DimVector sorted = autograd::reduced_dims(dims, self.dim(), "count_nonzero");
  return native::reduce(ReduceOp::kSum, autograd::nonzero_mask(self), sorted, false);
}

Tensor var(const Tensor& self, IntArrayRef dims, double correction, bool keepdim) {
  return autograd::variance(self, dims, correction, keepdim, /*is_std=*/false);
}

Tensor std(const Tensor& self, IntArrayRef dims, double correction, bool keepdim) {
  return autograd::variance(self, dims, correction, keepdim, /*is_std=*/true);
}

Tensor norm(const Tensor& self, double p, IntArrayRef dims, bool keepdim) {
  autograd::check_floating("norm", self, "norm's input dtype should be floating point: norms");
  const DimVector sorted = autograd::reduced_dims(dims, self.dim(), "norm");
  Tensor result = autograd::norm_forward(self, p, sorted, keepdim);
  autograd::fwd::propagate("norm", result, {self}, [&](const auto& t) {
    return autograd::NormBackward1::jvp(self, result, p, sorted, keepdim, t[0]);
  });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = autograd::make_node<autograd::NormBackward1>(self);
    node->p_ = p;
    node->dims_ = sorted;
    node->keepdim_ = keepdim;
    node->self_ = autograd::SavedVariable(self, /*is_output=*/false);
    autograd::set_history(result, node);
    node->result_ = autograd::SavedVariable(result, /*is_output=*/true);
  }
  return result;
}

Tensor logsumexp(const Tensor& self, IntArrayRef dims, bool keepdim) {
  const Tensor x = self.is_floating_point() ? self : native::to(self, default_dtype());
  const DimVector sorted = autograd::reduced_dims(dims, x.dim(), "logsumexp");
  Tensor result;
  if (x.numel() == 0) {
    result = native::unary(
        UnaryOp::kLog,
        native::reduce(ReduceOp::kSum, native::unary(UnaryOp::kExp, x), sorted, keepdim));
  } else {
    // The maximum, with infinities taken as 0 so that exp(x - m) stays finite (PyTorch).
    Tensor m = native::reduce(ReduceOp::kMax, native::detach(x), sorted, true);
    m = native::where(native::unary(UnaryOp::kIsInf, m),
                      native::wrap_scalar(0, x.dtype(), x.device()), m);
    const Tensor s = native::reduce(
        ReduceOp::kSum, native::unary(UnaryOp::kExp, native::binary(BinaryOp::kSub, x, m)), sorted,
        keepdim);
    DimVector out_sizes;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (!std::binary_search(sorted.begin(), sorted.end(), d)) out_sizes.push_back(x.size(d));
    }
    const Tensor m_out = keepdim ? m : native::reshape(m, out_sizes);
    result = native::binary(BinaryOp::kAdd, native::unary(UnaryOp::kLog, s), m_out);
  }
  if (self.is_floating_point()) {
    autograd::fwd::propagate("logsumexp", result, {self}, [&](const auto& t) {
      return autograd::LogsumexpBackward0::jvp(self, result, sorted, keepdim, t[0]);
    });
  }
  if (compute_requires_grad_has_jvp(self) && self.is_floating_point()) {
    auto node = autograd::make_node<autograd::LogsumexpBackward0>(self);
    node->dims_ = sorted;
    node->keepdim_ = keepdim;
    node->self_ = autograd::SavedVariable(self, /*is_output=*/false);
    autograd::set_history(result, node);
    node->result_ = autograd::SavedVariable(result, /*is_output=*/true);
  }
  return result;
}

Tensor isclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  if (self.dtype() != other.dtype()) {
    throw DTypeError(str("isclose(): expected both inputs to have the same dtype, but got ",
                         dtype_name(self.dtype()), " and ", dtype_name(other.dtype()),
                         "; convert one with .to()"));
  }
  if (rtol < 0 || atol < 0) {
    throw ValueError(
        str("isclose(): rtol and atol must be non-negative, got rtol=", rtol, " atol=", atol));
  }
  Tensor close = native::binary(BinaryOp::kEq, self, other);
  const bool floating = self.is_floating_point();
  if (equal_nan && floating) {
    close =
        native::binary(BinaryOp::kLogicalOr, close,
                       native::binary(BinaryOp::kLogicalAnd, native::unary(UnaryOp::kIsNan, self),
                                      native::unary(UnaryOp::kIsNan, other)));
  }
  if (rtol == 0 && atol == 0) return close;
  // Integers compare in float32 (PyTorch's default dtype).
  const Tensor a = floating ? self : native::to(self, default_dtype());
  const Tensor b = floating ? other : native::to(other, default_dtype());
  const Tensor allowed = native::binary(
      BinaryOp::kAdd, native::unary(UnaryOp::kAbs, native::binary(BinaryOp::kMul, b, Scalar(rtol))),
      Scalar(atol));
  const Tensor error = native::unary(UnaryOp::kAbs, native::binary(BinaryOp::kSub, a, b));
  const Tensor within =
      native::binary(BinaryOp::kLogicalAnd, native::unary(UnaryOp::kIsFinite, error),
                     native::binary(BinaryOp::kLe, error, allowed));
  return native::binary(BinaryOp::kLogicalOr, close, within);
}

bool allclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  return all(isclose(self, other, rtol, atol, equal_nan)).item<bool>();
}

bool equal(const Tensor& self, const Tensor& other) {
  check_same_device("equal", self.device(), other.device());
  if (!self.sizes().equals(other.sizes())) return false;
  return all(native::binary(BinaryOp::kEq, self, other)).item<bool>();
}

Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const {
  return mutagrad::cumsum(*this, dim, dtype);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const {
  return mutagrad::cumprod(*this, dim, dtype);
}
Tensor Tensor::all() const { return mutagrad::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return mutagrad::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return mutagrad::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return mutagrad::any(*this, dim, keepdim); }
Tensor Tensor::count_nonzero(IntArrayRef dims) const {
  return mutagrad::count_nonzero(*this, dims);
}
Tensor Tensor::var(IntArrayRef dims, double correction, bool keepdim) const {
  return mutagrad::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(IntArrayRef dims, double correction, bool keepdim) const {
  return mutagrad::std(*this, dims, correction, keepdim);
}
Tensor Tensor::norm(double p, IntArrayRef dims, bool keepdim) const {
  return mutagrad::norm(*this, p, dims, keepdim);
}
Tensor Tensor::logsumexp(IntArrayRef dims, bool keepdim) const {
  return mutagrad::logsumexp(*this, dims, keepdim);
}

}  // namespace mutagrad
