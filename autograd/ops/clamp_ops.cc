// clamp with tensor bounds: see clamp_ops.h.
#include "autograd/ops/clamp_ops.h"

#include <memory>

#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"

namespace mutagrad {
namespace autograd {
namespace {

class ClampBackward0 final : public Node {
 public:
  const char* name() const override { return "ClampBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(3);
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    const Tensor self = self_.unpack(this);
    const Tensor min = min_.was_saved() ? min_.unpack(this) : Tensor();
    const Tensor max = max_.was_saved() ? max_.unpack(this) : Tensor();
    const Tensor zero = zeros_like(grad);
    if (should_compute_output(0)) {
      Tensor pass;
      if (min.defined()) pass = self.ge(min);
      if (max.defined()) pass = pass.defined() ? pass.logical_and(self.le(max)) : self.le(max);
      out[0] = pass.defined() ? where(pass, grad, zero) : grad;
    }
    if (min.defined() && should_compute_output(1)) {
      Tensor below = self.lt(min);
      if (max.defined()) below = below.logical_and(min.lt(max));
      out[1] = where(below, grad, zero);
    }
    if (max.defined() && should_compute_output(2)) {
      Tensor above = self.gt(max);
      if (min.defined()) above = above.logical_or(max.lt(min));
      out[2] = where(above, grad, zero);
    }
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("min", min_);
    v.visit("max", max_);
  }
  SavedVariable self_, min_, max_;
};

}  // namespace
}  // namespace autograd

Tensor clamp(const Tensor& self, const Tensor& min, const Tensor& max) {
  if (!min.defined() && !max.defined()) {
    throw ValueError("clamp(): at least one of 'min' or 'max' must not be None; pass a bound");
  }
  Tensor result = self;
  if (min.defined()) result = native::binary(BinaryOp::kMaximum, result, min);
  if (max.defined()) result = native::binary(BinaryOp::kMinimum, result, max);
  if (autograd::compute_requires_grad(self, min, max) && result.is_floating_point()) {
    auto node = autograd::make_node<autograd::ClampBackward0>(self, min, max);
    node->self_ = autograd::SavedVariable(self, /*is_output=*/false);
    if (min.defined()) node->min_ = autograd::SavedVariable(min, /*is_output=*/false);
    if (max.defined()) node->max_ = autograd::SavedVariable(max, /*is_output=*/false);
    autograd::set_history(result, node);
  }
  return result;
}

}  // namespace mutagrad
