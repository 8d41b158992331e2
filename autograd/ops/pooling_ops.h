// Max pooling (torch 1.13's max_pool2d / max_pool2d_with_indices), differentiable to any order.
//
//   auto [y, idx] = mutagrad::max_pool2d_with_indices(x, {2}, {2});  //
//   MaxPool2DWithIndicesBackward0 Tensor z = mutagrad::max_pool2d(x, {3}, {2}, {1}, {1},
//   /*ceil_mode=*/true);
//
// Note [Max pooling as a gather]
// A first version composed of existing ops (issue 37): the forward takes the windows of the input
// padded with -inf (an as_strided view, no copy per window) and their first maximum, in window
// order as torch; idx is the flat position of each maximum in its [H, W] plane (torch's
// return_indices). The node MaxPool2DWithIndicesBackward0 adds the gradient at those positions
// with scatter_add, differentiable in the gradient, so it differentiates again (its backward is
// a gather; torch names that node MaxPool2DWithIndicesBackwardBackward0). NaN inside a window is
// not treated specially (torch's kernel propagates it). No kernel of its own, so it runs on every
// device.
#pragma once

#include <tuple>

#include "tensor/tensor.h"

namespace mutagrad {

// input [N, C, H, W] or [C, H, W]; kernel_size, stride (empty: kernel_size), padding, dilation
// one value or one per spatial dim. padding at most half the kernel size.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {},
                                                   IntArrayRef padding = {0},
                                                   IntArrayRef dilation = {1},
                                                   bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, IntArrayRef dilation = {1}, bool ceil_mode = false);

}  // namespace mutagrad
