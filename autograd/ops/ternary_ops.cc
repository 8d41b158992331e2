// addcmul, addcdiv, lerp and their nodes: see ternary_ops.h.
#include "autograd/ops/ternary_ops.h"

#include <cmath>
#include <memory>
#include <utility>

#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/inplace_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/fma.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/scalar_inplace.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {
namespace {

class AddcBackward final : public Node {
 public:
  AddcBackward(bool is_div, const Scalar& value) : is_div_(is_div), value_(value) {}
  const char* name() const override { return is_div_ ? "AddcdivBackward0" : "AddcmulBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(3);
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    if (should_compute_output(0)) out[0] = grad;
    if (!should_compute_output(1) && !should_compute_output(2)) return out;
    const Tensor t1 = tensor1_.unpack(this);
    const Tensor t2 = tensor2_.unpack(this);
    if (is_div_) {
      if (should_compute_output(1)) out[1] = grad * (rdiv(t2));
      if (should_compute_output(2)) out[2] = grad.neg() * mul(t1, value_) / (t2 * t2);
    } else {
      if (should_compute_output(1)) out[1] = grad * mul(t2, value_);
      if (should_compute_output(2)) out[2] = grad * mul(t1, value_);
    }
    return out;
  }
  // Tangent: ts + value (t1' t2 + t1 t2') for addcmul, ts + value (t1' / t2 - t1 t2' / t2^2)
  // for addcdiv (t1, t2: the operands' primals; undefined tangents are zero).
  static Tensor jvp(bool is_div, const Tensor& t1, const Tensor& t2, const Scalar& value,
                    const Tensor& ts, const Tensor& tt1, const Tensor& tt2) {
    Tensor term;
    if (tt1.defined()) term = is_div ? tt1 / t2 : tt1 * t2;
    if (tt2.defined()) {
      Tensor other = is_div ? (tt2 * t1).neg() / (t2 * t2) : tt2 * t1;
      term = term.defined() ? term + other : other;
    }
    if (term.defined()) term = term * value;
    if (!ts.defined()) return term;
    return term.defined() ? term + ts : ts;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("tensor1", tensor1_);
    v.visit("tensor2", tensor2_);
  }
  SavedVariable tensor1_, tensor2_;

 private:
  // value / t2, differentiably (a 0-dim tensor of t2's dtype over t2).
  Tensor rdiv(const Tensor& t2) const {
    return div(native::wrap_scalar(value_, t2.dtype(), t2.device(), "addcdiv"), t2);
  }
  bool is_div_;
  Scalar value_;
};

class LerpBackward0 final : public Node {
 public:
  explicit LerpBackward0(const Scalar& weight) : weight_(weight) {}
  const char* name() const override { return "LerpBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    if (should_compute_output(0)) out[0] = grad * Scalar(1.0 - weight_.to<double>());
    if (should_compute_output(1)) out[1] = grad * weight_;
    return out;
  }
  // Tangent: (1 - weight) ts + weight te.
  static Tensor jvp(const Scalar& weight, const Tensor& ts, const Tensor& te) {
    const double w = weight.to<double>();
    Tensor out;
    if (ts.defined()) out = ts * (1.0 - w);
    if (te.defined()) out = out.defined() ? out + te * w : te * w;
    return out;
  }
  Scalar weight_;
};

class LerpBackward1 final : public Node {
 public:
  const char* name() const override { return "LerpBackward1"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(3);
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    if (should_compute_output(0) || should_compute_output(1)) {
      const Tensor weight = weight_.unpack(this);
      if (should_compute_output(0)) out[0] = grad * rsub(weight, 1);
      if (should_compute_output(1)) out[1] = grad * weight;
    }
    if (should_compute_output(2)) out[2] = grad * (end_.unpack(this) - self_.unpack(this));
    return out;
  }
  // Tangent: ts + weight (te - ts) + tw (end - self).
  static Tensor jvp(const Tensor& self, const Tensor& end, const Tensor& weight, const Tensor& ts,
                    const Tensor& te, const Tensor& tw) {
    const Tensor s = fwd::tangent_or_zeros(ts, self);
    Tensor out = s + weight * (fwd::tangent_or_zeros(te, end) - s);
    if (tw.defined()) out = out + tw * (end - self);
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("end", end_);
    v.visit("weight", weight_);
  }
  SavedVariable self_, end_, weight_;
};

MutationSite site_of(const char* op, CallSite site) {
  return MutationSite{op, site.file, site.line};
}

bool is_one(const Scalar& s) { return !s.is_bool() && s.to<double>() == 1.0; }

// What a node saves of an operand of an in-place write into `self`: the operand, or when it
// aliases self a detached alias (Note [Saving an operand that aliases the written tensor]).
SavedVariable save_operand(const Tensor& self, const Tensor& operand, bool in_place) {
  const bool aliases = in_place && operand.version_counter().is_same(self.version_counter());
  return SavedVariable(aliases ? alias_with_current_edge(operand) : operand, /*is_output=*/false);
}

void check_defined(const char* op, const char* what, const Tensor& t) {
  if (!t.defined()) {
    throw ValueError(str(op, "(): argument '", what, "' is an undefined tensor; pass a tensor"));
  }
}

// The dtype addcmul/addcdiv compute in, after PyTorch's checks.
ScalarType addc_dtype(const char* op, bool is_div, const Tensor& self, const Tensor& t1,
                      const Tensor& t2, const Scalar& value) {
  check_defined(op, "self", self);
  check_defined(op, "tensor1", t1);
  check_defined(op, "tensor2", t2);
  if (is_div && !t1.is_floating_point() && !t2.is_floating_point()) {
    throw DTypeError(str(op, "(): integer division with addcdiv is not supported (tensor1 is ",
                         dtype_name(t1.dtype()), ", tensor2 is ", dtype_name(t2.dtype()),
                         "); convert one of them to a floating dtype first"));
  }
  const ScalarType compute =
      promote_types(native::result_type(self, t1), native::result_type(self, t2));
  if (compute == kBool) {
    throw DTypeError(str(op, "(): \"", op,
                         "\" not implemented for 'Bool'; convert the tensors to a numeric dtype"));
  }
  if (value.is_floating_point() && !is_floating_point(compute)) {
    throw DTypeError(str(op,
                         "(): for integral input tensors, argument value must not be a floating "
                         "point number (got value=",
                         value, " for ", dtype_name(compute),
                         " tensors); pass an integer value or convert the tensors to a floating "
                         "dtype"));
  }
  check_scalar_fits(value, compute, op);
  return compute;
}

// (value * t1) op t2 in `compute`, rounded per op as PyTorch's kernel.
Tensor addc_term(bool is_div, const Tensor& t1, const Tensor& t2, const Scalar& value,
                 ScalarType compute) {
  Tensor a = native::to(t1, compute);
  if (!is_one(value)) a = native::binary(BinaryOp::kMul, a, value);
  return native::binary(is_div ? BinaryOp::kDiv : BinaryOp::kMul, a, native::to(t2, compute));
}

// addcmul on float32/float64 is one FMA, fma(value * t1, t2, self), as torch's (Note [Torch's
// fused multiply-adds] in tensor/native/fma.h); addcdiv is not fused (a division), so each op
// rounds, as torch's.
Tensor addc_value(bool is_div, const Tensor& self, const Tensor& t1, const Tensor& t2,
                  const Scalar& value, ScalarType compute) {
  if (!is_div && native::has_fma(compute)) {
    return native::fma(FmaOp::kAddcmul, self, t1, t2, value.to<double>(), compute);
  }
  return native::binary(BinaryOp::kAdd, native::to(self, compute),
                        addc_term(is_div, t1, t2, value, compute));
}

void check_shape_into(const char* op, const Tensor& self, IntArrayRef shape) {
  if (!self.sizes().equals(shape)) {
    throw ShapeError(str(op, "(): output with shape ", self.sizes(),
                         " doesn't match the broadcast shape ", shape,
                         "; an in-place op cannot change its tensor's shape, use the "
                         "out-of-place op"));
  }
}

void check_cast_into(const char* op, const Tensor& self, ScalarType result) {
  if (!can_cast(result, self.dtype())) {
    throw DTypeError(str(op, "(): result type ", legacy_type_name(result),
                         " can't be cast to the desired output type ",
                         legacy_type_name(self.dtype()),
                         "; convert the tensor first (x = x.to(kFloat32)) or use the "
                         "out-of-place op"));
  }
}

std::shared_ptr<Node> make_addc_node(bool is_div, const Tensor& self, const Tensor& t1,
                                     const Tensor& t2, const Scalar& value, bool in_place) {
  auto node = make_pooled<AddcBackward>(is_div, value);
  node->set_next_edges(collect_next_edges(self, t1, t2));
  if (tensor_requires_grad(t1) || tensor_requires_grad(t2)) {
    node->tensor1_ = save_operand(self, t1, in_place);
    node->tensor2_ = save_operand(self, t2, in_place);
  }
  return node;
}

Tensor addc(bool is_div, const Tensor& self, const Tensor& t1, const Tensor& t2,
            const Scalar& value) {
  const char* op = is_div ? "addcdiv" : "addcmul";
  const ScalarType compute = addc_dtype(op, is_div, self, t1, t2, value);
  broadcast_shapes(broadcast_shapes(self.sizes(), t1.sizes(), op), t2.sizes(), op);
  Tensor result = addc_value(is_div, self, t1, t2, value, compute);
  fwd::propagate(op, result, {self, t1, t2}, [&](const auto& t) {
    return AddcBackward::jvp(is_div, t1, t2, value, t[0], t[1], t[2]);
  });
  if (compute_requires_grad_has_jvp(self, t1, t2) && is_floating_point(compute)) {
    set_history(result, make_addc_node(is_div, self, t1, t2, value, /*in_place=*/false));
  }
  return result;
}

void addc_(bool is_div, const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value,
           const MutationSite& site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self, t1, t2);
  check_inplace(self, requires_grad);
  const ScalarType compute = addc_dtype(site.op, is_div, self, t1, t2, value);
  check_shape_into(
      site.op, self,
      broadcast_shapes(broadcast_shapes(self.sizes(), t1.sizes(), site.op), t2.sizes(), site.op));
  check_cast_into(site.op, self, compute);
  native::assert_no_internal_overlap(self, site.op);
  // Note [Tangents under mutation]: computed before the write, from the operands' old values.
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {t1, t2}, [&](const auto& t) {
    return AddcBackward::jvp(is_div, t1, t2, value, t[0], t[1], t[2]);
  });
  std::shared_ptr<Node> node;
  if (requires_grad && self.is_floating_point()) {
    node = make_addc_node(is_div, self, t1, t2, value, /*in_place=*/true);
  }
  if (native::is_addcmul_fast(self, t1, t2)) {
    // No temporaries (tensor/native/scalar_inplace.h); the same rounding as addc_value.
    if (is_div) {
      native::addcdiv_inplace(self, t1, t2, value.to<double>(), &site);  // bumps once, writes
    } else {
      native::fma_inplace(FmaOp::kAddcmul, self, t1, t2, value.to<double>(), &site);  // the same
    }
    if (node) rebase_history(self, node);
    fwd::write_tangents(self, std::move(tangents), site.op);
    return;
  }
  // Computed before the write: the operands may alias self.
  const Tensor result = addc_value(is_div, self, t1, t2, value, compute);
  native::copy_(self, result, &site);  // checks, bumps once, writes
  if (node) rebase_history(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}

void check_lerp_dtypes(const char* op, const Tensor& self, const Tensor& end,
                       const Tensor* weight) {
  check_defined(op, "self", self);
  check_defined(op, "end", end);
  if (!self.is_floating_point()) {
    throw DTypeError(str(op, "(): \"lerp\" is implemented for floating tensors only, got ",
                         dtype_name(self.dtype()), "; convert with .to(kFloat32)"));
  }
  if (end.dtype() != self.dtype()) {
    throw DTypeError(str(op, "(): expected dtype ", dtype_name(self.dtype()),
                         " for `end` but got dtype ", dtype_name(end.dtype()),
                         "; convert end with .to(self.dtype())"));
  }
  if (weight != nullptr) {
    check_defined(op, "weight", *weight);
    if (weight->dtype() != self.dtype()) {
      throw DTypeError(str(op, "(): expected dtype ", dtype_name(self.dtype()),
                           " for `weight` but got dtype ", dtype_name(weight->dtype()),
                           "; convert weight with .to(self.dtype())"));
    }
  }
}

// 1 - w as PyTorch's kernel computes it: in the tensor's dtype.
Scalar one_minus(const Scalar& w, ScalarType dtype) {
  if (dtype == kFloat32) return Scalar(static_cast<double>(1.0f - w.to<float>()));
  return Scalar(1.0 - w.to<double>());
}

// lerp on float32/float64 is torch's pair of FMAs (Note [Torch's fused multiply-adds] in
// tensor/native/fma.h); float16 and bfloat16 compose the same formula op by op.
Tensor lerp_value(const Tensor& self, const Tensor& end, const Scalar& weight) {
  if (native::has_fma(self.dtype())) {
    return native::fma(FmaOp::kLerp, self, end, Tensor(), weight.to<double>(), self.dtype());
  }
  const Tensor diff = native::binary(BinaryOp::kSub, end, self);
  if (std::abs(weight.to<double>()) < 0.5) {
    return native::binary(BinaryOp::kAdd, self, native::binary(BinaryOp::kMul, diff, weight));
  }
  return native::binary(BinaryOp::kSub, end,
                        native::binary(BinaryOp::kMul, diff, one_minus(weight, self.dtype())));
}

Tensor lerp_value(const Tensor& self, const Tensor& end, const Tensor& weight) {
  if (native::has_fma(self.dtype())) {
    return native::fma(FmaOp::kLerp, self, end, weight, 0.0, self.dtype());
  }
  const Tensor diff = native::binary(BinaryOp::kSub, end, self);
  const Tensor small = native::binary(BinaryOp::kLt, native::unary(UnaryOp::kAbs, weight),
                                      native::wrap_scalar(0.5, weight.dtype(), weight.device()));
  const Tensor low =
      native::binary(BinaryOp::kAdd, self, native::binary(BinaryOp::kMul, weight, diff));
  const Tensor rest = native::binary(
      BinaryOp::kSub, native::wrap_scalar(1, weight.dtype(), weight.device()), weight);
  const Tensor high =
      native::binary(BinaryOp::kSub, end, native::binary(BinaryOp::kMul, diff, rest));
  return native::where(small, low, high);
}

std::shared_ptr<Node> make_lerp_node(const Tensor& self, const Tensor& end, const Tensor& weight,
                                     const Tensor& self_value, bool in_place) {
  auto node = make_node<LerpBackward1>(self, end, weight);
  if (tensor_requires_grad(self) || tensor_requires_grad(end)) {
    node->weight_ = save_operand(self, weight, in_place);
  }
  if (tensor_requires_grad(weight)) {
    node->self_ = SavedVariable(self_value, /*is_output=*/false);
    node->end_ = save_operand(self, end, in_place);
  }
  return node;
}

void lerp_impl_(const Tensor& self, const Tensor& end, const Scalar* weight_scalar,
                const Tensor* weight, const MutationSite& site) {
  const Tensor no_weight;
  const Tensor& w = weight != nullptr ? *weight : no_weight;
  const bool requires_grad = compute_requires_grad_has_jvp(self, end, w);
  check_inplace(self, requires_grad);
  check_lerp_dtypes(site.op, self, end, weight);
  if (weight_scalar != nullptr) check_scalar_fits(*weight_scalar, self.dtype(), site.op);
  DimVector shape = broadcast_shapes(self.sizes(), end.sizes(), site.op);
  if (weight != nullptr) shape = broadcast_shapes(shape, weight->sizes(), site.op);
  check_shape_into(site.op, self, shape);
  native::assert_no_internal_overlap(self, site.op);
  // Note [Tangents under mutation]: computed before the write, from the operands' old values.
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {end, w}, [&](const auto& t) {
    return weight != nullptr ? LerpBackward1::jvp(self, end, *weight, t[0], t[1], t[2])
                             : LerpBackward0::jvp(*weight_scalar, t[0], t[1]);
  });
  std::shared_ptr<Node> node;
  if (requires_grad) {
    if (weight != nullptr) {
      // LerpBackward1 needs self's value before the write for weight's gradient.
      const Tensor before = tensor_requires_grad(*weight) ? self.clone() : Tensor();
      node = make_lerp_node(self, end, *weight, before, /*in_place=*/true);
    } else {
      node = make_pooled<LerpBackward0>(*weight_scalar);
      node->set_next_edges(collect_next_edges(self, end));
    }
  }
  const bool fast = native::has_fma(self.dtype()) &&
                    (weight != nullptr ? native::is_addcmul_fast(self, end, *weight)
                                       : native::is_axpy_fast(self, end));
  if (fast) {  // no temporaries: lerp_value's bits, in place (bumps once, writes)
    native::fma_inplace(FmaOp::kLerp, self, end, weight != nullptr ? *weight : no_weight,
                        weight != nullptr ? 0.0 : weight_scalar->to<double>(), &site);
  } else {
    const Tensor value =
        weight != nullptr ? lerp_value(self, end, *weight) : lerp_value(self, end, *weight_scalar);
    native::copy_(self, value, &site);  // checks, bumps once, writes
  }
  if (node) rebase_history(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}

}  // namespace

void addcmul_(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value,
              const MutationSite& site) {
  addc_(/*is_div=*/false, self, tensor1, tensor2, value, site);
}
void addcdiv_(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value,
              const MutationSite& site) {
  addc_(/*is_div=*/true, self, tensor1, tensor2, value, site);
}
void lerp_(const Tensor& self, const Tensor& end, const Scalar& weight, const MutationSite& site) {
  lerp_impl_(self, end, &weight, nullptr, site);
}
void lerp_(const Tensor& self, const Tensor& end, const Tensor& weight, const MutationSite& site) {
  lerp_impl_(self, end, nullptr, &weight, site);
}

}  // namespace autograd

Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value) {
  return autograd::addc(/*is_div=*/false, self, tensor1, tensor2, value);
}
Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value) {
  return autograd::addc(/*is_div=*/true, self, tensor1, tensor2, value);
}

Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight) {
  autograd::check_lerp_dtypes("lerp", self, end, nullptr);
  check_scalar_fits(weight, self.dtype(), "lerp");  // converted to self's dtype, as torch's
  Tensor result = autograd::lerp_value(self, end, weight);
  autograd::fwd::propagate("lerp", result, {self, end}, [&](const auto& t) {
    return autograd::LerpBackward0::jvp(weight, t[0], t[1]);
  });
  if (autograd::compute_requires_grad_has_jvp(self, end)) {
    auto node = make_pooled<autograd::LerpBackward0>(weight);
    node->set_next_edges(autograd::collect_next_edges(self, end));
    autograd::set_history(result, node);
  }
  return result;
}

Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight) {
  autograd::check_lerp_dtypes("lerp", self, end, &weight);
  Tensor result = autograd::lerp_value(self, end, weight);
  autograd::fwd::propagate("lerp", result, {self, end, weight}, [&](const auto& t) {
    return autograd::LerpBackward1::jvp(self, end, weight, t[0], t[1], t[2]);
  });
  if (autograd::compute_requires_grad_has_jvp(self, end, weight)) {
    autograd::set_history(result,
                          autograd::make_lerp_node(self, end, weight, self, /*in_place=*/false));
  }
  return result;
}

using autograd::site_of;

Tensor& Tensor::addcmul_(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value,
                         CallSite site) {
  autograd::addcmul_(*this, tensor1, tensor2, value, site_of("addcmul_", site));
  return *this;
}
Tensor& Tensor::addcdiv_(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value,
                         CallSite site) {
  autograd::addcdiv_(*this, tensor1, tensor2, value, site_of("addcdiv_", site));
  return *this;
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& weight, CallSite site) {
  autograd::lerp_(*this, end, weight, site_of("lerp_", site));
  return *this;
}
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& weight, CallSite site) {
  autograd::lerp_(*this, end, weight, site_of("lerp_", site));
  return *this;
}
Tensor Tensor::addcmul(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) const {
  return mutagrad::addcmul(*this, tensor1, tensor2, value);
}
Tensor Tensor::addcdiv(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) const {
  return mutagrad::addcdiv(*this, tensor1, tensor2, value);
}
Tensor Tensor::lerp(const Tensor& end, const Scalar& weight) const {
  return mutagrad::lerp(*this, end, weight);
}
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const {
  return mutagrad::lerp(*this, end, weight);
}

}  // namespace mutagrad
