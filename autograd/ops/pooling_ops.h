// Pooling and im2col (torch 1.13's max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d,
// adaptive_max_pool2d, and F.unfold / F.fold as im2col / col2im), differentiable to any order.
//
//   // MaxPool2DWithIndicesBackward0:
//   auto [y, idx] = mutagrad::max_pool2d_with_indices(x, {2}, {2});
//   Tensor z = mutagrad::max_pool2d(x, {3}, {2}, {1}, {1}, /*ceil_mode=*/true);
//   Tensor a = mutagrad::avg_pool2d(x, {3}, {2}, {1}, false, /*count_include_pad=*/false);
//   Tensor g = mutagrad::adaptive_avg_pool2d(x, {7, 7});  // AdaptiveAvgPool2DBackward0
//   Tensor cols = mutagrad::im2col(x, {3, 3}, {1}, {1}, {1});  // F.unfold: Im2ColBackward0
//   Tensor back = mutagrad::col2im(cols, {h, w}, {3, 3}, {1}, {1}, {1});  // F.fold
//
// Inputs are [N, C, *spatial] or unbatched [C, *spatial], any strides, floating. A one-element
// kernel_size/stride/padding/dilation applies to every spatial dim; an empty stride is the
// kernel's. The 1-d forms pool the input unsqueezed at -2 and squeeze the result, so their graph
// is torch's: SqueezeBackward1 -> <2-d node> -> UnsqueezeBackward0. The poolings run the
// backends' pooling kernels (Note [Pooling kernels] in tensor/native/pooling.h); im2col and
// col2im compose backend ops.
//
// Note [Pooling windows clipped to the input]
// Every pooling op works on its windows clipped to the input (pooling_util.h's DimWindows: per
// spatial dim, each window's first in-range position, count and step), never on a padded copy:
// memory follows the input and the output, not the kernel or the padding (torch accepts
// avg_pool2d(x [1, 1, 4, 4], (1, 1e8), padding=(0, 5e7)); a padded copy of it was 1.6 GB). The
// window arithmetic is overflow-checked (ValueError naming the values).
//
// Note [Max pooling's windows and indices]
// Each window keeps torch's kernels' winner, `val > max || isnan(val)` in row-major window order:
// the last NaN of a window, else its first maximum (ties: the first, on every device). idx is
// the flat position of the winner in its [H, W] plane (torch's return_indices; a window of
// padding only reports torch's index for it, first row * W + first column, which may lie past
// the plane or, for a column window past the right edge, on the next row, where torch's backward
// adds its gradient too). The node MaxPool2DWithIndicesBackward0 saves the indices only
// (version-checked), not the input or the output; its backward adds the gradient at them (a
// gather over the input, Note [Pooling kernels]) and is itself recorded under create_graph as
// torch's MaxPool2DWithIndicesBackwardBackward0, whose backward is a gather at the indices, so it
// differentiates to any order. adaptive_max_pool2d works the same way over torch's adaptive
// windows (rows floor(i H / oh) to ceil((i + 1) H / oh)): AdaptiveMaxPool2DBackward0 and
// AdaptiveMaxPool2DBackwardBackward0.
//
// Note [Average pooling as a linear map]
// avg_pool2d and adaptive_avg_pool2d add each window's elements directly (an inf or NaN stays in
// the windows holding it) and divide by torch's divisor (divisor_override; else the window's
// size clipped to the padded input with count_include_pad, or its count of input elements
// without; adaptive: the window's size). bfloat16 and half sum and divide in float32 and round
// once, as torch's kernels (their acc type); so does their backward, where torch 1.13 rounds the
// divisor and each accumulation to bfloat16 (a bfloat16 step apart at most). The map is linear,
// so the nodes AvgPool2DBackward0 and AdaptiveAvgPool2DBackward0 save no tensor, only the
// windows and the divisors: the backward spreads grad / divisor over each window, and is
// recorded under create_graph as torch's AvgPool2DBackwardBackward0 (and
// AdaptiveAvgPool2DBackwardBackward0), whose backward is the pooling again: each map is the
// other's adjoint, so both differentiate to any order. An adaptive output of 1x1 is
// x.mean({-2, -1}, true) as torch's (MeanBackward1).
//
// Note [im2col and col2im]
// im2col ([N, C, H, W] -> [N, C kh kw, L], L the number of windows) is a copy out of an
// as_strided view of the zero-padded input; col2im, its adjoint, adds each kernel offset's
// [N, C, oh, ow] slice into a strided view of a zero-padded output, one offset after the other
// (deterministic). Each is the other's backward (Im2ColBackward0 calls col2im, Col2ImBackward0
// calls im2col), so both differentiate to any order.
#pragma once

#include <optional>
#include <tuple>

#include "tensor/tensor.h"

namespace mutagrad {

// input [N, C, H, W] or [C, H, W]. padding at most half the kernel size.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {},
                                                   IntArrayRef padding = {0},
                                                   IntArrayRef dilation = {1},
                                                   bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, IntArrayRef dilation = {1}, bool ceil_mode = false);

// input [N, C, L] or [C, L]; idx holds positions along L.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {},
                                                   IntArrayRef padding = {0},
                                                   IntArrayRef dilation = {1},
                                                   bool ceil_mode = false);
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, IntArrayRef dilation = {1}, bool ceil_mode = false);

// divisor_override, when given, is nonzero and divides every window's sum.
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, bool ceil_mode = false, bool count_include_pad = true);

// output_size: one value for every spatial dim or one per dim, each >= 0; every spatial size of
// the input > 0.
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size);
// (values, flat positions in each [H, W] plane).
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);

// F.unfold: input [N, C, H, W] or [C, H, W] -> [N, C kh kw, L] (or [C kh kw, L]); row
// c kh kw + i kw + j, column the window's row-major position. kernel, stride, dilation > 0,
// padding >= 0, at least one window per dim.
Tensor im2col(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation = {1},
              IntArrayRef padding = {0}, IntArrayRef stride = {1});
// F.fold, im2col's adjoint: input [N, C kh kw, L] or [C kh kw, L] -> [N, C, *output_size], the
// overlapping entries summed. L must be the number of windows of output_size.
Tensor col2im(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size,
              IntArrayRef dilation = {1}, IntArrayRef padding = {0}, IntArrayRef stride = {1});

}  // namespace mutagrad
