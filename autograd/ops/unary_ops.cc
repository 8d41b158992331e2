// Element-wise unary ops: each forward function and its backward node, side by side.
#include "autograd/ops/unary_ops.h"

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/copy_ops.h"
#include "autograd/ops/node_factories.h"
#include "autograd/saved_variable.h"
#include "tensor/native/activation_backward.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"

namespace mutagrad {
namespace autograd {

// A node whose formula needs one saved tensor: the input ("self") or the output ("result").
class SavedOneNode : public Node {
 public:
  void visit_saved(SavedVisitor& visitor) override { visitor.visit(saved_name_, saved_); }
  SavedVariable saved_;

 protected:
  explicit SavedOneNode(const char* saved_name) : saved_name_(saved_name) {}
  Tensor saved() { return saved_.unpack(this); }

 private:
  const char* saved_name_;
};

// Note [Fused activation backward] (tensor/native/activation_backward.h): tanh's and sigmoid's
// formula in one backend call when its ops would record nothing: no graph (grad mode off, or
// neither operand requires grad) and no forward-mode tangent on either, whose tangents the
// formula's ops would propagate. Undefined otherwise (the caller runs the formula's ops).
namespace {
Tensor fused_activation_grad(ActivationGrad op, const Tensor& grad, const Tensor& y) {
  if (!grad.defined() || !native::is_activation_backward_fast(grad, y)) return Tensor();
  if (GradMode::is_enabled() && (grad.requires_grad() || y.requires_grad())) return Tensor();
  if (fwd::has_tangent({y, grad})) return Tensor();
  return native::activation_backward(op, grad, y);
}
}  // namespace

class NegBackward0 final : public Node {
 public:
  const char* name() const override { return "NegBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0].neg()}; }
};

class AbsBackward0 final : public SavedOneNode {
 public:
  AbsBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "AbsBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] * sign(saved())}; }
};

class ExpBackward0 final : public SavedOneNode {
 public:
  ExpBackward0() : SavedOneNode("result") {}
  const char* name() const override { return "ExpBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] * saved()}; }
};

class LogBackward0 final : public SavedOneNode {
 public:
  LogBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "LogBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] / saved()}; }
};

class SqrtBackward0 final : public SavedOneNode {
 public:
  SqrtBackward0() : SavedOneNode("result") {}
  const char* name() const override { return "SqrtBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] / (saved() * 2)}; }
};

class SinBackward0 final : public SavedOneNode {
 public:
  SinBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "SinBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] * saved().cos()}; }
};

class CosBackward0 final : public SavedOneNode {
 public:
  CosBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "CosBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] * saved().sin().neg()}; }
};

class TanhBackward0 final : public SavedOneNode {
 public:
  TanhBackward0() : SavedOneNode("result") {}
  const char* name() const override { return "TanhBackward0"; }
  VariableList apply(VariableList&& grads) override {
    Tensor result = saved();
    Tensor fused = fused_activation_grad(ActivationGrad::kTanh, grads[0], result);
    if (fused.defined()) return {fused};
    return {grads[0] * (1 - result * result)};
  }
};

class SigmoidBackward0 final : public SavedOneNode {
 public:
  SigmoidBackward0() : SavedOneNode("result") {}
  const char* name() const override { return "SigmoidBackward0"; }
  VariableList apply(VariableList&& grads) override {
    Tensor result = saved();
    Tensor fused = fused_activation_grad(ActivationGrad::kSigmoid, grads[0], result);
    if (fused.defined()) return {fused};
    return {grads[0] * (result * (1 - result))};
  }
};

// PyTorch's threshold_backward: the gradient passes where the output is positive.
class ReluBackward0 final : public SavedOneNode {
 public:
  ReluBackward0() : SavedOneNode("result") {}
  const char* name() const override { return "ReluBackward0"; }
  VariableList apply(VariableList&& grads) override {
    return {grads[0].masked_fill(native::binary(BinaryOp::kLe, saved(), Scalar(0)), 0)};
  }
};

class PowBackward0 final : public SavedOneNode {
 public:
  PowBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "PowBackward0"; }
  VariableList apply(VariableList&& grads) override {
    Tensor self = saved();
    if (exponent_.to<double>() == 0.0) return {zeros_like(grads[0])};
    const Scalar minus_one = exponent_.is_floating_point() ? Scalar(exponent_.to<double>() - 1.0)
                                                           : Scalar(exponent_.to<int64_t>() - 1);
    return {grads[0] * (self.pow(minus_one) * exponent_)};
  }
  void visit_saved_attributes(SavedAttributeVisitor& v) const override {
    v.visit("exponent", exponent_);
  }
  Scalar exponent_;
};

// clamp with scalar bounds; clamp_min / clamp_max record it under their own names.
class ClampBackward1 final : public SavedOneNode {
 public:
  ClampBackward1() : SavedOneNode("self") {}
  const char* name() const override {
    if (named_by_side_ && min_ && !max_) return "ClampMinBackward0";
    if (named_by_side_ && max_ && !min_) return "ClampMaxBackward0";
    return "ClampBackward1";
  }
  VariableList apply(VariableList&& grads) override {
    Tensor self = saved();
    // The gradient passes where min <= self <= max.
    Tensor outside;
    if (min_) outside = native::binary(BinaryOp::kLt, self, *min_);
    if (max_) {
      Tensor above = native::binary(BinaryOp::kGt, self, *max_);
      outside = outside.defined() ? native::binary(BinaryOp::kLogicalOr, outside, above) : above;
    }
    return {grads[0].masked_fill(outside, 0)};
  }
  std::optional<Scalar> min_, max_;
  bool named_by_side_ = false;  // clamp_min / clamp_max
};

class RsqrtBackward0 final : public SavedOneNode {
 public:
  RsqrtBackward0() : SavedOneNode("result") {}
  const char* name() const override { return "RsqrtBackward0"; }
  VariableList apply(VariableList&& grads) override {
    Tensor result = saved();
    return {grads[0] * (result * result * result) * -0.5};
  }
};

class Exp2Backward0 final : public SavedOneNode {
 public:
  Exp2Backward0() : SavedOneNode("result") {}
  const char* name() const override { return "Exp2Backward0"; }
  VariableList apply(VariableList&& grads) override {
    return {grads[0] * saved() * 0.69314718055994530942};  // ln 2
  }
};

class Expm1Backward0 final : public SavedOneNode {
 public:
  Expm1Backward0() : SavedOneNode("result") {}
  const char* name() const override { return "Expm1Backward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] * (saved() + 1)}; }
};

class Log1PBackward0 final : public SavedOneNode {
 public:
  Log1PBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "Log1PBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] / (saved() + 1)}; }
};

// log2 and log10: grad / (self * ln(base)).
class LogBaseBackward final : public SavedOneNode {
 public:
  LogBaseBackward(const char* name, double ln_base)
      : SavedOneNode("self"), name_(name), ln_base_(ln_base) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override { return {grads[0] / (saved() * ln_base_)}; }

 private:
  const char* name_;
  double ln_base_;
};

// nan_to_num: the gradient passes where self is finite (grad * isfinite(self), as PyTorch).
class NanToNumBackward0 final : public SavedOneNode {
 public:
  NanToNumBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "NanToNumBackward0"; }
  VariableList apply(VariableList&& grads) override {
    const Tensor self = saved();
    return {grads[0] * native::to(native::unary(UnaryOp::kIsFinite, self), grads[0].dtype())};
  }
};

// The rounding ops are piecewise constant: zero gradient (derivatives.yaml's zeros_like).
class RoundingBackward final : public Node {
 public:
  explicit RoundingBackward(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override { return {zeros_like(grads[0])}; }

 private:
  const char* name_;
};

// frac(x) = x - trunc(x): the gradient passes.
class FracBackward0 final : public Node {
 public:
  const char* name() const override { return "FracBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0]}; }
};

class TanBackward0 final : public SavedOneNode {
 public:
  TanBackward0() : SavedOneNode("result") {}
  const char* name() const override { return "TanBackward0"; }
  VariableList apply(VariableList&& grads) override {
    Tensor result = saved();
    return {grads[0] * (result * result + 1)};
  }
};

class ReciprocalBackward0 final : public SavedOneNode {
 public:
  ReciprocalBackward0() : SavedOneNode("result") {}
  const char* name() const override { return "ReciprocalBackward0"; }
  VariableList apply(VariableList&& grads) override {
    Tensor result = saved();
    return {grads[0].neg() * (result * result)};
  }
};

// d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2).
class ErfBackward0 final : public SavedOneNode {
 public:
  ErfBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "ErfBackward0"; }
  VariableList apply(VariableList&& grads) override {
    Tensor self = saved();
    return {grads[0] * ((self * self).neg().exp() * 1.12837916709551257390)};
  }
};

// d/dy erfinv(y) = sqrt(pi) / 2 * exp(erfinv(y)^2).
class ErfinvBackward0 final : public SavedOneNode {
 public:
  ErfinvBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "ErfinvBackward0"; }
  VariableList apply(VariableList&& grads) override {
    Tensor x = saved().erfinv();
    return {grads[0] * ((x * x).exp() * 0.88622692545275801365)};
  }
};

// lgamma' = digamma, digamma' = polygamma(1, .), polygamma(n, .)' = polygamma(n + 1, .): each
// backward is the next op of the family, so every order differentiates.
class LgammaBackward0 final : public SavedOneNode {
 public:
  LgammaBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "LgammaBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] * saved().digamma()}; }
};

class DigammaBackward0 final : public SavedOneNode {
 public:
  DigammaBackward0() : SavedOneNode("self") {}
  const char* name() const override { return "DigammaBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] * saved().polygamma(1)}; }
};

// PolygammaBackward1 when recorded by polygamma_ (torch's name for the in-place form).
class PolygammaBackward0 final : public SavedOneNode {
 public:
  PolygammaBackward0() : SavedOneNode("self") {}
  const char* name() const override {
    return in_place_ ? "PolygammaBackward1" : "PolygammaBackward0";
  }
  VariableList apply(VariableList&& grads) override {
    return {grads[0] * saved().polygamma(n_ + 1)};
  }
  int64_t n_ = 0;
  bool in_place_ = false;
};

enum class Saves { kNothing, kSelf, kResult };

Saves unary_saves(UnaryOp op) {
  switch (op) {
    case UnaryOp::kExp:
    case UnaryOp::kSqrt:
    case UnaryOp::kTanh:
    case UnaryOp::kSigmoid:
    case UnaryOp::kRelu:
    case UnaryOp::kRsqrt:
    case UnaryOp::kExp2:
    case UnaryOp::kExpm1:
    case UnaryOp::kTan:
    case UnaryOp::kReciprocal:
      return Saves::kResult;
    case UnaryOp::kNeg:
    case UnaryOp::kSign:
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound:
    case UnaryOp::kTrunc:
    case UnaryOp::kFrac:
      return Saves::kNothing;
    default:
      return Saves::kSelf;
  }
}

bool unary_saves_result(UnaryOp op) { return unary_saves(op) == Saves::kResult; }
bool unary_saves_self(UnaryOp op) { return unary_saves(op) == Saves::kSelf; }

void save_unary_result(Node& node, const Tensor& result) {
  static_cast<SavedOneNode&>(node).saved_ =
      SavedVariable(result, /*is_output=*/true, is_differentiable_view(result));
}

std::shared_ptr<Node> make_unary_node(UnaryOp op, const Tensor& self, const UnaryArgs& args,
                                      const Tensor& self_value) {
  std::shared_ptr<Node> node;
  SavedOneNode* saves_self = nullptr;
  switch (op) {
    case UnaryOp::kNeg:
      node = make_pooled<NegBackward0>();
      break;
    case UnaryOp::kAbs:
      node = make_pooled<AbsBackward0>();
      break;
    case UnaryOp::kExp:
      node = make_pooled<ExpBackward0>();
      break;
    case UnaryOp::kLog:
      node = make_pooled<LogBackward0>();
      break;
    case UnaryOp::kSqrt:
      node = make_pooled<SqrtBackward0>();
      break;
    case UnaryOp::kSin:
      node = make_pooled<SinBackward0>();
      break;
    case UnaryOp::kCos:
      node = make_pooled<CosBackward0>();
      break;
    case UnaryOp::kTanh:
      node = make_pooled<TanhBackward0>();
      break;
    case UnaryOp::kSigmoid:
      node = make_pooled<SigmoidBackward0>();
      break;
    case UnaryOp::kRelu:
      node = make_pooled<ReluBackward0>();
      break;
    case UnaryOp::kPowScalar: {
      auto pow = make_pooled<PowBackward0>();
      pow->exponent_ = args.arg;
      node = pow;
      break;
    }
    case UnaryOp::kClamp: {
      auto clamp = make_pooled<ClampBackward1>();
      if (args.has_arg) clamp->min_ = args.arg;
      if (args.has_arg2) clamp->max_ = args.arg2;
      node = clamp;
      break;
    }
    case UnaryOp::kRsqrt:
      node = make_pooled<RsqrtBackward0>();
      break;
    case UnaryOp::kExp2:
      node = make_pooled<Exp2Backward0>();
      break;
    case UnaryOp::kExpm1:
      node = make_pooled<Expm1Backward0>();
      break;
    case UnaryOp::kLog1p:
      node = make_pooled<Log1PBackward0>();
      break;
    case UnaryOp::kLog2:
      node = make_pooled<LogBaseBackward>("Log2Backward0", 0.69314718055994530942);
      break;
    case UnaryOp::kLog10:
      node = make_pooled<LogBaseBackward>("Log10Backward0", 2.30258509299404568402);
      break;
    case UnaryOp::kNanToNum:
      node = make_pooled<NanToNumBackward0>();
      break;
    case UnaryOp::kSign:
      node = make_pooled<RoundingBackward>("SignBackward0");
      break;
    case UnaryOp::kFloor:
      node = make_pooled<RoundingBackward>("FloorBackward0");
      break;
    case UnaryOp::kCeil:
      node = make_pooled<RoundingBackward>("CeilBackward0");
      break;
    case UnaryOp::kTrunc:
      node = make_pooled<RoundingBackward>("TruncBackward0");
      break;
    case UnaryOp::kRound:
      node = make_pooled<RoundingBackward>(args.has_arg ? "RoundBackward1" : "RoundBackward0");
      break;
    case UnaryOp::kFrac:
      node = make_pooled<FracBackward0>();
      break;
    case UnaryOp::kTan:
      node = make_pooled<TanBackward0>();
      break;
    case UnaryOp::kErf:
      node = make_pooled<ErfBackward0>();
      break;
    case UnaryOp::kErfinv:
      node = make_pooled<ErfinvBackward0>();
      break;
    case UnaryOp::kLgamma:
      node = make_pooled<LgammaBackward0>();
      break;
    case UnaryOp::kDigamma:
      node = make_pooled<DigammaBackward0>();
      break;
    case UnaryOp::kPolygamma: {
      auto polygamma = make_pooled<PolygammaBackward0>();
      polygamma->n_ = args.arg.to<int64_t>();
      node = polygamma;
      break;
    }
    case UnaryOp::kReciprocal:
      node = make_pooled<ReciprocalBackward0>();
      break;
    case UnaryOp::kLogicalNot:
    case UnaryOp::kIsNan:
    case UnaryOp::kIsInf:
    case UnaryOp::kIsFinite:
    case UnaryOp::kBitwiseNot:
      MG_INTERNAL_ASSERT(false, unary_op_name(op), " is not differentiable");
  }
  node->set_next_edges(collect_next_edges(self));
  if (unary_saves(op) == Saves::kSelf) {
    saves_self = static_cast<SavedOneNode*>(node.get());
    saves_self->saved_ = SavedVariable(self_value, /*is_output=*/false);
  }
  return node;
}

// Note [Element-wise tangents]
// An element-wise unary op's Jacobian is diagonal, so its tangent is its backward formula
// applied to the tangent: the node above (ExpBackward0, ...) is the one formula of both modes.
// Its saves are the op's input and result, so nothing is version checked twice.
//
// tanh's and sigmoid's formulas skip even the node when nothing records (Note [Fused activation
// backward]): tanh is the MLP activation, and its node and three ops were a tenth of a small
// MLP's jvp.
Tensor unary_tangent(UnaryOp op, const Tensor& self, const UnaryArgs& args, const Tensor& result,
                     const Tensor& tangent) {
  if (!tangent.defined()) return Tensor();
  if (op == UnaryOp::kTanh || op == UnaryOp::kSigmoid) {
    Tensor fused = fused_activation_grad(
        op == UnaryOp::kTanh ? ActivationGrad::kTanh : ActivationGrad::kSigmoid, tangent, result);
    if (fused.defined()) return fused;
  }
  std::shared_ptr<Node> node = make_unary_node(op, self, args, self);
  // Saved as an input, not an output: its history is result's own, not this node's.
  if (unary_saves_result(op)) {
    static_cast<SavedOneNode&>(*node).saved_ = SavedVariable(result, /*is_output=*/false);
  }
  return node->apply({tangent})[0];
}

void name_polygamma_in_place(const Tensor& t) {
  if (auto* node = dynamic_cast<PolygammaBackward0*>(t.grad_fn().get())) node->in_place_ = true;
}

void name_clamp_by_side(const Tensor& t) {
  if (auto* node = dynamic_cast<ClampBackward1*>(t.grad_fn().get())) node->named_by_side_ = true;
}

}  // namespace autograd

using autograd::compute_requires_grad;
using autograd::set_history;

namespace {

// result = op(self), recording the op's node when self requires grad.
Tensor unary_op(UnaryOp op, const Tensor& self, const UnaryArgs& args = {}) {
  autograd::capture::OpScope cap(unary_op_name(op), autograd::capture::OpKind::kFunctional);
  Tensor result = native::unary(op, self, args);
  // Before the node saves result: a saved output keeps its tangents (forward-over-reverse).
  autograd::fwd::propagate(unary_op_name(op), result, {self}, [&](const auto& t) {
    return autograd::unary_tangent(op, self, args, result, t[0]);
  });
  if (autograd::compute_requires_grad_has_jvp(self)) {
    std::shared_ptr<autograd::Node> node = autograd::make_unary_node(op, self, args, self);
    set_history(result, node);
    if (autograd::unary_saves_result(op)) autograd::save_unary_result(*node, result);
  }
  return cap.done(result, [&] {
    return autograd::capture::Args{
        self, args.has_arg ? autograd::capture::Arg(args.arg) : autograd::capture::Arg(),
        args.has_arg2 ? autograd::capture::Arg(args.arg2) : autograd::capture::Arg()};
  });
}

}  // namespace

Tensor neg(const Tensor& self) { return unary_op(UnaryOp::kNeg, self); }
Tensor abs(const Tensor& self) { return unary_op(UnaryOp::kAbs, self); }
Tensor exp(const Tensor& self) { return unary_op(UnaryOp::kExp, self); }
Tensor log(const Tensor& self) { return unary_op(UnaryOp::kLog, self); }
Tensor sqrt(const Tensor& self) { return unary_op(UnaryOp::kSqrt, self); }
Tensor sin(const Tensor& self) { return unary_op(UnaryOp::kSin, self); }
Tensor cos(const Tensor& self) { return unary_op(UnaryOp::kCos, self); }
Tensor tanh(const Tensor& self) { return unary_op(UnaryOp::kTanh, self); }
Tensor sigmoid(const Tensor& self) { return unary_op(UnaryOp::kSigmoid, self); }
Tensor relu(const Tensor& self) { return unary_op(UnaryOp::kRelu, self); }

Tensor pow(const Tensor& self, const Scalar& exponent) {
  UnaryArgs args;
  args.arg = exponent;
  args.has_arg = true;
  return unary_op(UnaryOp::kPowScalar, self, args);
}

Tensor clamp(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max) {
  return unary_op(UnaryOp::kClamp, self, native::clamp_args(min, max, "clamp"));
}

Tensor clamp_min(const Tensor& self, const Scalar& min) {
  Tensor result = clamp(self, min, std::nullopt);
  autograd::name_clamp_by_side(result);
  return result;
}
Tensor clamp_max(const Tensor& self, const Scalar& max) {
  Tensor result = clamp(self, std::nullopt, max);
  autograd::name_clamp_by_side(result);
  return result;
}

Tensor logical_not(const Tensor& self) { return native::unary(UnaryOp::kLogicalNot, self); }

Tensor sign(const Tensor& self) { return unary_op(UnaryOp::kSign, self); }
Tensor rsqrt(const Tensor& self) { return unary_op(UnaryOp::kRsqrt, self); }
Tensor exp2(const Tensor& self) { return unary_op(UnaryOp::kExp2, self); }
Tensor expm1(const Tensor& self) { return unary_op(UnaryOp::kExpm1, self); }
Tensor log1p(const Tensor& self) { return unary_op(UnaryOp::kLog1p, self); }
Tensor log2(const Tensor& self) { return unary_op(UnaryOp::kLog2, self); }
Tensor log10(const Tensor& self) { return unary_op(UnaryOp::kLog10, self); }
Tensor floor(const Tensor& self) { return unary_op(UnaryOp::kFloor, self); }
Tensor ceil(const Tensor& self) { return unary_op(UnaryOp::kCeil, self); }
Tensor trunc(const Tensor& self) { return unary_op(UnaryOp::kTrunc, self); }
Tensor frac(const Tensor& self) { return unary_op(UnaryOp::kFrac, self); }
Tensor round(const Tensor& self, int64_t decimals) {
  return unary_op(UnaryOp::kRound, self, native::round_args(decimals));
}
Tensor nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  return unary_op(UnaryOp::kNanToNum, self,
                  native::nan_to_num_args(self.dtype(), nan, posinf, neginf));
}
Tensor isnan(const Tensor& self) { return native::unary(UnaryOp::kIsNan, self); }
Tensor isinf(const Tensor& self) { return native::unary(UnaryOp::kIsInf, self); }
Tensor isfinite(const Tensor& self) { return native::unary(UnaryOp::kIsFinite, self); }
Tensor bitwise_not(const Tensor& self) { return native::unary(UnaryOp::kBitwiseNot, self); }
Tensor tan(const Tensor& self) { return unary_op(UnaryOp::kTan, self); }
Tensor erf(const Tensor& self) { return unary_op(UnaryOp::kErf, self); }
Tensor erfinv(const Tensor& self) { return unary_op(UnaryOp::kErfinv, self); }
Tensor lgamma(const Tensor& self) { return unary_op(UnaryOp::kLgamma, self); }
Tensor digamma(const Tensor& self) { return unary_op(UnaryOp::kDigamma, self); }
Tensor polygamma(int64_t n, const Tensor& self) {
  return unary_op(UnaryOp::kPolygamma, self, native::polygamma_args(n));
}
Tensor reciprocal(const Tensor& self) { return unary_op(UnaryOp::kReciprocal, self); }
Tensor square(const Tensor& self) { return pow(self, 2); }

Tensor operator-(const Tensor& self) { return neg(self); }
Tensor operator!(const Tensor& self) { return logical_not(self); }

// ---- Tensor members ----------------------------------------------------------------------------
Tensor Tensor::neg() const { return mutagrad::neg(*this); }
Tensor Tensor::abs() const { return mutagrad::abs(*this); }
Tensor Tensor::exp() const { return mutagrad::exp(*this); }
Tensor Tensor::log() const { return mutagrad::log(*this); }
Tensor Tensor::sqrt() const { return mutagrad::sqrt(*this); }
Tensor Tensor::sin() const { return mutagrad::sin(*this); }
Tensor Tensor::cos() const { return mutagrad::cos(*this); }
Tensor Tensor::tanh() const { return mutagrad::tanh(*this); }
Tensor Tensor::sigmoid() const { return mutagrad::sigmoid(*this); }
Tensor Tensor::relu() const { return mutagrad::relu(*this); }
Tensor Tensor::pow(const Scalar& exponent) const { return mutagrad::pow(*this, exponent); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return mutagrad::clamp(*this, min, max);
}
Tensor Tensor::logical_not() const { return mutagrad::logical_not(*this); }
Tensor Tensor::sign() const { return mutagrad::sign(*this); }
Tensor Tensor::rsqrt() const { return mutagrad::rsqrt(*this); }
Tensor Tensor::exp2() const { return mutagrad::exp2(*this); }
Tensor Tensor::expm1() const { return mutagrad::expm1(*this); }
Tensor Tensor::log1p() const { return mutagrad::log1p(*this); }
Tensor Tensor::log2() const { return mutagrad::log2(*this); }
Tensor Tensor::log10() const { return mutagrad::log10(*this); }
Tensor Tensor::floor() const { return mutagrad::floor(*this); }
Tensor Tensor::ceil() const { return mutagrad::ceil(*this); }
Tensor Tensor::trunc() const { return mutagrad::trunc(*this); }
Tensor Tensor::frac() const { return mutagrad::frac(*this); }
Tensor Tensor::round(int64_t decimals) const { return mutagrad::round(*this, decimals); }
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) const {
  return mutagrad::nan_to_num(*this, nan, posinf, neginf);
}
Tensor Tensor::isnan() const { return mutagrad::isnan(*this); }
Tensor Tensor::isinf() const { return mutagrad::isinf(*this); }
Tensor Tensor::isfinite() const { return mutagrad::isfinite(*this); }
Tensor Tensor::bitwise_not() const { return mutagrad::bitwise_not(*this); }
Tensor Tensor::tan() const { return mutagrad::tan(*this); }
Tensor Tensor::erf() const { return mutagrad::erf(*this); }
Tensor Tensor::erfinv() const { return mutagrad::erfinv(*this); }
Tensor Tensor::lgamma() const { return mutagrad::lgamma(*this); }
Tensor Tensor::digamma() const { return mutagrad::digamma(*this); }
Tensor Tensor::polygamma(int64_t n) const { return mutagrad::polygamma(n, *this); }
Tensor Tensor::reciprocal() const { return mutagrad::reciprocal(*this); }
Tensor Tensor::square() const { return mutagrad::square(*this); }

}  // namespace mutagrad
