// The association order of a long running fold (cumsum/cumprod of a line), and of the values
// an accumulating write folds into one destination, shared by the CPU backend
// (tensor/cpu/scan.cc, tensor/cpu/index_put.cc) and the CUDA kernels (cuda/reduce.cu,
// cuda/indexing.cu) so that both give the same bits while each splits the work between threads.
//
//   const int64_t nb = blocked::num_blocks(len);  // blocks of kBlock elements, the last shorter
//   T d = blocked::fold(d0, m, [&](int64_t k) { return value_k; }, combine);  // one destination
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
//
// Note [Blocked accumulation order]
// index_put_(accumulate=True), index_add_, scatter_add_ and their products fold the values
// written to one destination element, w_0, ..., w_{m-1} in index order, into its value d (or
// into IndexPutDescriptor::start) in the element's dtype. With the same blocks: the first
// kBlock values fold into d in order, d = (...((d . w_0) . w_1) ...) . w_{kBlock-1}; each later
// block folds in order from its own first value, l_j = (...(w_b . w_{b+1}) ...) . w_{e-1}, and
// then d = d . l_j, block after block. A destination with at most kBlock values (every one of
// a write without many duplicates) therefore folds strictly in index order, as before this
// order existed and as PyTorch's CPU; one with more (an all-equal index) gets partials that a
// GPU folds at once, one thread per block, then chains in order. Integer + and * wrap and max/
// min pick a value: the same bits in any order, so only floating sums and products follow it
// (OrderMatters). fold() below is the order written out for one destination.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tensor/element_math.h"
#include "tensor/host_device.h"

namespace mutagrad::blocked {

constexpr int64_t kBlock = 1024;

// The number of blocks of a line of n >= 1 elements.
MG_HOST_DEVICE constexpr int64_t num_blocks(int64_t n) { return (n + kBlock - 1) / kBlock; }

// Note [Blocked accumulation order] for m values: value(k) is w_k, combine(acc, w) one step.
template <typename T, typename Value, typename Combine>
MG_HOST_DEVICE T fold(T init, int64_t m, const Value& value, const Combine& combine) {
  const int64_t first = m < kBlock ? m : kBlock;
  T acc = init;
  for (int64_t k = 0; k < first; ++k) acc = combine(acc, value(k));
  for (int64_t b = first; b < m; b += kBlock) {
    const int64_t e = b + kBlock < m ? b + kBlock : m;
    T l = value(b);
    for (int64_t k = b + 1; k < e; ++k) l = combine(l, value(k));
    acc = combine(acc, l);
  }
  return acc;
}

// Whether folding T with Combine depends on the order: floating + and * (not integers, which
// wrap, nor max/min). Combine is math::AddValues, MulValues, MaxValues or MinValues.
template <typename T, typename Combine>
constexpr bool order_matters() {
  return !std::is_integral_v<T> &&
         (std::is_same_v<Combine, math::AddValues> || std::is_same_v<Combine, math::MulValues>);
}

}  // namespace mutagrad::blocked
