// softmax, log_softmax: see activation_ops.h.
//
// Note [Softmax backward in differentiable ops]
// PyTorch's backward nodes call _softmax_backward_data, whose own backward is another node.
// Ours write the same formulas with differentiable ops (y * (g - sum(g * y)) and
// g - exp(y) * sum(g)), so double backward (gradgradcheck, HVP) works without a second kernel;
// the first-order node names are PyTorch's.
#include "autograd/ops/activation_ops.h"

#include <memory>

#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/unary_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {
namespace {

class SoftmaxBackward0 final : public Node {
 public:
  const char* name() const override { return "SoftmaxBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor y = result_.unpack(this);
    const Tensor& g = grads[0];
    if (y.dim() == 0) return {g * 0.0};  // one element: the result is constant
    return {y * (g - mutagrad::sum(g * y, {dim_}, /*keepdim=*/true))};
  }
  // Tangent: the same formula (the Jacobian diag(y) - y y^T is symmetric).
  static Tensor jvp(const Tensor& y, int64_t dim, const Tensor& t) {
    if (y.dim() == 0) return t * 0.0;
    return y * (t - mutagrad::sum(t * y, {dim}, /*keepdim=*/true));
  }
  void visit_saved(SavedVisitor& v) override { v.visit("result", result_); }
  int64_t dim_ = 0;
  SavedVariable result_;
};

class LogSoftmaxBackward0 final : public Node {
 public:
  const char* name() const override { return "LogSoftmaxBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor y = result_.unpack(this);
    const Tensor& g = grads[0];
    if (y.dim() == 0) return {g * 0.0};
    return {g - y.exp() * mutagrad::sum(g, {dim_}, /*keepdim=*/true)};
  }
  // Tangent: t - Σ softmax · t (the transpose of the backward's g - softmax Σ g).
  static Tensor jvp(const Tensor& y, int64_t dim, const Tensor& t) {
    if (y.dim() == 0) return t * 0.0;
    return t - mutagrad::sum(y.exp() * t, {dim}, /*keepdim=*/true);
  }
  void visit_saved(SavedVisitor& v) override { v.visit("result", result_); }
  int64_t dim_ = 0;
  SavedVariable result_;
};

// The input as the op computes it: converted to `dtype` (differentiably) when given; floating.
Tensor softmax_input(const Tensor& self, std::optional<ScalarType> dtype, const char* op) {
  const Tensor x = dtype && *dtype != self.dtype() ? self.to(*dtype) : self;
  if (!x.is_floating_point()) {
    throw DTypeError(str(op, "(): expected a floating point input, got ", dtype_name(x.dtype()),
                         "; pass dtype=kFloat32 or convert the input with .to(kFloat32)"));
  }
  return x;
}

// x - max(x, dim) (the maximum taken as 0 where it is infinite, so that a row of -inf gives
// NaN as PyTorch's and finite rows never overflow) and log(sum(exp(of that))), both keepdim.
// Raw ops: no graph.
std::pair<Tensor, Tensor> shifted_and_log_sum(const Tensor& x, int64_t dim) {
  const DimVector dims{dim};
  Tensor m = native::reduce(ReduceOp::kMax, x, dims, /*keepdim=*/true);
  m = native::where(native::unary(UnaryOp::kIsInf, m),
                    native::wrap_scalar(0, x.dtype(), x.device()), m);
  Tensor shifted = native::binary(BinaryOp::kSub, x, m);
  Tensor s = native::reduce(ReduceOp::kSum, native::unary(UnaryOp::kExp, shifted), dims, true);
  return {std::move(shifted), native::unary(UnaryOp::kLog, s)};
}

template <typename NodeT>
Tensor softmax_family(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, bool log,
                      const char* op) {
  const Tensor x = softmax_input(self, dtype, op);
  const int64_t d = wrap_dim(dim, x.dim() == 0 ? 1 : x.dim(), op);
  // A 0-dim input is one element along its only dim: as a [1] tensor.
  const Tensor x1 = x.dim() == 0 ? native::unsqueeze(native::detach(x), 0) : native::detach(x);
  Tensor result;
  if (x1.numel() == 0) {
    result = native::binary(BinaryOp::kMul, x1, Scalar(1.0));
  } else {
    auto [shifted, log_sum] = shifted_and_log_sum(x1, d);
    result = log ? native::binary(BinaryOp::kSub, shifted, log_sum)
                 : native::unary(UnaryOp::kExp, native::binary(BinaryOp::kSub, shifted, log_sum));
  }
  if (x.dim() == 0) result = native::squeeze(result, 0);
  fwd::propagate(op, result, {x},
                 [&](const auto& t) { return NodeT::jvp(result, x.dim() == 0 ? 0 : d, t[0]); });
  if (compute_requires_grad_has_jvp(x)) {
    auto node = make_node<NodeT>(x);
    node->dim_ = x.dim() == 0 ? 0 : d;
    set_history(result, node);
    node->result_ = SavedVariable(result, /*is_output=*/true);
  }
  return result;
}

}  // namespace
}  // namespace autograd

Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return autograd::softmax_family<autograd::SoftmaxBackward0>(self, dim, dtype, false, "softmax");
}

Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return autograd::softmax_family<autograd::LogSoftmaxBackward0>(self, dim, dtype, true,
                                                                 "log_softmax");
}

Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return mutagrad::softmax(*this, dim, dtype);
}
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return mutagrad::log_softmax(*this, dim, dtype);
}

}  // namespace mutagrad
