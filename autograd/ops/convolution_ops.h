// Convolution, differentiable to any order: torch.convolution and the torch.nn.functional forms
// conv1d, conv2d, conv_transpose1d and conv_transpose2d (torch 1.13's signatures).
//
//   Tensor y = mutagrad::conv2d(x, w, b, /*stride=*/{2}, /*padding=*/{1});  // ConvolutionBackward0
//   Tensor s = mutagrad::conv2d(x, w, b, {1}, ConvPadding::kSame);
//   Tensor u = mutagrad::conv_transpose2d(y, w, b, {2}, {1}, /*output_padding=*/{1});
//
// x [N, C, *in] (or unbatched [C, *in] for the conv*d forms), weight [O, C / groups, *k] (for a
// transposed convolution [C, O / groups, *k]), bias [O]. One-element stride/padding/dilation/
// output_padding lists apply to every spatial dim. Kernels: Note [Convolution on the CPU]
// (tensor/cpu/convolution.cc) and the reference of tensor/native/convolution.h.
//
// Note [Convolution's three bilinear maps]
// A convolution layer is three bilinear maps of one geometry: F(x, w) = y (the forward), Bx(gy, w)
// = gx (F's adjoint in x) and Bw(x, gy) = gw (F's adjoint in w). Each map's adjoints are the other
// two: for a gradient h of its output, F's are (Bx(h, w), Bw(x, h)), Bx's are (F(h, w),
// Bw(h, gy)) and Bw's are (Bx(gy, h), F(x, h)). So each map is a differentiable op whose backward
// calls the differentiable maps, and every order of derivative comes out of the three. The op a
// program calls records ConvolutionBackward0 (F, or Bx for a transposed convolution, whose
// forward it is); the maps recorded by a backward record ConvolutionBackwardBackward0. The node
// saves both operands (as torch's), never its output: ReLU_ on a convolution's output is fine,
// a write into its input before backward is refused.
#pragma once

#include <string_view>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad {

// torch.convolution: padding is symmetric per spatial dim; with transposed, the output grows by
// output_padding (each < stride or < dilation) at the end of every spatial dim.
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups);

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1},
              int64_t groups = 1);
// torch's padding strings: "valid" (none) and "same" (the output keeps the input's size; stride 1
// only; when the total dilation (k - 1) is odd the extra position pads the end, as torch). An
// enum, so that a braced {0} still means IntArrayRef padding.
enum class ConvPadding : int8_t { kValid, kSame };
// "valid" or "same" as a ConvPadding; ValueError naming `op` for any other string.
ConvPadding conv_padding_mode(const char* op, std::string_view padding);
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation = {1}, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1},
              int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation = {1}, int64_t groups = 1);
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        IntArrayRef stride = {1}, IntArrayRef padding = {0},
                        IntArrayRef output_padding = {0}, int64_t groups = 1,
                        IntArrayRef dilation = {1});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        IntArrayRef stride = {1}, IntArrayRef padding = {0},
                        IntArrayRef output_padding = {0}, int64_t groups = 1,
                        IntArrayRef dilation = {1});

namespace autograd {

// The three maps of Note [Convolution's three bilinear maps] as differentiable ops (explicit
// padding per side; `node_name` is what the op records). input_size / weight_size: the shape of
// the result of conv_backward_input / conv_backward_weight.
Tensor conv_forward(const Tensor& x, const Tensor& w, const ConvParams& p,
                    const char* node_name = "ConvolutionBackward0");
Tensor conv_backward_input(const Tensor& gy, const Tensor& w, const ConvParams& p,
                           IntArrayRef input_size,
                           const char* node_name = "ConvolutionBackwardBackward0");
Tensor conv_backward_weight(const Tensor& x, const Tensor& gy, const ConvParams& p,
                            IntArrayRef weight_size,
                            const char* node_name = "ConvolutionBackwardBackward0");

}  // namespace autograd
}  // namespace mutagrad
