// Element-wise binary ops: each forward function and its backward node, side by side.
// Gradients are returned in the broadcast shape; the engine sums them down to each input's
// shape (see Note [Engine]).
#include "autograd/ops/binary_ops.h"

#include <cmath>
#include <optional>
#include <string_view>

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/copy_ops.h"
#include "autograd/ops/node_factories.h"
#include "autograd/ops/unary_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/factories.h"
#include "tensor/native/fma.h"
#include "tensor/native/pointwise.h"

namespace mutagrad {
namespace autograd {

namespace {
bool is_one(const Scalar& s) { return s.to<double>() == 1.0; }
Tensor times(const Tensor& grad, const Scalar& alpha) {
  return is_one(alpha) ? grad : grad * alpha;
}
// a + b where either may be undefined (an input without a tangent contributes nothing).
Tensor plus(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}
}  // namespace

class AddBackward0 final : public Node {
 public:
  const char* name() const override { return "AddBackward0"; }
  // Forward mode (Note [Tangent formulas beside backward formulas] in autograd/forward_ad.h).
  static Tensor jvp(const Tensor& ts, const Tensor& to, const Scalar& alpha) {
    return plus(ts, to.defined() ? times(to, alpha) : Tensor());
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = grads[0];
    if (should_compute_output(1)) out[1] = times(grads[0], alpha_);
    return out;
  }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override { v.visit("alpha", alpha_); }
  Scalar alpha_ = 1;
};

// self + scalar (add.Scalar).
class AddBackward1 final : public Node {
 public:
  const char* name() const override { return "AddBackward1"; }
  static Tensor jvp(const Tensor& ts) { return ts; }
  VariableList apply(VariableList&& grads) override { return {grads[0]}; }
};

class SubBackward0 final : public Node {
 public:
  const char* name() const override { return "SubBackward0"; }
  static Tensor jvp(const Tensor& ts, const Tensor& to, const Scalar& alpha) {
    return plus(ts, to.defined() ? times(to, alpha).neg() : Tensor());
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = grads[0];
    if (should_compute_output(1)) out[1] = times(grads[0], alpha_).neg();
    return out;
  }
  Scalar alpha_ = 1;
};

class SubBackward1 final : public Node {
 public:
  const char* name() const override { return "SubBackward1"; }
  static Tensor jvp(const Tensor& ts) { return ts; }
  VariableList apply(VariableList&& grads) override { return {grads[0]}; }
};

// scalar - self * alpha.
class RsubBackward1 final : public Node {
 public:
  const char* name() const override { return "RsubBackward1"; }
  static Tensor jvp(const Tensor& ts, const Scalar& alpha) { return times(ts, alpha).neg(); }
  VariableList apply(VariableList&& grads) override { return {times(grads[0], alpha_).neg()}; }
  Scalar alpha_ = 1;
};

class MulBackward0 final : public Node {
 public:
  const char* name() const override { return "MulBackward0"; }
  static Tensor jvp(const Tensor& self, const Tensor& other, const Tensor& ts, const Tensor& to) {
    return plus(ts.defined() ? ts * other : Tensor(), to.defined() ? to * self : Tensor());
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = grads[0] * other_.unpack(this);
    if (should_compute_output(1)) out[1] = grads[0] * self_.unpack(this);
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("other", other_);
  }
  SavedVariable self_, other_;
};

class MulBackward1 final : public Node {
 public:
  const char* name() const override { return "MulBackward1"; }
  static Tensor jvp(const Tensor& ts, const Scalar& other) { return ts * other; }
  VariableList apply(VariableList&& grads) override { return {grads[0] * other_}; }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override { v.visit("other", other_); }
  Scalar other_;
};

class DivBackward0 final : public Node {
 public:
  const char* name() const override { return "DivBackward0"; }
  static Tensor jvp(const Tensor& self, const Tensor& other, const Tensor& ts, const Tensor& to) {
    return plus(ts.defined() ? ts / other : Tensor(),
                to.defined() ? to.neg() * ((self / other) / other) : Tensor());
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    Tensor other = other_.unpack(this);
    if (should_compute_output(0)) out[0] = grads[0] / other;
    if (should_compute_output(1)) out[1] = grads[0].neg() * ((self_.unpack(this) / other) / other);
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("other", other_);
  }
  SavedVariable self_, other_;
};

class DivBackward1 final : public Node {
 public:
  const char* name() const override { return "DivBackward1"; }
  static Tensor jvp(const Tensor& ts, const Scalar& other) { return ts / other; }
  VariableList apply(VariableList&& grads) override { return {grads[0] / other_}; }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override { v.visit("other", other_); }
  Scalar other_;
};

// remainder (RemainderBackward1) and fmod (FmodBackward1) of two tensors: self's gradient
// passes, other's is -grad * (self // other), with the quotient rounded as the op rounds.
class RoundedRemainderBackward final : public Node {
 public:
  explicit RoundedRemainderBackward(BinaryOp op) : op_(op) {}
  const char* name() const override {
    return op_ == BinaryOp::kRemainder ? "RemainderBackward1" : "FmodBackward1";
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = grads[0];
    if (should_compute_output(1)) {
      const Tensor self = self_.unpack(this);
      const Tensor other = other_.unpack(this);
      const char* mode = op_ == BinaryOp::kRemainder ? "floor" : "trunc";
      out[1] = grads[0].neg() * div(self, other, mode);
    }
    return out;
  }
  // Tangent: ts - (self // other) to, the quotient rounded as the op rounds.
  static Tensor jvp(BinaryOp op, const Tensor& self, const Tensor& other, const Tensor& ts,
                    const Tensor& to) {
    if (!to.defined()) return ts;
    Tensor q = div(self, other, op == BinaryOp::kRemainder ? "floor" : "trunc");
    return plus(ts, to.neg() * q);
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("other", other_);
  }
  SavedVariable self_, other_;

 private:
  BinaryOp op_;
};

// Gradients that pass to self only (RemainderBackward0, FmodBackward0: x % scalar).
class PassSelfBackward final : public Node {
 public:
  explicit PassSelfBackward(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override { return {grads[0]}; }

 private:
  const char* name_;
};

// div with rounding_mode (DivBackward2: tensors, DivBackward3: a scalar divisor): piecewise
// constant, zero gradients (derivatives.yaml).
class RoundedDivBackward final : public Node {
 public:
  explicit RoundedDivBackward(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(num_outputs());
    for (size_t i = 0; i < out.size(); ++i) {
      if (should_compute_output(i)) out[i] = zeros_like(grads[0]);
    }
    return out;
  }

 private:
  const char* name_;
};

// self ** exponent, both tensors.
class PowBackward1 final : public Node {
 public:
  const char* name() const override { return "PowBackward1"; }
  static Tensor jvp(const Tensor& self, const Tensor& exponent, const Tensor& result,
                    const Tensor& ts, const Tensor& te) {
    Tensor out;
    if (ts.defined()) {
      out = (ts * (exponent * self.pow(exponent - 1)))
                .masked_fill(native::binary(BinaryOp::kEq, exponent, Scalar(0)), 0);
    }
    if (te.defined()) {
      Tensor zero_base =
          native::binary(BinaryOp::kLogicalAnd, native::binary(BinaryOp::kEq, self, Scalar(0)),
                         native::binary(BinaryOp::kGe, exponent, Scalar(0)));
      out = plus(out,
                 (te * (result * self.masked_fill(zero_base, 1).log())).masked_fill(zero_base, 0));
    }
    return out;
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    Tensor self = self_.unpack(this);
    Tensor exponent = exponent_.unpack(this);
    if (should_compute_output(0)) {
      Tensor g = grads[0] * (exponent * self.pow(exponent - 1));
      out[0] = g.masked_fill(native::binary(BinaryOp::kEq, exponent, Scalar(0)), 0);
    }
    if (should_compute_output(1)) {
      // d/de self^e = self^e log(self); 0 where self == 0 and e >= 0 (PyTorch's convention).
      Tensor zero_base =
          native::binary(BinaryOp::kLogicalAnd, native::binary(BinaryOp::kEq, self, Scalar(0)),
                         native::binary(BinaryOp::kGe, exponent, Scalar(0)));
      Tensor g = grads[0] * (result_.unpack(this) * self.masked_fill(zero_base, 1).log());
      out[1] = g.masked_fill(zero_base, 0);
    }
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("exponent", exponent_);
    v.visit("result", result_);
  }
  SavedVariable self_, exponent_, result_;
};

// scalar ** exponent.
class PowBackward2 final : public Node {
 public:
  const char* name() const override { return "PowBackward2"; }
  VariableList apply(VariableList&& grads) override {
    // The exponent is read (and version checked) for a zero base only, as before.
    const Tensor exponent = self_.to<double>() == 0.0 ? exponent_.unpack(this) : Tensor();
    return {jvp(self_, exponent, result_.unpack(this), grads[0])};
  }
  // Element-wise: the tangent is the backward formula applied to the tangent.
  static Tensor jvp(const Scalar& self, const Tensor& exponent, const Tensor& result,
                    const Tensor& t) {
    const double base = self.to<double>();
    if (base == 0.0) {
      // 0^e: gradient 0 where e >= 0 (PyTorch's convention), -inf * 0^e elsewhere.
      Tensor nonneg = native::binary(BinaryOp::kGe, exponent, Scalar(0));
      return (t * (result * -INFINITY)).masked_fill(nonneg, 0);
    }
    return t * (result * std::log(base));
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("exponent", exponent_);
    v.visit("result", result_);
  }
  Scalar self_;
  SavedVariable exponent_, result_;
};

// Ties split the gradient evenly, as PyTorch.
class MaximumBackward0 final : public Node {
 public:
  explicit MaximumBackward0(bool is_max = true) : is_max_(is_max) {}
  const char* name() const override { return is_max_ ? "MaximumBackward0" : "MinimumBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    Tensor self = self_.unpack(this);
    Tensor other = other_.unpack(this);
    Tensor tie = native::binary(BinaryOp::kEq, self, other);
    Tensor shared = where(tie, grads[0] / 2, grads[0]);
    const BinaryOp self_loses = is_max_ ? BinaryOp::kLt : BinaryOp::kGt;
    const BinaryOp other_loses = is_max_ ? BinaryOp::kGt : BinaryOp::kLt;
    if (should_compute_output(0)) {
      out[0] = shared.masked_fill(native::binary(self_loses, self, other), 0);
    }
    if (should_compute_output(1)) {
      out[1] = shared.masked_fill(native::binary(other_loses, self, other), 0);
    }
    return out;
  }
  // Tangent: the winner's tangent; a tie averages both (the transpose of the even split).
  static Tensor jvp(bool is_max, const Tensor& self, const Tensor& other, const Tensor& ts,
                    const Tensor& to) {
    const Tensor a = fwd::tangent_or_zeros(ts, self);
    const Tensor b = fwd::tangent_or_zeros(to, other);
    const Tensor tie = native::binary(BinaryOp::kEq, self, other);
    const Tensor self_wins = native::binary(is_max ? BinaryOp::kGt : BinaryOp::kLt, self, other);
    return where(tie, (a + b) / 2, where(self_wins, a, b));
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("other", other_);
  }
  SavedVariable self_, other_;

 private:
  bool is_max_;
};

// atan2(self, other): d/dself = other / r^2, d/dother = -self / r^2 with r^2 = self^2 + other^2.
class Atan2Backward0 final : public Node {
 public:
  const char* name() const override { return "Atan2Backward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    Tensor self = self_.unpack(this);
    Tensor other = other_.unpack(this);
    Tensor scaled = grads[0] / (self * self + other * other);
    if (should_compute_output(0)) out[0] = scaled * other;
    if (should_compute_output(1)) out[1] = scaled.neg() * self;
    return out;
  }
  // Tangent: (other ts - self to) / r^2.
  static Tensor jvp(const Tensor& self, const Tensor& other, const Tensor& ts, const Tensor& to) {
    Tensor num =
        plus(ts.defined() ? ts * other : Tensor(), to.defined() ? to.neg() * self : Tensor());
    return num / (self * self + other * other);
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("other", other_);
  }
  SavedVariable self_, other_;
};

class WhereBackward0 final : public Node {
 public:
  const char* name() const override { return "WhereBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    Tensor condition = condition_.unpack(this);
    if (should_compute_output(0)) out[0] = grads[0].masked_fill(condition.logical_not(), 0);
    if (should_compute_output(1)) out[1] = grads[0].masked_fill(condition, 0);
    return out;
  }
  // Tangent: where(condition, ts, to), a missing tangent read as zeros.
  static Tensor jvp(const Tensor& condition, const Tensor& self, const Tensor& other,
                    const Tensor& ts, const Tensor& to) {
    return where(condition, fwd::tangent_or_zeros(ts, self), fwd::tangent_or_zeros(to, other));
  }
  void visit_saved(SavedVisitor& v) override { v.visit("condition", condition_); }
  SavedVariable condition_;
};

std::shared_ptr<Node> make_binary_node(BinaryOp op, const Tensor& self, const Tensor& other,
                                       const Scalar& alpha, const Tensor& self_value,
                                       const Tensor& other_value) {
  EdgeList edges = collect_next_edges(self, other);
  const bool self_grad = edges[0].is_valid();
  const bool other_grad = edges[1].is_valid();
  std::shared_ptr<Node> node;
  switch (op) {
    case BinaryOp::kAdd: {
      auto add = make_pooled<AddBackward0>();
      add->alpha_ = alpha;
      node = add;
      break;
    }
    case BinaryOp::kSub: {
      auto sub = make_pooled<SubBackward0>();
      sub->alpha_ = alpha;
      node = sub;
      break;
    }
    case BinaryOp::kMul: {
      auto mul = make_pooled<MulBackward0>();
      if (self_grad) mul->other_ = SavedVariable(other_value, false);
      if (other_grad) mul->self_ = SavedVariable(self_value, false);
      node = mul;
      break;
    }
    case BinaryOp::kDiv: {
      auto div = make_pooled<DivBackward0>();
      div->other_ = SavedVariable(other_value, false);
      if (other_grad) div->self_ = SavedVariable(self_value, false);
      node = div;
      break;
    }
    case BinaryOp::kPow: {  // pow_: the result is saved after the write (save_binary_result)
      auto pow = make_pooled<PowBackward1>();
      pow->self_ = SavedVariable(self_value, false);
      pow->exponent_ = SavedVariable(other_value, false);
      node = pow;
      break;
    }
    case BinaryOp::kRemainder:
    case BinaryOp::kFmod: {
      auto rem = make_pooled<RoundedRemainderBackward>(op);
      if (other_grad) {
        rem->self_ = SavedVariable(self_value, false);
        rem->other_ = SavedVariable(other_value, false);
      }
      node = rem;
      break;
    }
    case BinaryOp::kFloorDivide:
    case BinaryOp::kTruncDivide:
      node = make_pooled<RoundedDivBackward>("DivBackward2");
      break;
    case BinaryOp::kAtan2: {
      auto atan2 = make_pooled<Atan2Backward0>();
      atan2->self_ = SavedVariable(self_value, false);
      atan2->other_ = SavedVariable(other_value, false);
      node = atan2;
      break;
    }
    default:
      MG_INTERNAL_ASSERT(false, "make_binary_node(): no node for ", binary_op_name(op));
  }
  node->set_next_edges(std::move(edges));
  return node;
}

bool binary_is_differentiable(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
    case BinaryOp::kMul:
    case BinaryOp::kDiv:
    case BinaryOp::kPow:
    case BinaryOp::kRemainder:
    case BinaryOp::kFmod:
    case BinaryOp::kFloorDivide:
    case BinaryOp::kTruncDivide:
    case BinaryOp::kAtan2:
      return true;
    default:
      return false;
  }
}

bool binary_node_saves_self(BinaryOp op, bool other_requires_grad) {
  switch (op) {
    case BinaryOp::kPow:
    case BinaryOp::kAtan2:
      return true;
    case BinaryOp::kMul:
    case BinaryOp::kDiv:
    case BinaryOp::kRemainder:
    case BinaryOp::kFmod:
      return other_requires_grad;
    default:
      return false;
  }
}

void save_binary_result(Node& node, const Tensor& result) {
  auto& pow = dynamic_cast<PowBackward1&>(node);
  // The edge, not should_compute_output(): this runs in a forward pass, possibly inside another
  // node's backward (create_graph), whose output mask should_compute_output would read.
  if (pow.next_edge(1).is_valid()) {
    pow.result_ = SavedVariable(result, /*is_output=*/true, is_differentiable_view(result));
  }
}

std::shared_ptr<Node> make_binary_scalar_node(BinaryOp op, const Tensor& self,
                                              const Scalar& other) {
  std::shared_ptr<Node> node;
  switch (op) {
    case BinaryOp::kAdd:
      node = make_pooled<AddBackward1>();
      break;
    case BinaryOp::kSub:
      node = make_pooled<SubBackward1>();
      break;
    case BinaryOp::kMul: {
      auto mul = make_pooled<MulBackward1>();
      mul->other_ = other;
      node = mul;
      break;
    }
    case BinaryOp::kDiv: {
      auto div = make_pooled<DivBackward1>();
      div->other_ = other;
      node = div;
      break;
    }
    case BinaryOp::kRemainder:
      node = make_pooled<PassSelfBackward>("RemainderBackward0");
      break;
    case BinaryOp::kFmod:
      node = make_pooled<PassSelfBackward>("FmodBackward0");
      break;
    case BinaryOp::kFloorDivide:
    case BinaryOp::kTruncDivide:
      node = make_pooled<RoundedDivBackward>("DivBackward3");
      break;
    default:
      MG_INTERNAL_ASSERT(false, "make_binary_scalar_node(): no node for ", binary_op_name(op));
  }
  node->set_next_edges(collect_next_edges(self));
  return node;
}

Tensor binary_tangent(BinaryOp op, const Tensor& self, const Tensor& other, const Scalar& alpha,
                      const Tensor& result, const Tensor& ts, const Tensor& to) {
  switch (op) {
    case BinaryOp::kAdd:
      return AddBackward0::jvp(ts, to, alpha);
    case BinaryOp::kSub:
      return SubBackward0::jvp(ts, to, alpha);
    case BinaryOp::kMul:
      return MulBackward0::jvp(self, other, ts, to);
    case BinaryOp::kDiv:
      return DivBackward0::jvp(self, other, ts, to);
    case BinaryOp::kPow:
      return PowBackward1::jvp(self, other, result, ts, to);
    case BinaryOp::kAtan2:
      return Atan2Backward0::jvp(self, other, ts, to);
    case BinaryOp::kRemainder:
    case BinaryOp::kFmod:
      return RoundedRemainderBackward::jvp(op, self, other, ts, to);
    case BinaryOp::kFloorDivide:
    case BinaryOp::kTruncDivide:  // piecewise constant (RoundedDivBackward): zero
      return zeros_like(result);
    default:
      fwd::check_no_tangent(binary_op_name(op), {self, other});
      return Tensor();
  }
}

Tensor binary_scalar_tangent(BinaryOp op, const Tensor& self, const Scalar& other,
                             const Tensor& ts) {
  switch (op) {
    case BinaryOp::kAdd:
      return AddBackward1::jvp(ts);
    case BinaryOp::kSub:
      return SubBackward1::jvp(ts);
    case BinaryOp::kMul:
      return MulBackward1::jvp(ts, other);
    case BinaryOp::kDiv:
      return DivBackward1::jvp(ts, other);
    case BinaryOp::kRemainder:  // PassSelfBackward
    case BinaryOp::kFmod:
      return ts;
    case BinaryOp::kFloorDivide:  // RoundedDivBackward: zero
    case BinaryOp::kTruncDivide:
      return zeros_like(ts);
    default:
      fwd::check_no_tangent(binary_op_name(op), {self});
      return Tensor();
  }
}

}  // namespace autograd

using autograd::compute_requires_grad;
using autograd::compute_requires_grad_has_jvp;
using autograd::make_node;
using autograd::SavedVariable;
using autograd::set_history;

namespace {

using autograd::is_one;

// A Python-style scalar as a 0-dim tensor that promotes like one with `other`.
Tensor wrap(const Scalar& value, const Tensor& other, const char* op) {
  return native::wrap_scalar(value, native::result_type(other, value), other.device(), op);
}

// self op other (other scaled by alpha for add/sub), recording the op's node.
Tensor binary_op(BinaryOp op, const Tensor& self, const Tensor& other, const Scalar& alpha = 1) {
  autograd::capture::OpScope cap(binary_op_name(op), autograd::capture::OpKind::kFunctional);
  const ScalarType promoted = native::result_type(self, other);
  native::check_alpha(promoted, alpha, binary_op_name(op));
  // add/sub with alpha: one rounding, as torch (Note [Torch's fused multiply-adds]).
  // Before alpha scales it, other's own dtype (sub(x, mask, alpha=2) is refused, as torch does).
  if (!is_one(alpha)) native::check_binary_dtypes(op, self.dtype(), other.dtype());
  const bool fused = !is_one(alpha) && native::has_fma(promoted);
  const double a = op == BinaryOp::kSub ? -alpha.to<double>() : alpha.to<double>();
  Tensor result = fused ? native::fma(FmaOp::kAddAlpha, self, other, Tensor(), a, promoted)
                        : native::binary(op, self, native::scale_by_alpha(other, alpha, promoted));
  if (compute_requires_grad_has_jvp(self, other)) {
    set_history(result, autograd::make_binary_node(op, self, other, alpha, self, other));
  }
  autograd::fwd::propagate(binary_op_name(op), result, {self, other}, [&](const auto& t) {
    return autograd::binary_tangent(op, self, other, alpha, result, t[0], t[1]);
  });
  return cap.done(result, [&] { return autograd::capture::Args{self, other, alpha}; });
}

Scalar scaled(const Scalar& value, const Scalar& alpha) {
  if (is_one(alpha)) return value;
  if (value.is_floating_point() || alpha.is_floating_point()) {
    return Scalar(value.to<double>() * alpha.to<double>());
  }
  return Scalar(value.to<int64_t>() * alpha.to<int64_t>());
}

// self op other (a number; scaled by alpha for add/sub), recording the op's node. A floating
// add/sub with alpha is one FMA of the number in the result's dtype, as torch's add(self,
// other, alpha) of a wrapped number (Note [Torch's fused multiply-adds]); other cases scale the
// number in double first.
Tensor binary_scalar_op(BinaryOp op, const Tensor& self, const Scalar& other,
                        const Scalar& alpha = 1) {
  autograd::capture::OpScope cap(binary_op_name(op), autograd::capture::OpKind::kFunctional);
  const Scalar value = scaled(other, alpha);
  const ScalarType promoted = native::result_type(self, other);
  Tensor result;
  if (!is_one(alpha) && native::has_fma(promoted)) {
    native::check_alpha(promoted, alpha, binary_op_name(op));
    const double a = op == BinaryOp::kSub ? -alpha.to<double>() : alpha.to<double>();
    const Tensor number = wrap(other, self, binary_op_name(op));
    result = native::fma(FmaOp::kAddAlpha, self, number, Tensor(), a, promoted);
  } else {
    result = native::binary(op, self, value);
  }
  if (compute_requires_grad_has_jvp(self)) {
    set_history(result, autograd::make_binary_scalar_node(op, self, value));
  }
  autograd::fwd::propagate(binary_op_name(op), result, {self}, [&](const auto& t) {
    return autograd::binary_scalar_tangent(op, self, value, t[0]);
  });
  return cap.done(result, [&] {
    return is_one(alpha) ? autograd::capture::Args{self, other}
                         : autograd::capture::Args{self, other, alpha};
  });
}

}  // namespace

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return binary_op(BinaryOp::kAdd, self, other, alpha);
}
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return binary_scalar_op(BinaryOp::kAdd, self, other, alpha);
}
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return binary_op(BinaryOp::kSub, self, other, alpha);
}
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return binary_scalar_op(BinaryOp::kSub, self, other, alpha);
}

Tensor rsub(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  // other - alpha * self: one FMA for floating results, as torch's sub(other, self, alpha).
  const ScalarType promoted = native::result_type(self, other);
  Tensor result;
  if (!is_one(alpha) && native::has_fma(promoted)) {
    native::check_alpha(promoted, alpha, "rsub");
    result = native::fma(FmaOp::kAddAlpha, wrap(other, self, "rsub"), self, Tensor(),
                         -alpha.to<double>(), promoted);
  } else {
    Tensor scaled = is_one(alpha) ? self : native::binary(BinaryOp::kMul, self, alpha);
    result = native::binary(BinaryOp::kSub, wrap(other, self, "rsub"), scaled);
  }
  autograd::fwd::propagate("rsub", result, {self}, [&](const auto& t) {
    return autograd::RsubBackward1::jvp(t[0], alpha);
  });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::RsubBackward1>(self);
    node->alpha_ = alpha;
    set_history(result, node);
  }
  return result;
}

Tensor mul(const Tensor& self, const Tensor& other) {
  return binary_op(BinaryOp::kMul, self, other);
}
Tensor mul(const Tensor& self, const Scalar& other) {
  return binary_scalar_op(BinaryOp::kMul, self, other);
}
Tensor div(const Tensor& self, const Tensor& other) {
  return binary_op(BinaryOp::kDiv, self, other);
}
Tensor div(const Tensor& self, const Scalar& other) {
  return binary_scalar_op(BinaryOp::kDiv, self, other);
}

Tensor pow(const Tensor& self, const Tensor& exponent) {
  autograd::capture::OpScope cap("pow", autograd::capture::OpKind::kFunctional);
  Tensor result = native::binary(BinaryOp::kPow, self, exponent);
  autograd::fwd::propagate("pow", result, {self, exponent}, [&](const auto& t) {
    return autograd::PowBackward1::jvp(self, exponent, result, t[0], t[1]);
  });
  if (compute_requires_grad_has_jvp(self, exponent)) {
    auto node = make_node<autograd::PowBackward1>(self, exponent);
    node->self_ = SavedVariable(self, false);
    node->exponent_ = SavedVariable(exponent, false);
    set_history(result, node);
    if (node->next_edge(1).is_valid()) node->result_ = SavedVariable(result, true);
  }
  return cap.done(result, [&] { return autograd::capture::Args{self, exponent}; });
}

Tensor pow(const Scalar& self, const Tensor& exponent) {
  autograd::capture::OpScope cap("pow", autograd::capture::OpKind::kFunctional);
  Tensor result = native::binary(BinaryOp::kPow, wrap(self, exponent, "pow"), exponent);
  autograd::fwd::propagate("pow", result, {exponent}, [&](const auto& t) {
    return autograd::PowBackward2::jvp(self, exponent, result, t[0]);
  });
  if (compute_requires_grad_has_jvp(exponent)) {
    auto node = make_node<autograd::PowBackward2>(exponent);
    node->self_ = self;
    node->exponent_ = SavedVariable(exponent, false);
    set_history(result, node);
    node->result_ = SavedVariable(result, true);
  }
  return cap.done(result, [&] { return autograd::capture::Args{self, exponent}; });
}

namespace {
Tensor max_or_min(BinaryOp op, const Tensor& self, const Tensor& other) {
  Tensor result = native::binary(op, self, other);
  autograd::fwd::propagate(binary_op_name(op), result, {self, other}, [&](const auto& t) {
    return autograd::MaximumBackward0::jvp(op == BinaryOp::kMaximum, self, other, t[0], t[1]);
  });
  if (compute_requires_grad_has_jvp(self, other)) {
    auto node = make_pooled<autograd::MaximumBackward0>(op == BinaryOp::kMaximum);
    node->set_next_edges(autograd::collect_next_edges(self, other));
    node->self_ = SavedVariable(self, false);
    node->other_ = SavedVariable(other, false);
    set_history(result, node);
  }
  return result;
}
}  // namespace

Tensor maximum(const Tensor& self, const Tensor& other) {
  autograd::capture::OpScope cap("maximum", autograd::capture::OpKind::kFunctional);
  return cap.done(max_or_min(BinaryOp::kMaximum, self, other), [&] {
    return autograd::capture::Args{self, other};
  });
}
Tensor minimum(const Tensor& self, const Tensor& other) {
  autograd::capture::OpScope cap("minimum", autograd::capture::OpKind::kFunctional);
  return cap.done(max_or_min(BinaryOp::kMinimum, self, other), [&] {
    return autograd::capture::Args{self, other};
  });
}

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  autograd::capture::OpScope cap("where", autograd::capture::OpKind::kFunctional);
  Tensor result = native::where(condition, self, other);
  autograd::fwd::propagate("where", result, {self, other}, [&](const auto& t) {
    return autograd::WhereBackward0::jvp(condition, self, other, t[0], t[1]);
  });
  if (compute_requires_grad_has_jvp(self, other)) {
    auto node = make_node<autograd::WhereBackward0>(self, other);
    node->condition_ = SavedVariable(condition, false);
    set_history(result, node);
  }
  return cap.done(result, [&] { return autograd::capture::Args{condition, self, other}; });
}
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other) {
  return where(condition, self, native::wrap_scalar(other, self.dtype(), self.device(), "where"));
}
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other) {
  return where(condition, native::wrap_scalar(self, other.dtype(), other.device(), "where"), other);
}

Tensor eq(const Tensor& a, const Tensor& b) {
  autograd::capture::OpScope cap("eq", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kEq, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor ne(const Tensor& a, const Tensor& b) {
  autograd::capture::OpScope cap("ne", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kNe, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor lt(const Tensor& a, const Tensor& b) {
  autograd::capture::OpScope cap("lt", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kLt, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor le(const Tensor& a, const Tensor& b) {
  autograd::capture::OpScope cap("le", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kLe, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor gt(const Tensor& a, const Tensor& b) {
  autograd::capture::OpScope cap("gt", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kGt, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor ge(const Tensor& a, const Tensor& b) {
  autograd::capture::OpScope cap("ge", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kGe, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor eq(const Tensor& a, const Scalar& b) {
  autograd::capture::OpScope cap("eq", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kEq, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor ne(const Tensor& a, const Scalar& b) {
  autograd::capture::OpScope cap("ne", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kNe, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor lt(const Tensor& a, const Scalar& b) {
  autograd::capture::OpScope cap("lt", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kLt, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor le(const Tensor& a, const Scalar& b) {
  autograd::capture::OpScope cap("le", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kLe, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor gt(const Tensor& a, const Scalar& b) {
  autograd::capture::OpScope cap("gt", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kGt, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor ge(const Tensor& a, const Scalar& b) {
  autograd::capture::OpScope cap("ge", autograd::capture::OpKind::kFunctional);
  return cap.done(native::binary(BinaryOp::kGe, a, b), [&] {
    return autograd::capture::Args{a, b};
  });
}
Tensor remainder(const Tensor& self, const Tensor& other) {
  return binary_op(BinaryOp::kRemainder, self, other);
}
Tensor remainder(const Tensor& self, const Scalar& other) {
  return binary_scalar_op(BinaryOp::kRemainder, self, other);
}
Tensor remainder(const Scalar& self, const Tensor& other) {
  return binary_op(BinaryOp::kRemainder, wrap(self, other, "remainder"), other);
}
Tensor fmod(const Tensor& self, const Tensor& other) {
  return binary_op(BinaryOp::kFmod, self, other);
}
Tensor fmod(const Tensor& self, const Scalar& other) {
  return binary_scalar_op(BinaryOp::kFmod, self, other);
}
Tensor floor_divide(const Tensor& self, const Tensor& other) {
  return binary_op(BinaryOp::kFloorDivide, self, other);
}
Tensor floor_divide(const Tensor& self, const Scalar& other) {
  return binary_scalar_op(BinaryOp::kFloorDivide, self, other);
}

namespace autograd {
std::optional<BinaryOp> rounding_op(std::optional<std::string_view> mode) {
  if (!mode) return std::nullopt;
  if (*mode == "trunc") return BinaryOp::kTruncDivide;
  if (*mode == "floor") return BinaryOp::kFloorDivide;
  throw ValueError(
      str("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
          "found '",
          *mode, "'"));
}
}  // namespace autograd

Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode) {
  const std::optional<BinaryOp> op = autograd::rounding_op(mode);
  return op ? binary_op(*op, self, other) : binary_op(BinaryOp::kDiv, self, other);
}
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string_view> mode) {
  const std::optional<BinaryOp> op = autograd::rounding_op(mode);
  return op ? binary_scalar_op(*op, self, other) : binary_scalar_op(BinaryOp::kDiv, self, other);
}

Tensor atan2(const Tensor& self, const Tensor& other) {
  return binary_op(BinaryOp::kAtan2, self, other);
}

Tensor floor_divide(const Scalar& self, const Tensor& other) {
  return binary_op(BinaryOp::kFloorDivide, wrap(self, other, "floor_divide"), other);
}
Tensor fmod(const Scalar& self, const Tensor& other) {
  return binary_op(BinaryOp::kFmod, wrap(self, other, "fmod"), other);
}
Tensor bitwise(BinaryOp op, const Tensor& a, const Scalar& b) { return native::binary(op, a, b); }
Tensor bitwise(BinaryOp op, const Scalar& a, const Tensor& b) {
  return native::binary(op, wrap(a, b, binary_op_name(op)), b);
}

Tensor bitwise_and(const Tensor& a, const Tensor& b) {
  return native::binary(BinaryOp::kBitwiseAnd, a, b);
}
Tensor bitwise_or(const Tensor& a, const Tensor& b) {
  return native::binary(BinaryOp::kBitwiseOr, a, b);
}
Tensor bitwise_xor(const Tensor& a, const Tensor& b) {
  return native::binary(BinaryOp::kBitwiseXor, a, b);
}
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) {
  return native::binary(BinaryOp::kShiftLeft, a, b);
}
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) {
  return native::binary(BinaryOp::kShiftRight, a, b);
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return native::binary(BinaryOp::kLogicalXor, a, b);
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return native::binary(BinaryOp::kLogicalAnd, a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return native::binary(BinaryOp::kLogicalOr, a, b);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrap(a, b, "div"), b); }

Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return logical_or(a, b); }

// ---- Tensor members ----------------------------------------------------------------------------
Tensor Tensor::pow(const Tensor& exponent) const { return mutagrad::pow(*this, exponent); }
Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const {
  return mutagrad::add(*this, other, alpha);
}
Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const {
  return mutagrad::sub(*this, other, alpha);
}
Tensor Tensor::mul(const Tensor& other) const { return mutagrad::mul(*this, other); }
Tensor Tensor::atan2(const Tensor& other) const { return mutagrad::atan2(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return mutagrad::div(*this, other); }
Tensor Tensor::maximum(const Tensor& other) const { return mutagrad::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return mutagrad::minimum(*this, other); }
Tensor Tensor::eq(const Tensor& other) const { return mutagrad::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return mutagrad::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return mutagrad::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return mutagrad::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return mutagrad::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return mutagrad::ge(*this, other); }
Tensor Tensor::logical_and(const Tensor& other) const {
  return mutagrad::logical_and(*this, other);
}
Tensor Tensor::logical_or(const Tensor& other) const { return mutagrad::logical_or(*this, other); }

}  // namespace mutagrad
