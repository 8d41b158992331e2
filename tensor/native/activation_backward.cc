// tanh's and sigmoid's backward formulas in one pass: see activation_backward.h.
#include "tensor/native/activation_backward.h"

#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"

namespace mutagrad {

// The formula's steps as the backend's binary kernels, into out (Note [Fused activation
// backward]): the same kernels as the formula's ops, so the same bits.
void Backend::activation_backward(ActivationGrad op, const Tensor& out, const Tensor& grad,
                                  const Tensor& y) {
  const Tensor one0 = native::wrap_scalar(1, out.dtype(), out.device(), "activation_backward");
  const Tensor one = out.dim() == 0 ? one0 : native::expand(one0, out.sizes());
  if (op == ActivationGrad::kTanh) {
    binary(BinaryOp::kMul, out, y, y);
    binary(BinaryOp::kSub, out, one, out);
  } else {
    binary(BinaryOp::kSub, out, one, y);
    binary(BinaryOp::kMul, out, y, out);
  }
  binary(BinaryOp::kMul, out, grad, out);
}

namespace native {

bool is_activation_backward_fast(const Tensor& grad, const Tensor& y) {
  const ScalarType t = y.dtype();
  return (t == kFloat32 || t == kFloat64) && grad.dtype() == t && grad.sizes().equals(y.sizes()) &&
         grad.device() == y.device();
}

Tensor activation_backward(ActivationGrad op, const Tensor& grad, const Tensor& y) {
  MG_INTERNAL_ASSERT(is_activation_backward_fast(grad, y),
                     "activation_backward: operands of one float dtype, shape and device only");
  Tensor out = empty(y.sizes(), TensorOptions(y.dtype()).device(y.device()));
  if (out.numel() > 0) backend_for(out.device()).activation_backward(op, out, grad, y);
  return out;
}

}  // namespace native
}  // namespace mutagrad
