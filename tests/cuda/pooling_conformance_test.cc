// The pooling kernels (native::max_pool2d, avg_pool2d and their adjoints; Note [Pooling kernels]
// in tensor/native/pooling.h) on the CPU and the CUDA device against a naive reference written
// here the other way round: the gradients as scatters of the outputs in output order, not as
// the kernels' gathers over the input. Both orders add each element's terms in the same
// sequence, so every device must match the reference bit for bit (NaN as NaN), over random
// windows (any first position, count and step per window, windows of padding only whose
// reported index lies before or past the plane; a quarter regular 2- and 3-element windows, the
// CPU's fixed-size path), random layouts, nan/inf/-0.0 inputs and gradients, float32, float64,
// and half/bfloat16 (computed in float32, rounded once).
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pooling.h"
#include "tests/cuda/conformance_util.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using conformance::DeviceTest;
using conformance::expect_same;
using conformance::host;
using conformance::same_on;
using tensor_testing::Random;

// Random windows over a dim of size `in`.
PoolWindows random_windows(Random& rnd, int64_t in) {
  PoolWindows w;
  w.step = rnd.uniform(1, 3);
  const int64_t n = rnd.uniform(1, 5);
  for (int64_t o = 0; o < n; ++o) {
    if (rnd.uniform(0, 6) == 0) {  // padding only: torch's index, anywhere
      w.first.push_back(rnd.uniform(-3, in + 4));
      w.count.push_back(0);
      continue;
    }
    const int64_t first = rnd.uniform(0, in - 1);
    w.first.push_back(first);
    w.count.push_back(rnd.uniform(1, (in - 1 - first) / w.step + 1));
    w.k = std::max(w.k, w.count.back());
  }
  w.set_ranges(in);
  return w;
}

struct Case {
  int64_t planes, h, w;
  PoolWindows rows, cols;
  std::string str() const {
    return mutagrad::str("planes ", planes, " h ", h, " w ", w, " rows ", IntArrayRef(rows.first),
                         "/", IntArrayRef(rows.count), " step ", rows.step, " cols ",
                         IntArrayRef(cols.first), "/", IntArrayRef(cols.count), " step ",
                         cols.step);
  }
  int64_t oh() const { return static_cast<int64_t>(rows.first.size()); }
  int64_t ow() const { return static_cast<int64_t>(cols.first.size()); }
};

// Full k-element windows every `stride` positions (a max_pool2d(k, stride) without padding:
// the CPU's fixed-size path for k = 2 and 3).
PoolWindows regular_windows(int64_t in, int64_t k, int64_t stride, int64_t step) {
  PoolWindows w;
  w.step = step;
  w.k = k;
  for (int64_t first = 0; first + (k - 1) * step < in; first += stride) {
    w.first.push_back(first);
    w.count.push_back(k);
  }
  w.set_ranges(in);
  return w;
}

// One case in four: regular windows of 2 or 3 elements per dim.
Case random_case(Random& rnd) {
  Case c;
  c.planes = rnd.uniform(0, 6) == 0 ? 0 : rnd.uniform(1, 3);
  if (rnd.uniform(0, 3) == 0) {
    const int64_t k = rnd.uniform(2, 3), stride = rnd.uniform(1, 3), step = rnd.uniform(1, 2);
    c.h = rnd.uniform((k - 1) * step + 1, 9);
    c.w = rnd.uniform((k - 1) * step + 1, 9);
    c.rows = regular_windows(c.h, k, stride, step);
    c.cols = regular_windows(c.w, k, stride, step);
    return c;
  }
  c.h = rnd.uniform(1, 7);
  c.w = rnd.uniform(1, 7);
  c.rows = random_windows(rnd, c.h);
  c.cols = random_windows(rnd, c.w);
  return c;
}

// The reference: window (i, j)'s element (a, b) and the flat position it reads.
template <typename F>
void for_window(const Case& c, int64_t i, int64_t j, const F& f) {
  for (int64_t a = 0; a < c.rows.count[i]; ++a) {
    for (int64_t b = 0; b < c.cols.count[j]; ++b) {
      f((c.rows.first[i] + a * c.rows.step) * c.w + c.cols.first[j] + b * c.cols.step);
    }
  }
}

template <typename T>
std::pair<Tensor, Tensor> reference_max(const Case& c, const Tensor& x_any) {
  const Tensor x = host(x_any);
  Tensor values = empty({c.planes, c.oh(), c.ow()}, x.dtype());
  Tensor indices = empty({c.planes, c.oh(), c.ow()}, kInt64);
  const T* xs = x.data_ptr<T>();
  for (int64_t p = 0; p < c.planes; ++p) {
    for (int64_t i = 0; i < c.oh(); ++i) {
      for (int64_t j = 0; j < c.ow(); ++j) {
        T best = -std::numeric_limits<T>::infinity();
        auto at = static_cast<int64_t>(static_cast<uint64_t>(c.rows.first[i]) *
                                           static_cast<uint64_t>(c.w) +
                                       static_cast<uint64_t>(c.cols.first[j]));
        for_window(c, i, j, [&](int64_t q) {
          const T v = xs[p * c.h * c.w + q];
          if (v > best || std::isnan(v)) {
            best = v;
            at = q;
          }
        });
        values.data_ptr<T>()[(p * c.oh() + i) * c.ow() + j] = best;
        indices.data_ptr<int64_t>()[(p * c.oh() + i) * c.ow() + j] = at;
      }
    }
  }
  return {values, indices};
}

// gy scattered to the positions in indices (positions outside the plane add nowhere), in
// output order: first the windows that read elements, then those of padding only.
template <typename T>
Tensor reference_max_backward(const Case& c, const Tensor& gy_any, const Tensor& idx_any) {
  const Tensor gy = host(gy_any), idx = host(idx_any);
  Tensor gx = zeros({c.planes, c.h, c.w}, gy.dtype());
  T* out = gx.data_ptr<T>();
  for (const bool padding_only : {false, true}) {
    for (int64_t o = 0; o < gy.numel(); ++o) {
      const int64_t p = o / (c.oh() * c.ow()), q = idx.data_ptr<int64_t>()[o];
      const int64_t i = o / c.ow() % c.oh(), j = o % c.ow();
      if ((c.rows.count[i] == 0 || c.cols.count[j] == 0) != padding_only) continue;
      if (q >= 0 && q < c.h * c.w) out[p * c.h * c.w + q] += gy.data_ptr<T>()[o];
    }
  }
  return gx;
}

template <typename T>
Tensor reference_avg(const Case& c, const Tensor& x_any, const Tensor& div_any) {
  const Tensor x = host(x_any), div = host(div_any);
  Tensor y = empty({c.planes, c.oh(), c.ow()}, x.dtype());
  for (int64_t p = 0; p < c.planes; ++p) {
    for (int64_t i = 0; i < c.oh(); ++i) {
      for (int64_t j = 0; j < c.ow(); ++j) {
        T sum = 0;
        for_window(c, i, j, [&](int64_t q) { sum += x.data_ptr<T>()[p * c.h * c.w + q]; });
        y.data_ptr<T>()[(p * c.oh() + i) * c.ow() + j] = sum / div.data_ptr<T>()[i * c.ow() + j];
      }
    }
  }
  return y;
}

// Each output's gy / divisor scattered over its window, in output order.
template <typename T>
Tensor reference_avg_backward(const Case& c, const Tensor& gy_any, const Tensor& div_any) {
  const Tensor gy = host(gy_any), div = host(div_any);
  Tensor gx = zeros({c.planes, c.h, c.w}, gy.dtype());
  for (int64_t p = 0; p < c.planes; ++p) {
    for (int64_t i = 0; i < c.oh(); ++i) {
      for (int64_t j = 0; j < c.ow(); ++j) {
        const T q =
            gy.data_ptr<T>()[(p * c.oh() + i) * c.ow() + j] / div.data_ptr<T>()[i * c.ow() + j];
        for_window(c, i, j, [&](int64_t e) { gx.data_ptr<T>()[p * c.h * c.w + e] += q; });
      }
    }
  }
  return gx;
}

class PoolingConformance : public DeviceTest {};

TEST_P(PoolingConformance, KernelsMatchTheScatterReferenceBitwise) {
  const Device device = GetParam();
  for (int trial = 0; trial < 300; ++trial) {
    const Case c = random_case(rnd_);
    const ScalarType dtype = trial % 2 == 0 ? kFloat32 : kFloat64;
    const std::string what = str(c.str(), " ", dtype);
    const Tensor x = conformance::input(rnd_, {c.planes, c.h, c.w}, dtype);
    const Tensor gy = conformance::input(rnd_, {c.planes, c.oh(), c.ow()}, dtype);
    std::vector<double> divs;
    for (int64_t e = 0; e < c.oh() * c.ow(); ++e) {
      divs.push_back(static_cast<double>(rnd_.uniform(1, 9)) * (trial % 3 == 0 ? 0.75 : 1.0));
    }
    const Tensor div = native::to(from_vector(divs, {c.oh(), c.ow()}), dtype);
    auto run = [&](auto zero) {
      using T = decltype(zero);
      {
        const auto [values, indices] = native::max_pool2d(same_on(x, device), c.rows, c.cols);
        const auto [want_values, want_indices] = reference_max<T>(c, x);
        expect_same(values, want_values, 0, "max_pool2d values: " + what);
        expect_same(indices, want_indices, 0, "max_pool2d indices: " + what);
        expect_same(native::max_pool2d_backward(same_on(gy, device), indices, c.rows, c.cols,
                                                {c.planes, c.h, c.w}),
                    reference_max_backward<T>(c, gy, want_indices), 0,
                    "max_pool2d_backward: " + what);
        const Tensor d = same_on(div, device);
        expect_same(native::avg_pool2d(same_on(x, device), c.rows, c.cols, d),
                    reference_avg<T>(c, x, div), 0, "avg_pool2d: " + what);
        expect_same(native::avg_pool2d_backward(same_on(gy, device), c.rows, c.cols, d,
                                                {c.planes, c.h, c.w}),
                    reference_avg_backward<T>(c, gy, div), 0, "avg_pool2d_backward: " + what);
      }
    };
    if (dtype == kFloat32) {
      run(0.0f);
    } else {
      run(0.0);
    }
  }
}

// half and bfloat16 compute in float32 and round once.
TEST_P(PoolingConformance, ReducedFloatsComputeInFloat32) {
  const Device device = GetParam();
  for (int trial = 0; trial < 60; ++trial) {
    const Case c = random_case(rnd_);
    const ScalarType dtype = trial % 2 == 0 ? kHalf : kBFloat16;
    const std::string what = str(c.str(), " ", dtype);
    const Tensor x = native::to(conformance::input(rnd_, {c.planes, c.h, c.w}, dtype), device);
    const Tensor gy =
        native::to(conformance::input(rnd_, {c.planes, c.oh(), c.ow()}, dtype), device);
    const Tensor div = native::to(full({c.oh(), c.ow()}, 3.0, kFloat32), device);
    const Tensor xf = native::to(x, kFloat32), gyf = native::to(gy, kFloat32);
    const auto [values, indices] = native::max_pool2d(x, c.rows, c.cols);
    const auto [want_values, want_indices] = native::max_pool2d(xf, c.rows, c.cols);
    expect_same(values, native::to(want_values, dtype), 0, "max_pool2d: " + what);
    expect_same(indices, want_indices, 0, "max_pool2d indices: " + what);
    const DimVector in{c.planes, c.h, c.w};
    expect_same(native::max_pool2d_backward(gy, indices, c.rows, c.cols, in),
                native::to(native::max_pool2d_backward(gyf, indices, c.rows, c.cols, in), dtype), 0,
                "max_pool2d_backward: " + what);
    expect_same(native::avg_pool2d(x, c.rows, c.cols, div),
                native::to(native::avg_pool2d(xf, c.rows, c.cols, div), dtype), 0,
                "avg_pool2d: " + what);
    expect_same(native::avg_pool2d_backward(gy, c.rows, c.cols, div, in),
                native::to(native::avg_pool2d_backward(gyf, c.rows, c.cols, div, in), dtype), 0,
                "avg_pool2d_backward: " + what);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, PoolingConformance, conformance::kDevices,
                         conformance::device_name);

}  // namespace
}  // namespace mutagrad
