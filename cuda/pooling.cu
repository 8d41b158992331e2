// CUDA pooling: the formulas of tensor/pool_math.h, one element per functor call (Note [Pooling
// kernels] in tensor/native/pooling.h); the CPU's are in tensor/cpu/pooling.cc.
//
//   max_pool2d_kernel(values, indices, x, rows, cols);   // one call per output element
//   avg_pool2d_backward_kernel(gx, gy, rows, cols, div); // one call per input element
//
// The window tables go to the device once per call (one upload of four int64 arrays per dim).
#include <vector>

#include "cuda/kernel_util.h"
#include "cuda/kernels.h"
#include "tensor/native/copy.h"
#include "tensor/pool_math.h"

namespace mutagrad::cuda {
namespace {

// rows' and cols' tables on the device, their PoolDim views and the windows of padding only.
struct DeviceWindows {
  Tensor buffer;
  PoolDim rows{}, cols{};
  const int64_t* empty = nullptr;
  int64_t n_empty = 0;
};

DeviceWindows upload(const PoolWindows& rows, const PoolWindows& cols, Device device) {
  std::vector<int64_t> all;
  for (const PoolWindows* w : {&rows, &cols}) {
    for (const std::vector<int64_t>* v : {&w->first, &w->count, &w->lo, &w->hi}) {
      all.insert(all.end(), v->begin(), v->end());
    }
  }
  const std::vector<int64_t> empty = padding_only_windows(rows, cols);
  all.insert(all.end(), empty.begin(), empty.end());
  DeviceWindows d;
  d.buffer = native::to(from_vector(all, {static_cast<int64_t>(all.size())}), device);
  const auto* p = reinterpret_cast<const int64_t*>(device_data(d.buffer));
  for (auto [w, dim] : {std::pair{&rows, &d.rows}, std::pair{&cols, &d.cols}}) {
    const auto n = static_cast<int64_t>(w->first.size());
    const auto in = static_cast<int64_t>(w->lo.size());
    *dim = PoolDim{p, p + n, p + 2 * n, p + 2 * n + in, w->step};
    p += 2 * n + 2 * in;
  }
  d.empty = p;
  d.n_empty = static_cast<int64_t>(empty.size());
  return d;
}

template <typename T>
struct MaxPoolFunctor {
  const T* x;
  T* values;
  int64_t* indices;
  int64_t h, w, oh, ow;
  PoolDim r, c;
  MG_HOST_DEVICE void operator()(int64_t o) const {
    const int64_t j = o % ow, i = o / ow % oh, p = o / (oh * ow);
    max_pool_window(x + p * h * w, w, r, c, i, j, values + o, indices + o);
  }
};

template <typename T>
struct MaxPoolBackwardFunctor {
  T* gx;
  const T* gy;
  const int64_t* indices;
  int64_t h, w, oh, ow;
  PoolDim r, c;
  const int64_t* empty;
  int64_t n_empty;
  MG_HOST_DEVICE void operator()(int64_t e) const {
    const int64_t b = e % w, a = e / w % h, p = e / (h * w);
    gx[e] = max_pool_input_grad(gy + p * oh * ow, indices + p * oh * ow, w, ow, r, c, empty,
                                n_empty, a, b);
  }
};

template <typename T>
struct AvgPoolFunctor {
  const T* x;
  const T* divisor;
  T* y;
  int64_t h, w, oh, ow;
  PoolDim r, c;
  MG_HOST_DEVICE void operator()(int64_t o) const {
    const int64_t j = o % ow, i = o / ow % oh, p = o / (oh * ow);
    y[o] = avg_pool_window(x + p * h * w, w, r, c, i, j, divisor[i * ow + j]);
  }
};

template <typename T>
struct AvgPoolBackwardFunctor {
  T* gx;
  const T* gy;
  const T* divisor;
  int64_t h, w, oh, ow;
  PoolDim r, c;
  MG_HOST_DEVICE void operator()(int64_t e) const {
    const int64_t b = e % w, a = e / w % h, p = e / (h * w);
    gx[e] = avg_pool_input_grad(gy + p * oh * ow, divisor, ow, r, c, a, b);
  }
};

// Calls fn with a null pointer of t's dtype (float32 or float64, Backend's contract).
template <typename F>
void dispatch_float(const Tensor& t, const F& fn) {
  if (t.dtype() == kFloat64) {
    fn(static_cast<double*>(nullptr));
  } else {
    fn(static_cast<float*>(nullptr));
  }
}

template <typename T>
T* typed(const Tensor& t) {
  return reinterpret_cast<T*>(device_data(t));
}

}  // namespace

void max_pool2d_kernel(const Tensor& values, const Tensor& indices, const Tensor& x,
                       const PoolWindows& rows, const PoolWindows& cols) {
  const DeviceWindows d = upload(rows, cols, x.device());
  dispatch_float(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch("max_pool2d", values.numel(),
           MaxPoolFunctor<T>{typed<T>(x), typed<T>(values), typed<int64_t>(indices), x.size(1),
                             x.size(2), values.size(1), values.size(2), d.rows, d.cols});
  });
}

void max_pool2d_backward_kernel(const Tensor& gx, const Tensor& gy, const Tensor& indices,
                                const PoolWindows& rows, const PoolWindows& cols) {
  const DeviceWindows d = upload(rows, cols, gx.device());
  dispatch_float(gx, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch("max_pool2d_backward", gx.numel(),
           MaxPoolBackwardFunctor<T>{typed<T>(gx), typed<T>(gy), typed<int64_t>(indices),
                                     gx.size(1), gx.size(2), gy.size(1), gy.size(2), d.rows, d.cols,
                                     d.empty, d.n_empty});
  });
}

void avg_pool2d_kernel(const Tensor& y, const Tensor& x, const PoolWindows& rows,
                       const PoolWindows& cols, const Tensor& divisor) {
  const DeviceWindows d = upload(rows, cols, x.device());
  dispatch_float(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch("avg_pool2d", y.numel(),
           AvgPoolFunctor<T>{typed<T>(x), typed<T>(divisor), typed<T>(y), x.size(1), x.size(2),
                             y.size(1), y.size(2), d.rows, d.cols});
  });
}

void avg_pool2d_backward_kernel(const Tensor& gx, const Tensor& gy, const PoolWindows& rows,
                                const PoolWindows& cols, const Tensor& divisor) {
  const DeviceWindows d = upload(rows, cols, gx.device());
  dispatch_float(gx, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch("avg_pool2d_backward", gx.numel(),
           AvgPoolBackwardFunctor<T>{typed<T>(gx), typed<T>(gy), typed<T>(divisor), gx.size(1),
                                     gx.size(2), gy.size(1), gy.size(2), d.rows, d.cols});
  });
}

}  // namespace mutagrad::cuda
