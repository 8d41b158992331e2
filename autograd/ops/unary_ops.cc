// Element-wise unary ops: each forward function and its backward node, side by side.
#include "autograd/ops/unary_ops.h"

#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/copy_ops.h"
#include "autograd/ops/node_factories.h"
#include "autograd/saved_variable.h"
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
    return {grads[0] * (1 - result * result)};
  }
};

class SigmoidBackward0 final : public SavedOneNode {
 public:
  SigmoidBackward0() : SavedOneNode("result") {}
  const char* name() const override { return "SigmoidBackward0"; }
  VariableList apply(VariableList&& grads) override {
    Tensor result = saved();
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
  Scalar exponent_;
};

class ClampBackward1 final : public SavedOneNode {
 public:
  ClampBackward1() : SavedOneNode("self") {}
  const char* name() const override { return "ClampBackward1"; }
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
};

bool unary_saves_result(UnaryOp op) {
  switch (op) {
    case UnaryOp::kExp:
    case UnaryOp::kSqrt:
    case UnaryOp::kTanh:
    case UnaryOp::kSigmoid:
    case UnaryOp::kRelu:
      return true;
    default:
      return false;
  }
}

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
      node = std::make_shared<NegBackward0>();
      break;
    case UnaryOp::kAbs:
      node = std::make_shared<AbsBackward0>();
      break;
    case UnaryOp::kExp:
      node = std::make_shared<ExpBackward0>();
      break;
    case UnaryOp::kLog:
      node = std::make_shared<LogBackward0>();
      break;
    case UnaryOp::kSqrt:
      node = std::make_shared<SqrtBackward0>();
      break;
    case UnaryOp::kSin:
      node = std::make_shared<SinBackward0>();
      break;
    case UnaryOp::kCos:
      node = std::make_shared<CosBackward0>();
      break;
    case UnaryOp::kTanh:
      node = std::make_shared<TanhBackward0>();
      break;
    case UnaryOp::kSigmoid:
      node = std::make_shared<SigmoidBackward0>();
      break;
    case UnaryOp::kRelu:
      node = std::make_shared<ReluBackward0>();
      break;
    case UnaryOp::kPowScalar: {
      auto pow = std::make_shared<PowBackward0>();
      pow->exponent_ = args.arg;
      node = pow;
      break;
    }
    case UnaryOp::kClamp: {
      auto clamp = std::make_shared<ClampBackward1>();
      if (args.has_arg) clamp->min_ = args.arg;
      if (args.has_arg2) clamp->max_ = args.arg2;
      node = clamp;
      break;
    }
    case UnaryOp::kLogicalNot:
      MG_INTERNAL_ASSERT(false, "logical_not is not differentiable");
  }
  node->set_next_edges(collect_next_edges(self));
  if (op != UnaryOp::kNeg && !unary_saves_result(op)) {
    saves_self = static_cast<SavedOneNode*>(node.get());
    saves_self->saved_ = SavedVariable(self_value, /*is_output=*/false);
  }
  return node;
}

}  // namespace autograd

using autograd::compute_requires_grad;
using autograd::set_history;

namespace {

// result = op(self), recording the op's node when self requires grad.
Tensor unary_op(UnaryOp op, const Tensor& self, const UnaryArgs& args = {}) {
  Tensor result = native::unary(op, self, args);
  if (compute_requires_grad(self)) {
    std::shared_ptr<autograd::Node> node = autograd::make_unary_node(op, self, args, self);
    set_history(result, node);
    if (autograd::unary_saves_result(op)) autograd::save_unary_result(*node, result);
  }
  return result;
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

Tensor logical_not(const Tensor& self) { return native::unary(UnaryOp::kLogicalNot, self); }

Tensor sign(const Tensor& self) {
  Tensor pos = native::binary(BinaryOp::kGt, self, Scalar(0));
  Tensor neg = native::binary(BinaryOp::kLt, self, Scalar(0));
  return native::binary(BinaryOp::kSub, native::to(pos, self.dtype()),
                        native::to(neg, self.dtype()));
}

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

}  // namespace mutagrad
