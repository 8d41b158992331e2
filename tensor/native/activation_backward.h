// tanh's and sigmoid's backward formulas in one pass (PyTorch's tanh_backward and
// sigmoid_backward), for a backward pass or a tangent that records no graph.
//
//   if (native::is_activation_backward_fast(grad, y)) {
//     Tensor gx = native::activation_backward(ActivationGrad::kTanh, grad, y);  // grad*(1-y*y)
//   }
//
// Note [Fused activation backward]
// TanhBackward0's formula, grad * (1 - y * y), is three element-wise ops: three result tensors,
// a wrapped number and each op's checks, promotion and dispatch, for one pass over memory. In
// a chain of small ops that was a quarter of a backward pass (BM_TinyChainBackward; sigmoid's
// grad * (y * (1 - y)) is the same shape). When the formula's ops would record nothing (no
// graph: grad mode off or no operand requiring grad, and no forward-mode tangent on them) and
// grad and y have one float32 or float64 dtype, one shape and one device, the node asks the
// backend for the whole formula into one new tensor instead. Each step rounds in that dtype in
// the formula's order (y * y, then 1 - that, then the product with grad; sigmoid: 1 - y, then
// y times that, then grad times that), so the value is the formula's bit for bit on every
// backend: the CPU's loop is built without floating-point contraction, and the default
// (Backend::activation_backward, which the CUDA backend keeps) composes the backend's own
// binary kernels. Other dtypes (float16's steps round through float32 per op), broadcast
// operands and recorded graphs take the formula's ops, as before.
#pragma once

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad::native {

// Whether activation_backward may compute the formula of grad and y: one float32 or float64
// dtype, one shape, one device.
bool is_activation_backward_fast(const Tensor& grad, const Tensor& y);

// A new tensor of y's shape holding the formula `op` of grad and y (see the Note). Requires
// is_activation_backward_fast(grad, y).
Tensor activation_backward(ActivationGrad op, const Tensor& grad, const Tensor& y);

}  // namespace mutagrad::native
