// Reductions: each forward function and its backward node, side by side.
#include "autograd/ops/reduce_ops.h"

#include <algorithm>
#include <utility>

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/copy_ops.h"
#include "autograd/ops/reduce_util.h"
#include "autograd/ops/view_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {
namespace {

// Info shared by the nodes of reductions over some dims.
struct ReduceInfo {
  DimVector self_sizes;
  DimVector dims;  // wrapped, sorted
  bool keepdim = false;
  int64_t ndim() const { return static_cast<int64_t>(self_sizes.size()); }
};

// torch's names of a dim reduction's arguments (SumBackward1._saved_dim, ...).
void visit_reduce_info(SavedAttributeVisitor& v, const ReduceInfo& info) {
  v.visit("dim", info.dims);
  v.visit("keepdim", info.keepdim);
  v.visit("self_sym_sizes", info.self_sizes);
}

int64_t reduced_count(const ReduceInfo& info) {
  int64_t count = 1;
  for (int64_t d : info.dims) {
    if (info.ndim() > 0) count *= info.self_sizes[static_cast<size_t>(d)];
  }
  return count;
}

}  // namespace

class SumBackward0 final : public Node {
 public:
  const char* name() const override { return "SumBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].expand(self_sizes_)}; }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override {
    v.visit("self_sym_sizes", self_sizes_);
  }
  DimVector self_sizes_;
};

class SumBackward1 final : public Node {
 public:
  const char* name() const override { return "SumBackward1"; }
  VariableList apply(VariableList&& grads) override {
    return {
        keepdim_form(grads[0], info_.dims, info_.ndim(), info_.keepdim).expand(info_.self_sizes)};
  }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override {
    visit_reduce_info(v, info_);
  }
  ReduceInfo info_;
};

class MeanBackward0 final : public Node {
 public:
  const char* name() const override { return "MeanBackward0"; }
  VariableList apply(VariableList&& grads) override {
    return {(grads[0] / static_cast<double>(count_)).expand(self_sizes_)};
  }
  DimVector self_sizes_;
  int64_t count_ = 1;
};

class MeanBackward1 final : public Node {
 public:
  const char* name() const override { return "MeanBackward1"; }
  VariableList apply(VariableList&& grads) override {
    Tensor g = keepdim_form(grads[0], info_.dims, info_.ndim(), info_.keepdim);
    return {(g / static_cast<double>(reduced_count(info_))).expand(info_.self_sizes)};
  }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override {
    visit_reduce_info(v, info_);
  }
  ReduceInfo info_;
};

// d prod / d x_j = the product of the others. Without zeros that is result / x_j. With zeros
// it is written so that it stays differentiable (double backward): with P the product of the
// non-zero entries of a group and Z the sum of its zero entries (value 0, but it carries
// their gradient), a non-zero x_j gets P / x_j times (1, Z, 0) for (0, 1, 2+) zeros in its
// group, and a zero x_j gets P times (1, Z - x_j, 0) for (1, 2, 3+) zeros.
class ProdBackward final : public Node {
 public:
  explicit ProdBackward(bool all) : all_(all) {}
  const char* name() const override { return all_ ? "ProdBackward0" : "ProdBackward1"; }
  VariableList apply(VariableList&& grads) override {
    Tensor g = keepdim_form(grads[0], info_.dims, info_.ndim(), info_.keepdim);
    return {g * partials(self_.unpack(this), result_.unpack(this), info_)};
  }
  // Tangent: Σ over the reduced dims of partials · t (the backward's factor, transposed).
  static Tensor jvp(const Tensor& self, const Tensor& result, const ReduceInfo& info, bool all,
                    const Tensor& t) {
    Tensor terms = partials(self, result, info) * t;
    return all ? terms.sum() : terms.sum(info.dims, info.keepdim);
  }
  // d result / d self, in self's shape.
  static Tensor partials(const Tensor& self, const Tensor& result_in, const ReduceInfo& info_) {
    Tensor zero = native::binary(BinaryOp::kEq, self, Scalar(0));
    const bool any_zero = native::reduce(ReduceOp::kSum, zero, {}, false).item<int64_t>() > 0;
    if (!any_zero) {
      Tensor result = keepdim_form(result_in, info_.dims, info_.ndim(), info_.keepdim);
      return result / self;
    }
    Tensor count = native::reduce(ReduceOp::kSum, zero, info_.dims, true);
    auto count_is = [&](BinaryOp op, int64_t n) { return native::binary(op, count, Scalar(n)); };
    Tensor x_safe = self.masked_fill(zero, 1);
    Tensor product = prod(x_safe, info_.dims, true);
    Tensor zero_sum = sum(self.masked_fill(zero.logical_not(), 0), info_.dims, true);
    Tensor nonzero_factor =
        (product / x_safe) *
        where(count_is(BinaryOp::kEq, 0), 1.0, zero_sum).masked_fill(count_is(BinaryOp::kGe, 2), 0);
    Tensor zero_factor = product * where(count_is(BinaryOp::kEq, 1), 1.0, zero_sum - self)
                                       .masked_fill(count_is(BinaryOp::kGe, 3), 0);
    return where(zero, zero_factor, nonzero_factor);
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("result", result_);
  }
  SavedVariable self_, result_;
  ReduceInfo info_;

 private:
  bool all_;
};

// max()/min() over everything (MaxBackward1) or amax/amin over dims: ties share evenly.
class ExtremumBackward final : public Node {
 public:
  explicit ExtremumBackward(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override {
    Tensor self = self_.unpack(this);
    Tensor result = keepdim_form(result_.unpack(this), info_.dims, info_.ndim(), info_.keepdim);
    Tensor g = keepdim_form(grads[0], info_.dims, info_.ndim(), info_.keepdim);
    Tensor is_extremum = native::binary(BinaryOp::kEq, self, result);
    Tensor count =
        native::to(native::reduce(ReduceOp::kSum, is_extremum, info_.dims, true), g.dtype());
    return {(g / count).masked_fill(is_extremum.logical_not(), 0)};
  }
  // Tangent: the mean of the tangent over the positions that attain the extremum.
  static Tensor jvp(const Tensor& self, const Tensor& result_in, const ReduceInfo& info,
                    const Tensor& t) {
    Tensor result = keepdim_form(result_in, info.dims, info.ndim(), info.keepdim);
    Tensor is_extremum = native::binary(BinaryOp::kEq, self, result);
    Tensor count =
        native::to(native::reduce(ReduceOp::kSum, is_extremum, info.dims, info.keepdim), t.dtype());
    Tensor picked = t.masked_fill(is_extremum.logical_not(), 0);
    return (info.dims.size() == static_cast<size_t>(info.ndim()) && !info.keepdim
                ? picked.sum()
                : picked.sum(info.dims, info.keepdim)) /
           count;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("result", result_);
  }
  SavedVariable self_, result_;
  ReduceInfo info_;

 private:
  const char* name_;
};

// max(dim) / min(dim) (MaxBackward0 / MinBackward0): the gradient goes to the returned index
// only, as PyTorch (not shared among ties as in amax). Backward: grad expanded over the dim and
// kept where the position along it is the saved index (differentiable in grad).
class ExtremumDimBackward final : public Node {
 public:
  explicit ExtremumDimBackward(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override {
    Tensor indices = indices_.unpack(this);
    if (self_sizes_.empty()) return {grads[0]};  // 0-dim input: the only element
    Tensor g = keepdim_ ? grads[0] : grads[0].unsqueeze(dim_);
    Tensor idx = keepdim_ ? indices : native::unsqueeze(indices, dim_);
    DimVector position_shape(self_sizes_.size(), 1);
    position_shape[static_cast<size_t>(dim_)] = self_sizes_[static_cast<size_t>(dim_)];
    Tensor positions = native::view(
        arange(self_sizes_[static_cast<size_t>(dim_)], kInt64, g.device()), position_shape);
    Tensor selected = native::binary(BinaryOp::kEq, positions, idx);
    return {g.expand(self_sizes_).masked_fill(selected.logical_not(), 0)};
  }
  // Tangent: the tangent at the returned index (gather along the dim).
  static Tensor jvp(const Tensor& indices, int64_t dim, bool keepdim, const Tensor& t) {
    if (t.dim() == 0) return t;
    Tensor idx = keepdim ? indices : native::unsqueeze(indices, dim);
    Tensor picked = t.gather(dim, idx);
    return keepdim ? picked : picked.squeeze(dim);
  }
  void visit_saved(SavedVisitor& v) override { v.visit("indices", indices_); }
  SavedVariable indices_;
  DimVector self_sizes_;
  int64_t dim_ = 0;
  bool keepdim_ = false;

 private:
  const char* name_;
};

}  // namespace autograd

using autograd::compute_requires_grad_has_jvp;
using autograd::make_node;
using autograd::ReduceInfo;
using autograd::SavedVariable;
using autograd::set_history;

namespace {

ReduceInfo make_info(const Tensor& self, IntArrayRef dims, bool keepdim, const char* op) {
  ReduceInfo info;
  info.self_sizes = DimVector(self.sizes());
  info.dims = autograd::reduced_dims(dims, self.dim(), op);
  info.keepdim = keepdim;
  return info;
}

Tensor prod_impl(const Tensor& self, IntArrayRef dims, bool keepdim, bool all) {
  Tensor result = native::reduce(ReduceOp::kProd, self, dims, keepdim);
  autograd::fwd::propagate("prod", result, {self}, [&](const auto& t) {
    return autograd::ProdBackward::jvp(self, result, make_info(self, dims, keepdim, "prod"), all,
                                       t[0]);
  });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_pooled<autograd::ProdBackward>(all);
    node->set_next_edges(autograd::collect_next_edges(self));
    node->info_ = make_info(self, dims, keepdim, "prod");
    node->self_ = SavedVariable(self, false);
    set_history(result, node);
    node->result_ = SavedVariable(result, true);
  }
  return result;
}

Tensor extremum_impl(ReduceOp op, const Tensor& self, IntArrayRef dims, bool keepdim,
                     const char* node_name) {
  Tensor result = native::reduce(op, self, dims, keepdim);
  const char* op_name = op == ReduceOp::kMax ? "max" : "min";
  autograd::fwd::propagate(op_name, result, {self}, [&](const auto& t) {
    return autograd::ExtremumBackward::jvp(self, result, make_info(self, dims, keepdim, op_name),
                                           t[0]);
  });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_pooled<autograd::ExtremumBackward>(node_name);
    node->set_next_edges(autograd::collect_next_edges(self));
    node->info_ = make_info(self, dims, keepdim, op_name);
    node->self_ = SavedVariable(self, false);
    set_history(result, node);
    node->result_ = SavedVariable(result, true);
  }
  return result;
}

std::pair<Tensor, Tensor> extremum_dim_impl(ReduceOp op, const Tensor& self, int64_t dim,
                                            bool keepdim, const char* name) {
  const char* op_name = op == ReduceOp::kMax ? "max" : "min";
  // bool has no argmax of its own in torch, but max(dim) of a bool tensor works: its indices
  // are those of the same values as uint8.
  const Tensor ordered = self.dtype() == kBool ? native::to(self, kUInt8) : self;
  Tensor indices = op == ReduceOp::kMax ? native::argmax(ordered, dim, keepdim)
                                        : native::argmin(ordered, dim, keepdim);
  Tensor values = native::reduce(op, self, {dim}, keepdim);
  autograd::fwd::propagate(op_name, values, {self}, [&](const auto& t) {
    return autograd::ExtremumDimBackward::jvp(
        indices, self.dim() == 0 ? 0 : wrap_dim(dim, self.dim(), op_name), keepdim, t[0]);
  });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_pooled<autograd::ExtremumDimBackward>(name);
    node->set_next_edges(autograd::collect_next_edges(self));
    node->self_sizes_ = DimVector(self.sizes());
    node->dim_ = self.dim() == 0 ? 0 : wrap_dim(dim, self.dim(), op_name);
    node->keepdim_ = keepdim;
    node->indices_ = SavedVariable(indices, false);
    set_history(values, node);
  }
  return {values, indices};
}

}  // namespace

Tensor sum(const Tensor& self) {
  autograd::capture::OpScope cap("sum", autograd::capture::OpKind::kFunctional);
  Tensor result = native::reduce(ReduceOp::kSum, self, {}, false);
  // SumBackward0's tangent: sum is linear, the sum of the tangent.
  autograd::fwd::propagate("sum", result, {self}, [](const auto& t) { return t[0].sum(); });
  if (autograd::compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::SumBackward0>(self);
    node->self_sizes_ = DimVector(self.sizes());
    set_history(result, node);
  }
  return cap.done(result, [&] { return autograd::capture::Args{self}; });
}

Tensor sum(const Tensor& self, IntArrayRef dims, bool keepdim) {
  autograd::capture::OpScope cap("sum", autograd::capture::OpKind::kFunctional);
  Tensor result = native::reduce(ReduceOp::kSum, self, dims, keepdim);
  // SumBackward1's tangent: the same sum of the tangent (linear).
  autograd::fwd::propagate("sum", result, {self},
                           [&](const auto& t) { return t[0].sum(dims, keepdim); });
  if (autograd::compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::SumBackward1>(self);
    node->info_ = make_info(self, dims, keepdim, "sum");
    set_history(result, node);
  }
  return cap.done(result, [&] {
    return autograd::capture::Args{self, autograd::capture::ints(dims), keepdim};
  });
}

Tensor mean(const Tensor& self) {
  autograd::capture::OpScope cap("mean", autograd::capture::OpKind::kFunctional);
  Tensor result = native::reduce(ReduceOp::kMean, self, {}, false);
  // MeanBackward0's tangent: the mean of the tangent (linear).
  autograd::fwd::propagate("mean", result, {self}, [](const auto& t) { return t[0].mean(); });
  if (autograd::compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::MeanBackward0>(self);
    node->self_sizes_ = DimVector(self.sizes());
    node->count_ = self.numel();
    set_history(result, node);
  }
  return cap.done(result, [&] { return autograd::capture::Args{self}; });
}

Tensor mean(const Tensor& self, IntArrayRef dims, bool keepdim) {
  autograd::capture::OpScope cap("mean", autograd::capture::OpKind::kFunctional);
  Tensor result = native::reduce(ReduceOp::kMean, self, dims, keepdim);
  // MeanBackward1's tangent: the same mean of the tangent (linear).
  autograd::fwd::propagate("mean", result, {self},
                           [&](const auto& t) { return t[0].mean(dims, keepdim); });
  if (autograd::compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::MeanBackward1>(self);
    node->info_ = make_info(self, dims, keepdim, "mean");
    set_history(result, node);
  }
  return cap.done(result, [&] {
    return autograd::capture::Args{self, autograd::capture::ints(dims), keepdim};
  });
}

Tensor prod(const Tensor& self) {
  autograd::capture::OpScope cap("prod", autograd::capture::OpKind::kFunctional);
  return cap.done(prod_impl(self, {}, false, true), [&] { return autograd::capture::Args{self}; });
}
Tensor prod(const Tensor& self, IntArrayRef dims, bool keepdim) {
  autograd::capture::OpScope cap("prod", autograd::capture::OpKind::kFunctional);
  return cap.done(prod_impl(self, dims, keepdim, false), [&] {
    return autograd::capture::Args{self, autograd::capture::ints(dims), keepdim};
  });
}
Tensor max(const Tensor& self) {
  autograd::capture::OpScope cap("max", autograd::capture::OpKind::kFunctional);
  return cap.done(extremum_impl(ReduceOp::kMax, self, {}, false, "MaxBackward1"),
                  [&] { return autograd::capture::Args{self}; });
}
Tensor min(const Tensor& self) {
  autograd::capture::OpScope cap("min", autograd::capture::OpKind::kFunctional);
  return cap.done(extremum_impl(ReduceOp::kMin, self, {}, false, "MinBackward1"),
                  [&] { return autograd::capture::Args{self}; });
}
Tensor amax(const Tensor& self, IntArrayRef dims, bool keepdim) {
  autograd::capture::OpScope cap("amax", autograd::capture::OpKind::kFunctional);
  return cap.done(extremum_impl(ReduceOp::kMax, self, dims, keepdim, "AmaxBackward0"), [&] {
    return autograd::capture::Args{self, autograd::capture::ints(dims), keepdim};
  });
}
Tensor amin(const Tensor& self, IntArrayRef dims, bool keepdim) {
  autograd::capture::OpScope cap("amin", autograd::capture::OpKind::kFunctional);
  return cap.done(extremum_impl(ReduceOp::kMin, self, dims, keepdim, "AminBackward0"), [&] {
    return autograd::capture::Args{self, autograd::capture::ints(dims), keepdim};
  });
}
Tensor max(const Tensor& self, IntArrayRef dims, bool keepdim) { return amax(self, dims, keepdim); }
Tensor min(const Tensor& self, IntArrayRef dims, bool keepdim) { return amin(self, dims, keepdim); }

std::pair<Tensor, Tensor> max_dim(const Tensor& self, int64_t dim, bool keepdim) {
  autograd::capture::OpScope cap("max", autograd::capture::OpKind::kFunctional);
  auto result = extremum_dim_impl(ReduceOp::kMax, self, dim, keepdim, "MaxBackward0");
  auto args = [&] { return autograd::capture::Args{self, dim, keepdim}; };
  cap.done_as("max_values", autograd::capture::OpKind::kFunctional, result.first, args);
  cap.done_as("max_indices", autograd::capture::OpKind::kFunctional, result.second, args);
  return result;
}
std::pair<Tensor, Tensor> min_dim(const Tensor& self, int64_t dim, bool keepdim) {
  autograd::capture::OpScope cap("min", autograd::capture::OpKind::kFunctional);
  auto result = extremum_dim_impl(ReduceOp::kMin, self, dim, keepdim, "MinBackward0");
  auto args = [&] { return autograd::capture::Args{self, dim, keepdim}; };
  cap.done_as("min_values", autograd::capture::OpKind::kFunctional, result.first, args);
  cap.done_as("min_indices", autograd::capture::OpKind::kFunctional, result.second, args);
  return result;
}

Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return native::argmax(self, dim, keepdim);
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return native::argmin(self, dim, keepdim);
}

Tensor sum_to(const Tensor& t, IntArrayRef shape) {
  if (t.sizes().equals(shape)) return t;
  const int64_t leading = t.dim() - static_cast<int64_t>(shape.size());
  if (leading < 0) {
    throw ShapeError(str("sum_to(): cannot sum a tensor of shape ", t.sizes(), " to the larger ",
                         "shape ", shape, "; the target shape must broadcast to the tensor's"));
  }
  DimVector dims;
  for (int64_t d = 0; d < leading; ++d) dims.push_back(d);
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = leading + static_cast<int64_t>(i);
    if (shape[i] == 1 && t.size(d) != 1) dims.push_back(d);
  }
  if (dims.empty()) return t.view(shape);
  return sum(t, dims, /*keepdim=*/true).view(shape);
}

// ---- Tensor members ----------------------------------------------------------------------------
Tensor Tensor::sum() const { return mutagrad::sum(*this); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim) const {
  return mutagrad::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const { return mutagrad::mean(*this); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim) const {
  return mutagrad::mean(*this, dims, keepdim);
}
Tensor Tensor::prod() const { return mutagrad::prod(*this); }
Tensor Tensor::prod(IntArrayRef dims, bool keepdim) const {
  return mutagrad::prod(*this, dims, keepdim);
}
Tensor Tensor::max() const { return mutagrad::max(*this); }
Tensor Tensor::max(IntArrayRef dims, bool keepdim) const {
  return mutagrad::max(*this, dims, keepdim);
}
Tensor Tensor::min() const { return mutagrad::min(*this); }
Tensor Tensor::min(IntArrayRef dims, bool keepdim) const {
  return mutagrad::min(*this, dims, keepdim);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return mutagrad::argmax(*this, dim, keepdim);
}

}  // namespace mutagrad
