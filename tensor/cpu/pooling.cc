// The CPU's pooling kernels: the formulas of tensor/pool_math.h over each plane (Note [Pooling
// kernels] in tensor/native/pooling.h), planes split over two threads when there is enough work.
#include <algorithm>
#include <limits>
#include <vector>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/pool_math.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

PoolDim view(const PoolWindows& w) {
  return {w.first.data(), w.count.data(), w.lo.data(), w.hi.data(), w.step};
}

// Runs fn(plane) for each of `planes` planes, each costing about `per_plane` element reads.
template <typename F>
void for_planes(int64_t planes, int64_t per_plane, const F& fn) {
  const int64_t threshold =
      std::max<int64_t>(1, kParallelThreshold / std::max<int64_t>(1, per_plane));
  parallel_for(
      planes,
      [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) fn(p);
      },
      threshold);
}

// Calls fn with a null pointer of x's dtype (float32 or float64, Backend's contract).
template <typename F>
void dispatch_float(const Tensor& x, const F& fn) {
  if (x.dtype() == kFloat64) {
    fn(static_cast<double*>(nullptr));
  } else {
    fn(static_cast<float*>(nullptr));
  }
}

// Whether every window along w reads exactly k elements (none clipped, none of padding only).
bool full_windows(const PoolWindows& w, int64_t k) {
  for (int64_t c : w.count) {
    if (c != k) return false;
  }
  return true;
}

// Output row i of a plane whose windows are all kR x kC (the common 2 x 2 and 3 x 3 kernels):
// max_pool_window with the counts known to the compiler, so each window's steps unroll into
// one short chain and the row's windows overlap.
template <typename T, int kR, int kC>
void max_pool_row_fixed(const T* plane, int64_t w, const PoolWindows& rows, const PoolWindows& cols,
                        int64_t i, int64_t ow, T* m, int64_t* best) {
  const int64_t fr = rows.first[static_cast<size_t>(i)];
  for (int64_t j = 0; j < ow; ++j) {
    const int64_t fc = cols.first[static_cast<size_t>(j)];
    T v = -std::numeric_limits<T>::infinity();
    int64_t at = max_pool_start(fr, fc, w);
    for (int a = 0; a < kR; ++a) {
      const int64_t row = (fr + a * rows.step) * w + fc;
      for (int b = 0; b < kC; ++b)
        max_pool_take(plane[row + b * cols.step], row + b * cols.step, &v, &at);
    }
    m[j] = v;
    best[j] = at;
  }
}

}  // namespace

// The CPU runs max_pool_window's steps for a whole output row at once: for each element (a, b)
// of the windows, every window j of the row takes its element. Each window still sees its
// elements in row-major order, so the results are the formula's; but the windows' chains of
// dependent selects interleave instead of running one after the other.
void CpuBackend::max_pool2d(const Tensor& values, const Tensor& indices, const Tensor& x,
                            const PoolWindows& rows, const PoolWindows& cols) {
  const int64_t h = x.size(1), w = x.size(2), oh = values.size(1), ow = values.size(2);
  dispatch_float(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* src = x.data_ptr<T>();
    T* vals = values.data_ptr<T>();
    int64_t* idxs = indices.data_ptr<int64_t>();
    const int64_t* first_c = cols.first.data();
    const int64_t* count_c = cols.count.data();
    // All windows 2 x 2 or 3 x 3: the fixed-size rows.
    void (*fixed)(const T*, int64_t, const PoolWindows&, const PoolWindows&, int64_t, int64_t, T*,
                  int64_t*) = nullptr;
    if (full_windows(rows, rows.k) && full_windows(cols, cols.k) && rows.k == cols.k) {
      if (rows.k == 2) fixed = max_pool_row_fixed<T, 2, 2>;
      if (rows.k == 3) fixed = max_pool_row_fixed<T, 3, 3>;
    }
    for_planes(x.size(0), oh * ow * rows.k * cols.k, [&](int64_t p) {
      const T* plane = src + p * h * w;
      for (int64_t i = 0; i < oh; ++i) {
        const auto ui = static_cast<size_t>(i);
        T* m = vals + (p * oh + i) * ow;
        int64_t* best = idxs + (p * oh + i) * ow;
        if (fixed != nullptr) {
          fixed(plane, w, rows, cols, i, ow, m, best);
          continue;
        }
        for (int64_t j = 0; j < ow; ++j) {
          m[j] = -std::numeric_limits<T>::infinity();
          best[j] = max_pool_start(rows.first[ui], first_c[j], w);
        }
        for (int64_t a = 0; a < rows.count[ui]; ++a) {
          const int64_t row = (rows.first[ui] + a * rows.step) * w;
          for (int64_t b = 0; b < cols.k; ++b) {
            const int64_t off = row + b * cols.step;
            for (int64_t j = 0; j < ow; ++j) {
              if (b < count_c[j])
                max_pool_take(plane[off + first_c[j]], off + first_c[j], m + j, best + j);
            }
          }
        }
      }
    });
  });
}

// Note [Pooling gradients as scatters on the CPU]
// pool_math.h defines each input element's gradient as a gather over the windows, in output
// order. One thread per plane can instead scatter the outputs in that order: every element then
// receives the same terms, from 0, in the same sequence, so the bits are the gather's
// (pooling_conformance_test checks both against one reference), for a pass over the outputs
// instead of a search for the windows of each input element.
void CpuBackend::max_pool2d_backward(const Tensor& gx, const Tensor& gy, const Tensor& indices,
                                     const PoolWindows& rows, const PoolWindows& cols) {
  const int64_t plane = gx.size(1) * gx.size(2), outs = gy.size(1) * gy.size(2);
  const std::vector<int64_t> empty = padding_only_windows(rows, cols);
  std::vector<char> is_empty(empty.empty() ? 0 : static_cast<size_t>(outs), 0);
  for (int64_t o : empty) is_empty[static_cast<size_t>(o)] = 1;
  dispatch_float(gx, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* gys = gy.data_ptr<T>();
    const int64_t* idxs = indices.data_ptr<int64_t>();
    T* gxs = gx.data_ptr<T>();
    for_planes(gx.size(0), plane + outs, [&](int64_t p) {
      T* out = gxs + p * plane;
      const T* g = gys + p * outs;
      const int64_t* idx = idxs + p * outs;
      std::fill(out, out + plane, T(0));
      // The windows that read elements, in output order: each winner lies in the plane.
      for (int64_t o = 0; o < outs; ++o) {
        if (!is_empty.empty() && is_empty[static_cast<size_t>(o)] != 0) continue;
        out[idx[o]] += g[o];
      }
      // Then the windows of padding only whose torch index names an element.
      for (int64_t o : empty) {
        if (idx[o] >= 0 && idx[o] < plane) out[idx[o]] += g[o];
      }
    });
  });
}

void CpuBackend::avg_pool2d(const Tensor& y, const Tensor& x, const PoolWindows& rows,
                            const PoolWindows& cols, const Tensor& divisor) {
  const int64_t h = x.size(1), w = x.size(2), oh = y.size(1), ow = y.size(2);
  const PoolDim r = view(rows), c = view(cols);
  dispatch_float(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* src = x.data_ptr<T>();
    const T* div = divisor.data_ptr<T>();
    T* out = y.data_ptr<T>();
    for_planes(x.size(0), oh * ow * rows.k * cols.k, [&](int64_t p) {
      const T* plane = src + p * h * w;
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          out[(p * oh + i) * ow + j] = avg_pool_window(plane, w, r, c, i, j, div[i * ow + j]);
        }
      }
    });
  });
}

void CpuBackend::avg_pool2d_backward(const Tensor& gx, const Tensor& gy, const PoolWindows& rows,
                                     const PoolWindows& cols, const Tensor& divisor) {
  const int64_t h = gx.size(1), w = gx.size(2), oh = gy.size(1), ow = gy.size(2);
  // A scatter of each output over its window, in output order (Note [Pooling gradients as
  // scatters on the CPU]).
  dispatch_float(gx, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* gys = gy.data_ptr<T>();
    const T* div = divisor.data_ptr<T>();
    T* gxs = gx.data_ptr<T>();
    for_planes(gx.size(0), h * w + oh * ow * rows.k * cols.k, [&](int64_t p) {
      T* out = gxs + p * h * w;
      const T* g = gys + p * oh * ow;
      std::fill(out, out + h * w, T(0));
      for (int64_t i = 0; i < oh; ++i) {
        const auto ui = static_cast<size_t>(i);
        for (int64_t j = 0; j < ow; ++j) {
          const auto uj = static_cast<size_t>(j);
          const T q = g[i * ow + j] / div[i * ow + j];
          for (int64_t a = 0; a < rows.count[ui]; ++a) {
            T* row = out + (rows.first[ui] + a * rows.step) * w + cols.first[uj];
            for (int64_t b = 0; b < cols.count[uj]; ++b) row[b * cols.step] += q;
          }
        }
      }
    });
  });
}

}  // namespace mutagrad::cpu
