// In-place ops: the Tensor members copy_, fill_, zero_, add_, sub_, mul_, div_, pow_, neg_,
// relu_, sigmoid_, tanh_, exp_, sin_, cos_, tan_, erf_, erfinv_, lgamma_, digamma_, polygamma_,
// reciprocal_, square_, atan2_, clamp_/clip_, masked_fill_, bitwise_and_/or_/xor_, and the nodes
// only they record (CopyBackwards, FillBackward0/1, ZeroBackward0). The others reuse the
// out-of-place ops' nodes (node_factories.h). See the order of steps in inplace_ops.h.
#include "autograd/ops/inplace_ops.h"

#include <string>

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/node_factories.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/fma.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/scalar_inplace.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {

class CopyBackwards final : public Node {
 public:
  const char* name() const override { return "CopyBackwards"; }
  static Tensor jvp(const Tensor& self, const Tensor& tsrc) {
    if (!self.is_floating_point()) return Tensor();
    return tsrc.defined() ? tsrc
                          : zeros(self.sizes(), TensorOptions(self.dtype()).device(self.device()));
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = zeros_like(grads[0]);
    if (should_compute_output(1)) out[1] = grads[0];
    return out;
  }
};

// fill_ with a scalar (FillBackward0, one edge) or a 0-dim tensor (FillBackward1, two edges).
class FillBackward final : public Node {
 public:
  explicit FillBackward(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(num_outputs());
    if (should_compute_output(0)) out[0] = zeros_like(grads[0]);
    if (num_outputs() > 1 && should_compute_output(1)) out[1] = grads[0].sum();
    return out;
  }

 private:
  const char* name_;
};

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

namespace {

void check_cast(const Tensor& self, ScalarType result, const char* op) {
  if (!can_cast(result, self.dtype())) {
    throw DTypeError(str(op, "(): result type ", legacy_type_name(result),
                         " can't be cast to the desired output type ",
                         legacy_type_name(self.dtype()),
                         "; convert the tensor first (x = x.to(kFloat32)) or use the "
                         "out-of-place op"));
  }
}

void check_broadcast_into(const Tensor& self, IntArrayRef other, const char* op) {
  DimVector shape = broadcast_shapes(self.sizes(), other, op);
  if (!self.sizes().equals(shape)) {
    throw ShapeError(str(op, "(): output with shape ", self.sizes(),
                         " doesn't match the broadcast shape ", IntArrayRef(shape),
                         "; an in-place op cannot change its tensor's shape, use the "
                         "out-of-place op"));
  }
}

MutationSite site_of(const char* op, CallSite site) {
  return MutationSite{op, site.file, site.line};
}

// An operand that may be read while self is written: cloned when it partially overlaps self.
Tensor safe_operand(const Tensor& self, const Tensor& operand) {
  if (operand.is_same(self) || !native::may_overlap(self, operand)) return operand;
  if (operand.sizes().equals(self.sizes()) && operand.strides().equals(self.strides()) &&
      operand.storage_offset() == self.storage_offset()) {
    return operand;  // the same elements: reading and writing each in place is fine
  }
  return native::clone(operand);
}

void finish(const Tensor& self, const std::shared_ptr<Node>& node) {
  if (node) rebase_history(self, node);
}

bool is_one(const Scalar& s) { return s.to<double>() == 1.0; }

void binary_inplace_uncaptured(const Tensor& self, BinaryOp op, const Tensor& other,
                               const Scalar& alpha, const MutationSite& site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self, other);
  check_inplace(self, requires_grad);
  check_broadcast_into(self, other.sizes(), site.op);
  const ScalarType promoted = native::result_type(self, other);
  native::check_alpha(promoted, alpha, site.op);
  // Before alpha scales it, other's own dtype (x.sub_(mask, alpha=2) is refused, as torch does).
  if (!is_one(alpha)) native::check_binary_dtypes(op, self.dtype(), other.dtype());
  check_cast(self, native::binary_compute_dtype(op, promoted), site.op);
  native::assert_no_internal_overlap(self, site.op);
  // Note [Tangents under mutation]: the new tangent, computed before anything is written.
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {other}, [&](const auto& t) {
    const Tensor result =
        op == BinaryOp::kPow && t[1].defined() ? native::binary(op, self, other) : Tensor();
    return binary_tangent(op, self, other, alpha, result, t[0], t[1]);
  });
  std::shared_ptr<Node> node;
  if (requires_grad && self.is_floating_point() && binary_is_differentiable(op)) {
    Tensor self_value;
    if (binary_node_saves_self(op, tensor_requires_grad(other))) {
      self_value = self.clone();  // differentiable: double backward reaches self's history
    }
    // See Note [Saving an operand that aliases the written tensor] in autograd/history.h.
    const bool aliases_self = other.version_counter().is_same(self.version_counter());
    node = make_binary_node(op, self, other, alpha, self_value,
                            aliases_self ? alias_with_current_edge(other) : other);
  }
  if (!is_one(alpha) && (op == BinaryOp::kAdd || op == BinaryOp::kSub) &&
      native::has_fma(promoted)) {
    // One rounding, as torch (Note [Torch's fused multiply-adds] in tensor/native/fma.h).
    const double a = op == BinaryOp::kSub ? -alpha.to<double>() : alpha.to<double>();
    if (native::is_axpy_fast(self, other)) {
      native::fma_inplace(FmaOp::kAddAlpha, self, other, Tensor(), a, &site);  // bumps once
    } else if (other.dtype() == self.dtype() && other.device() == self.device() &&
               !native::may_overlap(self, other)) {  // broadcast: read in place, no temporary
      native::fma_inplace(FmaOp::kAddAlpha, self, native::expand(other, self.sizes()), Tensor(), a,
                          &site);
    } else {  // computed before the write: other may overlap self
      const Tensor value = native::fma(FmaOp::kAddAlpha, self, other, Tensor(), a, promoted);
      native::copy_(self, value, &site);  // checks, bumps once, writes
    }
    finish(self, node);
    fwd::write_tangents(self, std::move(tangents), site.op);
    return;
  }
  Tensor operand =
      is_one(alpha) ? safe_operand(self, other) : native::scale_by_alpha(other, alpha, promoted);
  native::binary_out(op, self, self, operand, &site);  // checks, bumps once, writes
  finish(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);  // before the node saves self
  if (node && op == BinaryOp::kPow) save_binary_result(*node, self);
}

void binary_inplace(const Tensor& self, BinaryOp op, const Tensor& other, const Scalar& alpha,
                    const MutationSite& site) {
  autograd::capture::OpScope cap(binary_op_name(op), autograd::capture::OpKind::kInPlace);
  binary_inplace_uncaptured(self, op, other, alpha, site);
  cap.done(self, [&] { return autograd::capture::Args{self, other, alpha}; });
}

void binary_scalar_inplace_uncaptured(const Tensor& self, BinaryOp op, const Scalar& other,
                                      const MutationSite& site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self);
  check_inplace(self, requires_grad);
  fwd::PendingTangents tangents = fwd::inplace_tangents(
      self, {}, [&](const auto& t) { return binary_scalar_tangent(op, self, other, t[0]); });
  if (native::is_scalar_inplace_fast(op, self, other)) {
    // No operand tensor (Note [Scalar in-place fast path] in tensor/native/scalar_inplace.h).
    std::shared_ptr<Node> node;
    if (requires_grad) node = make_binary_scalar_node(op, self, other);
    native::binary_scalar_inplace(op, self, other, &site);  // checks, bumps once, writes
    finish(self, node);
    fwd::write_tangents(self, std::move(tangents), site.op);
    return;
  }
  if (op == BinaryOp::kSub && other.is_bool()) {  // the wrapped operand below is not bool
    throw DTypeError(str(site.op,
                         "(): Subtraction, the `-` operator, with a bool tensor is not "
                         "supported. If you are trying to invert a mask, use the `~` or "
                         "`logical_not()` operator instead."));
  }
  const ScalarType promoted = native::result_type(self, other);
  check_cast(self, native::binary_compute_dtype(op, promoted), site.op);
  native::assert_no_internal_overlap(self, site.op);
  Tensor operand = native::wrap_scalar(other, promoted, self.device(), site.op);
  std::shared_ptr<Node> node;
  if (requires_grad) node = make_binary_scalar_node(op, self, other);
  native::binary_out(op, self, self, operand, &site);  // checks, bumps once, writes
  finish(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}

void binary_scalar_inplace(const Tensor& self, BinaryOp op, const Scalar& other,
                           const MutationSite& site) {
  autograd::capture::OpScope cap(binary_op_name(op), autograd::capture::OpKind::kInPlace);
  binary_scalar_inplace_uncaptured(self, op, other, site);
  cap.done(self, [&] { return autograd::capture::Args{self, other}; });
}

void unary_inplace_uncaptured(const Tensor& self, UnaryOp op, const UnaryArgs& args,
                              const MutationSite& site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self);
  check_inplace(self, requires_grad);
  if (native::is_float_only(op)) check_cast(self, default_dtype(), site.op);
  if (args.has_arg) check_cast(self, native::result_type(self, args.arg), site.op);
  if (args.has_arg2) check_cast(self, native::result_type(self, args.arg2), site.op);
  if (op == UnaryOp::kNeg && self.dtype() == kBool) {
    throw DTypeError(
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
        "invert a mask, use the `~` or `logical_not()` operator instead.");
  }
  native::assert_no_internal_overlap(self, site.op);
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {}, [&](const auto& t) {
    const Tensor result = unary_saves_result(op) ? native::unary(op, self, args) : Tensor();
    return unary_tangent(op, self, args, result, t[0]);
  });
  std::shared_ptr<Node> node;
  if (requires_grad) {
    node = make_unary_node(op, self, args, unary_saves_self(op) ? self.clone() : Tensor());
  }
  native::unary_out(op, self, self, args, &site);  // checks, bumps once, writes
  finish(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);  // before the node saves self
  if (node && unary_saves_result(op)) save_unary_result(*node, self);
}

void unary_inplace(const Tensor& self, UnaryOp op, const UnaryArgs& args,
                   const MutationSite& site) {
  autograd::capture::OpScope cap(unary_op_name(op), autograd::capture::OpKind::kInPlace);
  unary_inplace_uncaptured(self, op, args, site);
  cap.done(self, [&] {
    return autograd::capture::Args{
        self, args.has_arg ? autograd::capture::Arg(args.arg) : autograd::capture::Arg(),
        args.has_arg2 ? autograd::capture::Arg(args.arg2) : autograd::capture::Arg()};
  });
}

void masked_fill_impl_uncaptured(const Tensor& self, const Tensor& mask, const Scalar& value,
                                 const Tensor& value_tensor, const MutationSite& site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self, value_tensor);
  check_inplace(self, requires_grad);
  if (mask.dtype() != kBool) {
    throw DTypeError(str(site.op, "(): expected a bool mask but got ", dtype_name(mask.dtype()),
                         "; build it with a comparison such as x > 0"));
  }
  if (!native::is_expandable_to(mask.sizes(), self.sizes())) {
    throw ShapeError(str(site.op, "(): the mask of shape ", mask.sizes(),
                         " does not broadcast to the tensor's shape ", self.sizes(),
                         "; give the mask that shape or one that broadcasts to it"));
  }
  native::assert_no_internal_overlap(self, site.op);
  // MaskedFillBackward0/1's tangent: self's outside the mask, value's (or 0) inside it.
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {value_tensor}, [&](const auto& t) {
    Tensor out = fwd::tangent_or_zeros(t[0], self).masked_fill(mask, 0);
    if (t[1].defined()) out = out.add(t[1].mul(native::to(mask, t[1].dtype())));
    return out;
  });
  std::shared_ptr<Node> node;
  if (requires_grad && self.is_floating_point()) {
    node = make_masked_fill_node(self, mask, value_tensor);
  }
  Tensor safe_mask = safe_operand(self, mask);
  native::masked_fill_(self, safe_mask, value, &site);  // checks, bumps once, writes
  finish(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}

void masked_fill_impl(const Tensor& self, const Tensor& mask, const Scalar& value,
                      const Tensor& value_tensor, const MutationSite& site) {
  autograd::capture::OpScope cap("masked_fill", autograd::capture::OpKind::kInPlace);
  masked_fill_impl_uncaptured(self, mask, value, value_tensor, site);
  cap.done(self, [&] {
    return autograd::capture::Args{self, mask,
                                   value_tensor.defined() ? autograd::capture::Arg(value_tensor)
                                                          : autograd::capture::Arg(value)};
  });
}

}  // namespace

namespace {
void copy__uncaptured(const Tensor& self, const Tensor& src, const MutationSite& site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self, src);
  check_inplace(self, requires_grad);
  if (!native::is_expandable_to(src.sizes(), self.sizes())) {
    throw ShapeError(str(site.op, "(): the source of shape ", src.sizes(),
                         " cannot be broadcast to the destination's shape ", self.sizes(),
                         "; give the source that shape or one that broadcasts to it"));
  }
  native::assert_no_internal_overlap(self, site.op);
  // CopyBackwards' tangent: src's (zeros when src has none).
  fwd::PendingTangents tangents = fwd::inplace_tangents(
      self, {src}, [&](const auto& t) { return CopyBackwards::jvp(self, t[1]); });
  std::shared_ptr<Node> node;
  if (requires_grad && self.is_floating_point()) node = make_node<CopyBackwards>(self, src);
  native::copy_(self, src, &site);  // checks, bumps once, writes
  finish(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}
}  // namespace

void copy_(const Tensor& self, const Tensor& src, const MutationSite& site) {
  autograd::capture::OpScope cap("copy", autograd::capture::OpKind::kInPlace);
  copy__uncaptured(self, src, site);
  cap.done(self, [&] { return autograd::capture::Args{self, src}; });
}

namespace {
void fill__uncaptured(const Tensor& self, const Scalar& value, const MutationSite& site) {
  const bool requires_grad = compute_requires_grad_has_jvp(self);
  check_inplace(self, requires_grad);
  native::assert_no_internal_overlap(self, site.op);
  // FillBackward0's tangent: zeros.
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {}, [&](const auto&) {
    return zeros(self.sizes(), TensorOptions(self.dtype()).device(self.device()));
  });
  std::shared_ptr<Node> node;
  if (requires_grad) {
    node = make_pooled<FillBackward>(
        site.op != nullptr && std::string(site.op) == "zero_" ? "ZeroBackward0" : "FillBackward0");
    node->set_next_edges(collect_next_edges(self));
  }
  native::fill_(self, value, &site);  // checks, bumps once, writes
  finish(self, node);
  fwd::write_tangents(self, std::move(tangents), site.op);
}
}  // namespace

void fill_(const Tensor& self, const Scalar& value, const MutationSite& site) {
  autograd::capture::OpScope cap("fill", autograd::capture::OpKind::kInPlace);
  fill__uncaptured(self, value, site);
  cap.done(self, [&] { return autograd::capture::Args{self, value}; });
}

void masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value,
                  const MutationSite& site) {
  masked_fill_impl(self, mask, value, Tensor(), site);
}

void add_(const Tensor& self, const Tensor& other, const Scalar& alpha, const MutationSite& site) {
  binary_inplace(self, BinaryOp::kAdd, other, alpha, site);
}

}  // namespace autograd

using autograd::site_of;

Tensor& Tensor::copy_(const Tensor& src, CallSite site) {
  autograd::copy_(*this, src, site_of("copy_", site));
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking, CallSite site) {
  NonBlockingTransfer scope(non_blocking);  // Note [Non-blocking transfers scope]
  autograd::copy_(*this, src, site_of("copy_", site));
  return *this;
}

Tensor& Tensor::fill_(const Scalar& value, CallSite site) {
  autograd::fill_(*this, value, site_of("fill_", site));
  return *this;
}

Tensor& Tensor::fill_(const Tensor& value, CallSite site) {
  if (value.dim() != 0) {
    throw ShapeError(str("fill_ only supports 0-dimension value tensor but got tensor with ",
                         value.dim(), " dimensions; pass a Scalar or a 0-dim tensor"));
  }
  const bool requires_grad = autograd::compute_requires_grad_has_jvp(*this, value);
  autograd::check_inplace(*this, requires_grad);
  native::assert_no_internal_overlap(*this, "fill_");
  // FillBackward1's tangent: value's, everywhere (zeros when it has none).
  autograd::fwd::PendingTangents tangents = autograd::fwd::inplace_tangents(
      *this, {value}, [&](const auto& t) { return autograd::CopyBackwards::jvp(*this, t[1]); });
  std::shared_ptr<autograd::Node> node;
  if (requires_grad && is_floating_point()) {
    node = make_pooled<autograd::FillBackward>("FillBackward1");
    node->set_next_edges(autograd::collect_next_edges(*this, value));
  }
  const Scalar v = value.item();
  const MutationSite ms = site_of("fill_", site);
  native::fill_(*this, v, &ms);  // checks, bumps once, writes
  autograd::finish(*this, node);
  autograd::fwd::write_tangents(*this, std::move(tangents), "fill_");
  return *this;
}

Tensor& Tensor::zero_(CallSite site) {
  autograd::fill_(*this, 0, site_of("zero_", site));
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kAdd, other, alpha, site_of("add_", site));
  return *this;
}
Tensor& Tensor::add_(const Scalar& other, CallSite site) {
  autograd::binary_scalar_inplace(*this, BinaryOp::kAdd, other, site_of("add_", site));
  return *this;
}
Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kSub, other, alpha, site_of("sub_", site));
  return *this;
}
Tensor& Tensor::sub_(const Scalar& other, CallSite site) {
  autograd::binary_scalar_inplace(*this, BinaryOp::kSub, other, site_of("sub_", site));
  return *this;
}
Tensor& Tensor::mul_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kMul, other, 1, site_of("mul_", site));
  return *this;
}
Tensor& Tensor::mul_(const Scalar& other, CallSite site) {
  autograd::binary_scalar_inplace(*this, BinaryOp::kMul, other, site_of("mul_", site));
  return *this;
}
Tensor& Tensor::div_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kDiv, other, 1, site_of("div_", site));
  return *this;
}
Tensor& Tensor::div_(const Scalar& other, CallSite site) {
  autograd::binary_scalar_inplace(*this, BinaryOp::kDiv, other, site_of("div_", site));
  return *this;
}
Tensor& Tensor::neg_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kNeg, {}, site_of("neg_", site));
  return *this;
}
Tensor& Tensor::relu_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kRelu, {}, site_of("relu_", site));
  return *this;
}
Tensor& Tensor::sigmoid_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kSigmoid, {}, site_of("sigmoid_", site));
  return *this;
}
Tensor& Tensor::tanh_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kTanh, {}, site_of("tanh_", site));
  return *this;
}
Tensor& Tensor::exp_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kExp, {}, site_of("exp_", site));
  return *this;
}
Tensor& Tensor::sin_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kSin, {}, site_of("sin_", site));
  return *this;
}
Tensor& Tensor::cos_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kCos, {}, site_of("cos_", site));
  return *this;
}
Tensor& Tensor::tan_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kTan, {}, site_of("tan_", site));
  return *this;
}
Tensor& Tensor::erf_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kErf, {}, site_of("erf_", site));
  return *this;
}
Tensor& Tensor::erfinv_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kErfinv, {}, site_of("erfinv_", site));
  return *this;
}
Tensor& Tensor::lgamma_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kLgamma, {}, site_of("lgamma_", site));
  return *this;
}
Tensor& Tensor::digamma_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kDigamma, {}, site_of("digamma_", site));
  return *this;
}
Tensor& Tensor::polygamma_(int64_t n, CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kPolygamma, native::polygamma_args(n),
                          site_of("polygamma_", site));
  autograd::name_polygamma_in_place(*this);
  return *this;
}
Tensor& Tensor::reciprocal_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kReciprocal, {}, site_of("reciprocal_", site));
  return *this;
}
Tensor& Tensor::square_(CallSite site) {
  UnaryArgs args;
  args.arg = 2;
  args.has_arg = true;
  autograd::unary_inplace(*this, UnaryOp::kPowScalar, args, site_of("square_", site));
  return *this;
}
Tensor& Tensor::atan2_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kAtan2, other, 1, site_of("atan2_", site));
  return *this;
}
Tensor& Tensor::pow_(const Scalar& exponent, CallSite site) {
  UnaryArgs args;
  args.arg = exponent;
  args.has_arg = true;
  autograd::unary_inplace(*this, UnaryOp::kPowScalar, args, site_of("pow_", site));
  return *this;
}
Tensor& Tensor::pow_(const Tensor& exponent, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kPow, exponent, 1, site_of("pow_", site));
  return *this;
}
Tensor& Tensor::bitwise_and_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kBitwiseAnd, other, 1, site_of("bitwise_and_", site));
  return *this;
}
Tensor& Tensor::bitwise_or_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kBitwiseOr, other, 1, site_of("bitwise_or_", site));
  return *this;
}
Tensor& Tensor::bitwise_xor_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kBitwiseXor, other, 1, site_of("bitwise_xor_", site));
  return *this;
}
Tensor& Tensor::bitwise_left_shift_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kShiftLeft, other, 1,
                           site_of("bitwise_left_shift_", site));
  return *this;
}
Tensor& Tensor::bitwise_right_shift_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kShiftRight, other, 1,
                           site_of("bitwise_right_shift_", site));
  return *this;
}
Tensor& Tensor::remainder_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kRemainder, other, 1, site_of("remainder_", site));
  return *this;
}
Tensor& Tensor::remainder_(const Scalar& other, CallSite site) {
  autograd::binary_scalar_inplace(*this, BinaryOp::kRemainder, other, site_of("remainder_", site));
  return *this;
}
Tensor& Tensor::fmod_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kFmod, other, 1, site_of("fmod_", site));
  return *this;
}
Tensor& Tensor::fmod_(const Scalar& other, CallSite site) {
  autograd::binary_scalar_inplace(*this, BinaryOp::kFmod, other, site_of("fmod_", site));
  return *this;
}
Tensor& Tensor::floor_divide_(const Tensor& other, CallSite site) {
  autograd::binary_inplace(*this, BinaryOp::kFloorDivide, other, 1, site_of("floor_divide_", site));
  return *this;
}
Tensor& Tensor::floor_divide_(const Scalar& other, CallSite site) {
  autograd::binary_scalar_inplace(*this, BinaryOp::kFloorDivide, other,
                                  site_of("floor_divide_", site));
  return *this;
}
Tensor& Tensor::div_(const Tensor& other, std::optional<std::string_view> rounding_mode,
                     CallSite site) {
  const std::optional<BinaryOp> op = autograd::rounding_op(rounding_mode);
  if (!op) return div_(other, site);
  autograd::binary_inplace(*this, *op, other, 1, site_of("div_", site));
  return *this;
}
Tensor& Tensor::div_(const Scalar& other, std::optional<std::string_view> rounding_mode,
                     CallSite site) {
  const std::optional<BinaryOp> op = autograd::rounding_op(rounding_mode);
  if (!op) return div_(other, site);
  autograd::binary_scalar_inplace(*this, *op, other, site_of("div_", site));
  return *this;
}
Tensor& Tensor::clamp_min_(const Scalar& min, CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kClamp,
                          native::clamp_args(min, std::nullopt, "clamp_min_"),
                          site_of("clamp_min_", site));
  autograd::name_clamp_by_side(*this);
  return *this;
}
Tensor& Tensor::clamp_max_(const Scalar& max, CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kClamp,
                          native::clamp_args(std::nullopt, max, "clamp_max_"),
                          site_of("clamp_max_", site));
  autograd::name_clamp_by_side(*this);
  return *this;
}
Tensor& Tensor::bitwise_not_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kBitwiseNot, {}, site_of("bitwise_not_", site));
  return *this;
}
Tensor& Tensor::abs_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kAbs, {}, site_of("abs_", site));
  return *this;
}
Tensor& Tensor::sqrt_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kSqrt, {}, site_of("sqrt_", site));
  return *this;
}
Tensor& Tensor::rsqrt_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kRsqrt, {}, site_of("rsqrt_", site));
  return *this;
}
Tensor& Tensor::log_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kLog, {}, site_of("log_", site));
  return *this;
}
Tensor& Tensor::log1p_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kLog1p, {}, site_of("log1p_", site));
  return *this;
}
Tensor& Tensor::expm1_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kExpm1, {}, site_of("expm1_", site));
  return *this;
}
Tensor& Tensor::sign_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kSign, {}, site_of("sign_", site));
  return *this;
}
Tensor& Tensor::floor_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kFloor, {}, site_of("floor_", site));
  return *this;
}
Tensor& Tensor::ceil_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kCeil, {}, site_of("ceil_", site));
  return *this;
}
Tensor& Tensor::trunc_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kTrunc, {}, site_of("trunc_", site));
  return *this;
}
Tensor& Tensor::frac_(CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kFrac, {}, site_of("frac_", site));
  return *this;
}
Tensor& Tensor::round_(int64_t decimals, CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kRound, native::round_args(decimals),
                          site_of("round_", site));
  return *this;
}
Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf,
                            std::optional<double> neginf, CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kNanToNum,
                          native::nan_to_num_args(dtype(), nan, posinf, neginf),
                          site_of("nan_to_num_", site));
  return *this;
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max, CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kClamp, native::clamp_args(min, max, "clamp_"),
                          site_of("clamp_", site));
  return *this;
}
Tensor& Tensor::clip_(std::optional<Scalar> min, std::optional<Scalar> max, CallSite site) {
  autograd::unary_inplace(*this, UnaryOp::kClamp, native::clamp_args(min, max, "clip_"),
                          site_of("clip_", site));
  return *this;
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value, CallSite site) {
  autograd::masked_fill_impl(*this, mask, value, Tensor(), site_of("masked_fill_", site));
  return *this;
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value, CallSite site) {
  if (value.dim() != 0) {
    throw ShapeError(
        str("masked_fill_ only supports a 0-dimensional value tensor, but got "
            "tensor with ",
            value.dim(), " dimension(s); pass a Scalar or a 0-dim tensor"));
  }
  autograd::masked_fill_impl(*this, mask, value.item(), value, site_of("masked_fill_", site));
  return *this;
}

}  // namespace mutagrad
