// Raw N-d convolution (no autograd): the three bilinear primitives of a convolution layer.
//
//   ConvParams p{/*stride=*/{1, 1}, /*padding_l=*/{1, 1}, /*padding_r=*/{1, 1},
//                /*dilation=*/{1, 1}, /*groups=*/1};
//   Tensor y = native::conv_forward(x, w, p);                         // [N, O, *out]
//   Tensor gx = native::conv_backward_input(gy, w, p, x.sizes());     // adjoint in x
//   Tensor gw = native::conv_backward_weight(x, gy, p, w.sizes());    // adjoint in w
//
// x [N, C, *in], w [O, C / groups, *k], y [N, O, *out] with out = floor((in + padding_l +
// padding_r - dilation (k - 1) - 1) / stride) + 1; any strides, one floating dtype, one device.
// float16/bfloat16 compute in float32. The backend kernels (Backend::conv_*) get the operands
// of Note [Convolution's backend contract].
#pragma once

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad::native {

// Note [Convolution's backend contract]
// The backend receives contiguous operands of one dtype (float32 or float64) whose geometry is
// exact: in + padding_l + padding_r == (out - 1) stride + dilation (k - 1) + 1 per spatial dim.
// The native layer gets there by cutting padding_r (and, when that is not enough, the last
// input positions, which no output reads: their input gradient is 0), so a kernel needs no
// rounding rule (oneDNN requires exact geometry). Empty operands and inputs that no output
// reads never reach the backend: the result is zeros.

// The output's shape for x of input_size and w of weight_size ([N, O, *out]).
DimVector conv_output_size(IntArrayRef input_size, IntArrayRef weight_size, const ConvParams& p);

// Checks the shapes, dtypes and devices of a convolution's operands and the geometry, as the
// autograd layer's convolution does (typed errors naming the values and the expected shapes):
// `op` names the caller in messages.
void check_conv_operands(const char* op, const Tensor& x, const Tensor& w, const ConvParams& p);

Tensor conv_forward(const Tensor& x, const Tensor& w, const ConvParams& p);
// The adjoints take a grad_output gy whose spatial sizes may be smaller than the output's: the
// missing trailing outputs count as zeros (a transposed convolution with output_padding >=
// stride has such an output).
// The adjoint of conv_forward in x: gx of input_size.
Tensor conv_backward_input(const Tensor& gy, const Tensor& w, const ConvParams& p,
                           IntArrayRef input_size);
// The adjoint of conv_forward in w: gw of weight_size.
Tensor conv_backward_weight(const Tensor& x, const Tensor& gy, const ConvParams& p,
                            IntArrayRef weight_size);

// The im2col + GEMM reference kernels (the Backend defaults), under the backend contract: for
// tests, and the path of every dtype and device without a library kernel.
void conv_reference_forward(const Tensor& y, const Tensor& x, const Tensor& w, const ConvParams& p);
void conv_reference_backward_input(const Tensor& gx, const Tensor& gy, const Tensor& w,
                                   const ConvParams& p);
void conv_reference_backward_weight(const Tensor& gw, const Tensor& x, const Tensor& gy,
                                    const ConvParams& p);

}  // namespace mutagrad::native
