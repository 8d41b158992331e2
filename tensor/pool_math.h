// The per-element formulas of the pooling kernels (Backend::max_pool2d and the rest), compiled
// for the CPU backend and for the CUDA kernels (cuda/pooling.cu), so both give the same bits.
//
//   PoolDim r{first, count, lo, hi, step};                  // host or device pointers
//   max_pool_window(x + plane * h * w, w, r, c, i, j, &value, &index);
//
// Each output window and each input element is computed on its own, in a fixed order: a
// window's elements row-major; an input element's windows (the gradient) in output order,
// the order a sequential scatter of the outputs would add them in.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tensor/host_device.h"

namespace mutagrad {

// A PoolWindows (tensor/backend.h) as kernels read it.
struct PoolDim {
  const int64_t* first;
  const int64_t* count;
  const int64_t* lo;
  const int64_t* hi;
  int64_t step;
};

// take ? a : b for float or double, by the bits: no branch for the compiler to make.
template <typename T>
MG_HOST_DEVICE T select_bits(bool take, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  U ua, ub;
  memcpy(&ua, &a, sizeof(T));
  memcpy(&ub, &b, sizeof(T));
  const U mask = U(0) - static_cast<U>(take);
  const U r = (ua & mask) | (ub & ~mask);
  T out;
  memcpy(&out, &r, sizeof(T));
  return out;
}

// One step of torch's kernels' rule `val > max || isnan(val)`: element v at position p taken
// as the window's maximum (the last NaN, else the first maximum), by selects, not branches (a
// branch on random data mispredicts half the time): `|` and not `||`, the value by its bits
// and the position by arithmetic.
template <typename T>
MG_HOST_DEVICE void max_pool_take(T v, int64_t p, T* m, int64_t* best) {
  const int64_t take = static_cast<int64_t>((v > *m) | (v != v));
  *m = select_bits(take != 0, v, *m);
  *best += (p - *best) * take;
}

// Where a window's maximum starts: -inf at the window's first position, first row * w + first
// column (wrapping: torch's index for a window of padding only may lie far past the plane),
// which a window of padding only, or of -inf only, reports.
MG_HOST_DEVICE inline int64_t max_pool_start(int64_t first_row, int64_t first_col, int64_t w) {
  return static_cast<int64_t>(static_cast<uint64_t>(first_row) * static_cast<uint64_t>(w) +
                              static_cast<uint64_t>(first_col));
}

// The maximum of window (i, j) of plane x [.., w] and its flat position: max_pool_take over the
// window's elements in row-major order from max_pool_start.
template <typename T>
MG_HOST_DEVICE void max_pool_window(const T* x, int64_t w, const PoolDim& r, const PoolDim& c,
                                    int64_t i, int64_t j, T* value, int64_t* index) {
  const int64_t fr = r.first[i], fc = c.first[j], nr = r.count[i], nc = c.count[j];
  int64_t best = max_pool_start(fr, fc, w);
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t a = 0; a < nr; ++a) {
    const int64_t row = (fr + a * r.step) * w + fc;
    for (int64_t b = 0; b < nc; ++b)
      max_pool_take(x[row + b * c.step], row + b * c.step, &m, &best);
  }
  *value = m;
  *index = best;
}

// Whether window o of a dim reads input position p.
MG_HOST_DEVICE inline bool pool_window_holds(const PoolDim& d, int64_t o, int64_t p) {
  const int64_t off = p - d.first[o];
  return off >= 0 && off % d.step == 0 && off / d.step < d.count[o];
}

// Input element (h, col) of a plane's gradient: the sum, from 0, of the gradients gy [.., ow]
// of the windows that read it and whose maximum it is (idx, its flat position), in output order
// (lo and hi bound them; windows between may not read it), then those of
// the windows of padding only (`empty`, n_empty output positions, ascending) whose torch index
// names it: such an index is first row * w + first column, which may land inside the plane
// (a column window past the right edge names the next row), where torch adds it too.
template <typename T>
MG_HOST_DEVICE T max_pool_input_grad(const T* gy, const int64_t* idx, int64_t w, int64_t ow,
                                     const PoolDim& r, const PoolDim& c, const int64_t* empty,
                                     int64_t n_empty, int64_t h, int64_t col) {
  const int64_t p = h * w + col;
  T sum = T(0);
  for (int64_t i = r.lo[h]; i < r.hi[h]; ++i) {
    if (!pool_window_holds(r, i, h)) continue;
    for (int64_t j = c.lo[col]; j < c.hi[col]; ++j) {
      if (pool_window_holds(c, j, col) && idx[i * ow + j] == p) sum += gy[i * ow + j];
    }
  }
  for (int64_t e = 0; e < n_empty; ++e) {
    if (idx[empty[e]] == p) sum += gy[empty[e]];
  }
  return sum;
}

// The sum of window (i, j) of plane x [.., w], row-major, divided by its divisor.
template <typename T>
MG_HOST_DEVICE T avg_pool_window(const T* x, int64_t w, const PoolDim& r, const PoolDim& c,
                                 int64_t i, int64_t j, T divisor) {
  const int64_t fr = r.first[i], fc = c.first[j], nr = r.count[i], nc = c.count[j];
  T sum = T(0);
  for (int64_t a = 0; a < nr; ++a) {
    const int64_t row = (fr + a * r.step) * w + fc;
    for (int64_t b = 0; b < nc; ++b) sum += x[row + b * c.step];
  }
  return sum / divisor;
}

// Input element (h, col) of a plane's gradient: gy [.., ow] / divisor [oh, ow] summed, from 0
// in output order, over the windows that read it.
template <typename T>
MG_HOST_DEVICE T avg_pool_input_grad(const T* gy, const T* divisor, int64_t ow, const PoolDim& r,
                                     const PoolDim& c, int64_t h, int64_t col) {
  T sum = T(0);
  for (int64_t i = r.lo[h]; i < r.hi[h]; ++i) {
    if (!pool_window_holds(r, i, h)) continue;
    for (int64_t j = c.lo[col]; j < c.hi[col]; ++j) {
      if (pool_window_holds(c, j, col)) sum += gy[i * ow + j] / divisor[i * ow + j];
    }
  }
  return sum;
}

}  // namespace mutagrad
