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
#include <limits>

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

// The maximum of window (i, j) of plane x [.., w] and its flat position: torch's kernels' rule
// `val > max || isnan(val)` from -inf in row-major order (the last NaN, else the first
// maximum); a window of padding only, or of -inf only, reports its first position (wrapping
// arithmetic: torch's index for a padding-only window may lie far past the plane).
template <typename T>
MG_HOST_DEVICE void max_pool_window(const T* x, int64_t w, const PoolDim& r, const PoolDim& c,
                                    int64_t i, int64_t j, T* value, int64_t* index) {
  const int64_t fr = r.first[i], fc = c.first[j], nr = r.count[i], nc = c.count[j];
  int64_t best = static_cast<int64_t>(static_cast<uint64_t>(fr) * static_cast<uint64_t>(w) +
                                      static_cast<uint64_t>(fc));
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t a = 0; a < nr; ++a) {
    const int64_t row = (fr + a * r.step) * w + fc;
    for (int64_t b = 0; b < nc; ++b) {
      const int64_t p = row + b * c.step;
      const T v = x[p];
      if (v > m || v != v) {
        m = v;
        best = p;
      }
    }
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
