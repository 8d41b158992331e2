// clamp with tensor bounds: see clamp_ops.h.
#include "autograd/ops/clamp_ops.h"

#include <memory>
#include <utility>

#include "autograd/capture_hook.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/inplace_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

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
  // Tangent: each element takes the tangent of the operand the backward routes it to (self's
  // inside the bounds, min's below, max's above).
  static Tensor jvp(const Tensor& self, const Tensor& min, const Tensor& max, const Tensor& ts,
                    const Tensor& tmin, const Tensor& tmax) {
    Tensor pass;
    if (min.defined()) pass = self.ge(min);
    if (max.defined()) pass = pass.defined() ? pass.logical_and(self.le(max)) : self.le(max);
    Tensor out = fwd::tangent_or_zeros(ts, self);
    if (pass.defined()) out = where(pass, out, 0.0);
    if (min.defined() && tmin.defined()) {
      Tensor below = self.lt(min);
      if (max.defined()) below = below.logical_and(min.lt(max));
      out = out + where(below, tmin, 0.0);
    }
    if (max.defined() && tmax.defined()) {
      Tensor above = self.gt(max);
      if (min.defined()) above = above.logical_or(max.lt(min));
      out = out + where(above, tmax, 0.0);
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
  autograd::capture::OpScope cap("clamp", autograd::capture::OpKind::kFunctional);
  if (!min.defined() && !max.defined()) {
    throw ValueError("clamp(): at least one of 'min' or 'max' must not be None; pass a bound");
  }
  Tensor result = self;
  if (min.defined()) result = native::binary(BinaryOp::kMaximum, result, min);
  if (max.defined()) result = native::binary(BinaryOp::kMinimum, result, max);
  autograd::fwd::propagate("clamp", result, {self, min, max}, [&](const auto& t) {
    return autograd::ClampBackward0::jvp(self, min, max, t[0], t[1], t[2]);
  });
  if (autograd::compute_requires_grad_has_jvp(self, min, max) && result.is_floating_point()) {
    auto node = autograd::make_node<autograd::ClampBackward0>(self, min, max);
    node->self_ = autograd::SavedVariable(self, /*is_output=*/false);
    if (min.defined()) node->min_ = autograd::SavedVariable(min, /*is_output=*/false);
    if (max.defined()) node->max_ = autograd::SavedVariable(max, /*is_output=*/false);
    autograd::set_history(result, node);
  }
  return cap.done(result, [&] { return autograd::capture::Args{self, min, max}; });
}

const Tensor& clamp_(const Tensor& self, const Tensor& min, const Tensor& max, CallSite site) {
  autograd::capture::OpScope cap("clamp", autograd::capture::OpKind::kInPlace);
  if (!min.defined() && !max.defined()) {
    throw ValueError("clamp_(): at least one of 'min' or 'max' must not be None; pass a bound");
  }
  const bool requires_grad = autograd::compute_requires_grad_has_jvp(self, min, max);
  autograd::check_inplace(self, requires_grad);
  ScalarType result = self.dtype();
  for (const Tensor* bound : {&min, &max}) {
    if (!bound->defined()) continue;
    if (!self.sizes().equals(broadcast_shapes(self.sizes(), bound->sizes(), "clamp_"))) {
      throw ShapeError(str("clamp_(): output with shape ", self.sizes(),
                           " doesn't match the broadcast shape ",
                           broadcast_shapes(self.sizes(), bound->sizes(), "clamp_"),
                           "; give bounds that broadcast to the written tensor's shape"));
    }
    result = promote_types(result, native::result_type(self, *bound));
  }
  if (!autograd::can_cast(result, self.dtype())) {
    throw DTypeError(str("clamp_(): result type ", dtype_name(result),
                         " can't be cast to the desired output type ", dtype_name(self.dtype()),
                         "; convert the bounds to ", dtype_name(self.dtype()), " first"));
  }
  native::assert_no_internal_overlap(self, "clamp_");
  // The value is computed first (bounds that alias self are read before the write).
  Tensor value = native::detach(self);
  if (min.defined()) value = native::binary(BinaryOp::kMaximum, value, native::detach(min));
  if (max.defined()) value = native::binary(BinaryOp::kMinimum, value, native::detach(max));
  // ClampBackward0's tangent, from the values before the write (Note [Tangents under mutation]).
  autograd::fwd::PendingTangents tangents =
      autograd::fwd::inplace_tangents(self, {min, max}, [&](const auto& t) {
        return autograd::ClampBackward0::jvp(self, min, max, t[0], t[1], t[2]);
      });
  std::shared_ptr<autograd::ClampBackward0> node;
  if (requires_grad && self.is_floating_point()) {
    node = autograd::make_node<autograd::ClampBackward0>(self, min, max);
    node->self_ = autograd::SavedVariable(self.clone(), /*is_output=*/false);
    // Note [Saving an operand that aliases the written tensor] (autograd/history.h).
    auto saved = [&self](const Tensor& b) {
      return b.version_counter().is_same(self.version_counter())
                 ? autograd::alias_with_current_edge(b)
                 : b;
    };
    if (min.defined()) node->min_ = autograd::SavedVariable(saved(min), /*is_output=*/false);
    if (max.defined()) node->max_ = autograd::SavedVariable(saved(max), /*is_output=*/false);
  }
  const MutationSite write{"clamp_", site.file, site.line};
  native::copy_(self, value, &write);  // bumps once, writes
  if (node) autograd::rebase_history(self, node);
  autograd::fwd::write_tangents(self, std::move(tangents), "clamp_");
  return cap.done(self, [&] { return autograd::capture::Args{self, min, max}; });
}

}  // namespace mutagrad
