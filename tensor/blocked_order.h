// The association order of a long running fold (cumsum/cumprod of a line), shared by the CPU
// backend (tensor/cpu/scan.cc) and the CUDA kernels (cuda/reduce.cu) so that both give the same
// bits while each splits the line between threads.
//
//   const int64_t nb = blocked::num_blocks(len);  // blocks of kBlock elements, the last shorter
//
// Note [Blocked association order]
// A line x_0, ..., x_{n-1} folded by `combine` (+ or *) from `init` (0 or 1) is cut into blocks
// of kBlock elements, B_0 = [0, kBlock), B_1 = [kBlock, 2 kBlock), ..., the last one shorter:
//   - block 0 folds in order from init: y_i = (...((init . x_0) . x_1) ...) . x_i;
//   - every later block j folds in order from its own first element, l_i = (...(x_b . x_{b+1})
//     ...) . x_i (b = j kBlock), and y_i = c_j . l_i, where the carry c_j is y at the end of
//     block j - 1 (c_{j+1} = c_j . l_{end of j}: the carries chain through the blocks in order).
// A line of at most kBlock elements is therefore folded strictly in order, as before this order
// existed and as PyTorch's CPU kernel folds; a longer one differs from that only in how
// rounding errors of the accumulator (double for floating dtypes, Backend::scan) add up, since
// each y_i is still a sum of x_0..x_i. Integer + and * wrap and are associative: the same bits
// as in order. The blocks' partials (the l at each block's end) are independent, so threads (a
// CPU core's lanes, a GPU's threads) compute them at once; one pass chains the carries, one
// rescans each block from its carry. kBlock = 1024 keeps torch 1.13's bitwise comparisons of
// cumsum/cumprod (lines of up to 1000, statistics_ops_test.py) exact, and float32 lines, which
// accumulate in double and round each y_i to float, almost always give PyTorch's bits beyond
// it too (a difference needs the double sums to straddle a float rounding boundary). On a GPU,
// 1M elements are 1024 blocks: 1024 threads of 1024 steps, a carry chain of 1024 steps and a
// rescan, instead of one thread of 1M steps.
#pragma once

#include <cstdint>

#include "tensor/host_device.h"

namespace mutagrad::blocked {

constexpr int64_t kBlock = 1024;

// The number of blocks of a line of n >= 1 elements.
MG_HOST_DEVICE constexpr int64_t num_blocks(int64_t n) { return (n + kBlock - 1) / kBlock; }

}  // namespace mutagrad::blocked
