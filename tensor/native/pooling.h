// Raw 2-d pooling over [P, H, W] planes (no autograd): the kernels behind max_pool2d,
// avg_pool2d and their adaptive forms (autograd/ops/pooling_ops.h).
//
//   PoolWindows r = ..., c = ...;                   // per spatial dim, ranges set
//   auto [v, idx] = native::max_pool2d(x, r, c);    // x [P, H, W] -> [P, oh, ow] twice
//   Tensor gx = native::max_pool2d_backward(gy, idx, r, c, {P, H, W});
//   Tensor y = native::avg_pool2d(x, r, c, divisor);  // divisor [oh, ow]
//
// Note [Pooling kernels]
// Pooling runs in kernels of its own (Backend::max_pool2d, ..., the formulas of
// tensor/pool_math.h, compiled for the CPU and for CUDA): one pass over the outputs, each
// window read in place (no gathered copy of the windows, no padded input). The gradients are
// gathers over the input, not scatters: input element p sums, in output order, the windows
// that picked it (max) or read it (average), which is the order a sequential scatter of the
// outputs adds them in (a max pooling's windows of padding only, whose torch index may name an
// element, come after the others: pool_math.h), so the result is deterministic, the same on
// every device, and needs no atomics. half and bfloat16 compute in float32 (torch's acc type) and
// round once; the max pooling's values then round exactly.
#pragma once

#include <tuple>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad::native {

// x [P, H, W], any strides, floating; rows/cols have their ranges set for H and W. Values of x's
// dtype and indices (int64, flat positions in each plane), both [P, oh, ow].
std::tuple<Tensor, Tensor> max_pool2d(const Tensor& x, const PoolWindows& rows,
                                      const PoolWindows& cols);
// gy [P, oh, ow], indices as max_pool2d's (a value >= H W adds nowhere) -> gx of input_size
// [P, H, W], gy's dtype.
Tensor max_pool2d_backward(const Tensor& gy, const Tensor& indices, const PoolWindows& rows,
                           const PoolWindows& cols, IntArrayRef input_size);
// x [P, H, W] -> [P, oh, ow]: each window's sum / divisor [oh, ow]. divisor's dtype is the one
// computed in (x's, float32 for half and bfloat16); the result has x's.
Tensor avg_pool2d(const Tensor& x, const PoolWindows& rows, const PoolWindows& cols,
                  const Tensor& divisor);
// avg_pool2d's adjoint: gy [P, oh, ow] -> gx of input_size [P, H, W], gy's dtype.
Tensor avg_pool2d_backward(const Tensor& gy, const PoolWindows& rows, const PoolWindows& cols,
                           const Tensor& divisor, IntArrayRef input_size);

}  // namespace mutagrad::native
