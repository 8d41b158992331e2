// Copies: each forward function and its backward node, side by side.
#include "autograd/ops/copy_ops.h"

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/node_factories.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/unary_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {

class CloneBackward0 final : public Node {
 public:
  const char* name() const override { return "CloneBackward0"; }
  VariableList apply(VariableList&& grads) override { return {grads[0]}; }
};

class ToCopyBackward0 final : public Node {
 public:
  const char* name() const override { return "ToCopyBackward0"; }
  VariableList apply(VariableList&& grads) override {
    return {mutagrad::to(grads[0], self_device_, self_dtype_)};
  }
  ScalarType self_dtype_ = kFloat32;
  Device self_device_ = kCPU;
};

// masked_fill with a scalar (MaskedFillBackward0) or a 0-dim tensor value (MaskedFillBackward1).
class MaskedFillBackward final : public Node {
 public:
  explicit MaskedFillBackward(bool tensor_value) : tensor_value_(tensor_value) {}
  const char* name() const override {
    return tensor_value_ ? "MaskedFillBackward1" : "MaskedFillBackward0";
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(num_outputs());
    Tensor mask = mask_.unpack(this);
    if (should_compute_output(0)) out[0] = grads[0].masked_fill(mask, 0);
    if (tensor_value_ && should_compute_output(1)) {
      out[1] = grads[0].masked_fill(mask.logical_not(), 0).sum();
    }
    return out;
  }
  void visit_saved(SavedVisitor& v) override { v.visit("mask", mask_); }
  SavedVariable mask_;

 private:
  bool tensor_value_;
};

std::shared_ptr<Node> make_masked_fill_node(const Tensor& self, const Tensor& mask,
                                            const Tensor& value) {
  const bool tensor_value = value.defined();
  auto node = make_pooled<MaskedFillBackward>(tensor_value);
  node->set_next_edges(tensor_value ? collect_next_edges(self, value) : collect_next_edges(self));
  node->mask_ = SavedVariable(mask, false);
  return node;
}

}  // namespace autograd

using autograd::compute_requires_grad;
using autograd::make_node;
using autograd::SavedVariable;
using autograd::set_history;

Tensor clone(const Tensor& self) {
  autograd::capture::OpScope cap("clone", autograd::capture::OpKind::kFunctional);
  Tensor result = native::clone(self);
  // CloneBackward0's tangent: a clone of the tangent (linear).
  autograd::fwd::propagate("clone", result, {self}, [](const auto& t) { return t[0].clone(); });
  if (autograd::compute_requires_grad_has_jvp(self)) {
    set_history(result, make_node<autograd::CloneBackward0>(self));
  }
  return cap.done(result, [&] { return autograd::capture::Args{self}; });
}

Tensor contiguous(const Tensor& self) { return self.is_contiguous() ? self : clone(self); }

Tensor to(const Tensor& self, ScalarType dtype) { return to(self, self.device(), dtype); }

Tensor to(const Tensor& self, Device device, std::optional<ScalarType> dtype) {
  autograd::capture::OpScope cap("to", autograd::capture::OpKind::kAuto);
  const ScalarType dt = dtype.value_or(self.dtype());
  if (self.device() == device && self.dtype() == dt) return self;
  Tensor result = native::to(self, device, dt);
  // ToCopyBackward0's tangent: the tangent converted the same way (linear).
  autograd::fwd::propagate("to", result, {self},
                           [&](const auto& t) { return to(t[0], device, dt); });
  if (is_floating_point(dt) && autograd::compute_requires_grad_has_jvp(self)) {
    auto node = make_node<autograd::ToCopyBackward0>(self);
    node->self_dtype_ = self.dtype();
    node->self_device_ = self.device();
    set_history(result, node);
  }
  // The device as its name ("cuda:0"): the copy's destination, the source's device when equal.
  return cap.done(result, [&] {
    return autograd::capture::Args{self, dtype.value_or(self.dtype()), str(result.device())};
  });
}

namespace {

Tensor masked_fill_impl(const Tensor& self, const Tensor& mask, const Scalar& value,
                        const Tensor& value_tensor) {
  if (mask.dtype() != kBool) {
    throw DTypeError(str("masked_fill(): expected a bool mask but got ", dtype_name(mask.dtype()),
                         "; build it with a comparison such as x > 0"));
  }
  DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), "masked_fill");
  Tensor result = shape.size() == static_cast<size_t>(self.dim()) && self.sizes().equals(shape)
                      ? native::clone(self)
                      : native::clone(native::expand(self, shape));
  native::masked_fill_(result, mask, value);
  // MaskedFillBackward0/1's tangent: self's outside the mask, value's (or 0) inside it.
  autograd::fwd::propagate("masked_fill", result, {self, value_tensor}, [&](const auto& t) {
    Tensor out = autograd::fwd::tangent_or_zeros(t[0], self).masked_fill(mask, 0);
    if (t[1].defined()) out = out.add(t[1].mul(native::to(mask, t[1].dtype())));
    return out;
  });
  if (autograd::compute_requires_grad_has_jvp(self, value_tensor)) {
    set_history(result, autograd::make_masked_fill_node(self, mask, value_tensor));
  }
  return result;
}

}  // namespace

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  autograd::capture::OpScope cap("masked_fill", autograd::capture::OpKind::kFunctional);
  return cap.done(masked_fill_impl(self, mask, value, Tensor()), [&] {
    return autograd::capture::Args{self, mask, value};
  });
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  autograd::capture::OpScope cap("masked_fill", autograd::capture::OpKind::kFunctional);
  if (value.dim() != 0) {
    throw ShapeError(
        str("masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
            "with ",
            value.dim(), " dimension(s); pass a Scalar or a 0-dim tensor"));
  }
  return cap.done(masked_fill_impl(self, mask, value.item(), value), [&] {
    return autograd::capture::Args{self, mask, value};
  });
}

// ---- Tensor members ----------------------------------------------------------------------------
Tensor Tensor::clone() const { return mutagrad::clone(*this); }
Tensor Tensor::contiguous() const { return mutagrad::contiguous(*this); }
Tensor Tensor::to(ScalarType dtype) const { return mutagrad::to(*this, dtype); }
Tensor Tensor::to(Device device, std::optional<ScalarType> dtype, bool non_blocking) const {
  NonBlockingTransfer scope(non_blocking);  // Note [Non-blocking transfers scope]
  return mutagrad::to(*this, device, dtype);
}
Tensor Tensor::cuda(int8_t index) const {
  return mutagrad::to(*this, Device(DeviceType::CUDA, index));
}
Tensor Tensor::cpu() const { return mutagrad::to(*this, kCPU); }
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return mutagrad::masked_fill(*this, mask, value);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  return mutagrad::masked_fill(*this, mask, value);
}

}  // namespace mutagrad
