// The CPU's pooling kernels: the formulas of tensor/pool_math.h over each plane (Note [Pooling
// kernels] in tensor/native/pooling.h), planes split over two threads when there is enough work.
#include <algorithm>
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

}  // namespace

void CpuBackend::max_pool2d(const Tensor& values, const Tensor& indices, const Tensor& x,
                            const PoolWindows& rows, const PoolWindows& cols) {
  const int64_t h = x.size(1), w = x.size(2), oh = values.size(1), ow = values.size(2);
  const PoolDim r = view(rows), c = view(cols);
  dispatch_float(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* src = x.data_ptr<T>();
    T* out = values.data_ptr<T>();
    int64_t* idx = indices.data_ptr<int64_t>();
    for_planes(x.size(0), oh * ow * rows.k * cols.k, [&](int64_t p) {
      const T* plane = src + p * h * w;
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t o = (p * oh + i) * ow + j;
          max_pool_window(plane, w, r, c, i, j, out + o, idx + o);
        }
      }
    });
  });
}

void CpuBackend::max_pool2d_backward(const Tensor& gx, const Tensor& gy, const Tensor& indices,
                                     const PoolWindows& rows, const PoolWindows& cols) {
  const int64_t h = gx.size(1), w = gx.size(2), oh = gy.size(1), ow = gy.size(2);
  const PoolDim r = view(rows), c = view(cols);
  const std::vector<int64_t> empty = padding_only_windows(rows, cols);
  const auto n_empty = static_cast<int64_t>(empty.size());
  dispatch_float(gx, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* g = gy.data_ptr<T>();
    const int64_t* idx = indices.data_ptr<int64_t>();
    T* out = gx.data_ptr<T>();
    for_planes(gx.size(0), h * w + oh * ow, [&](int64_t p) {
      for (int64_t a = 0; a < h; ++a) {
        for (int64_t b = 0; b < w; ++b) {
          out[(p * h + a) * w + b] = max_pool_input_grad(g + p * oh * ow, idx + p * oh * ow, w, ow,
                                                         r, c, empty.data(), n_empty, a, b);
        }
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
  const PoolDim r = view(rows), c = view(cols);
  dispatch_float(gx, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* g = gy.data_ptr<T>();
    const T* div = divisor.data_ptr<T>();
    T* out = gx.data_ptr<T>();
    for_planes(gx.size(0), h * w + oh * ow, [&](int64_t p) {
      for (int64_t a = 0; a < h; ++a) {
        for (int64_t b = 0; b < w; ++b) {
          out[(p * h + a) * w + b] = avg_pool_input_grad(g + p * oh * ow, div, ow, r, c, a, b);
        }
      }
    });
  });
}

}  // namespace mutagrad::cpu
