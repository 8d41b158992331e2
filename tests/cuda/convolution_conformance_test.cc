// Convolution on the CUDA device against the CPU: the forward and both adjoints (input and weight
// gradients) of 1-d, 2-d and 3-d geometries (stride, padding per side, dilation, groups,
// depthwise, 1x1, kernels as large as the input, "same" padding with an even kernel), inputs of
// random layout, float32 and float64. On a GPU this is cuDNN (cuda/cudnn.cc) against oneDNN
// (float32) and the im2col reference (float64); in the host-run build the device runs the im2col
// reference, or with MUTAGRAD_HOST_RUN_DNN=1 (:convolution_conformance_test_host_dnn) the
// reference of the cuDNN call, which checks cuda/convolution.cc's mapping onto it.
//
// Both sides sum the same terms in different orders, so each element may differ by twice the
// error bound of a dot product of K terms: 2 K u sum|terms| (u = 2^-24 or 2^-53), with sum|terms|
// computed exactly enough as the same map of |x|, |w|, |gy| in float64. And the device repeats
// its bits: a second run of every map gives the same bytes (Note [Deterministic cuDNN
// convolutions]).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda.h"
#include "cuda/dnn.h"
#include "tensor/native/convolution.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tests/cuda/conformance_util.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using conformance::host;
using conformance::kGpu;
using conformance::same_on;
using tensor_testing::Random;

struct Geo {
  int64_t n, c, o, groups;
  DimVector in, k, stride, pl, pr, dil;

  ConvParams params() const { return ConvParams{stride, pl, pr, dil, groups}; }
  DimVector x_shape() const {
    DimVector s{n, c};
    for (int64_t v : in) s.push_back(v);
    return s;
  }
  DimVector w_shape() const {
    DimVector s{o, c / groups};
    for (int64_t v : k) s.push_back(v);
    return s;
  }
  DimVector y_shape() const { return native::conv_output_size(x_shape(), w_shape(), params()); }
  std::string str() const {
    return mutagrad::str("n ", n, " c ", c, " o ", o, " groups ", groups, " in ", in, " k ", k,
                         " stride ", stride, " pad ", pl, "/", pr, " dilation ", dil);
  }
};

Geo geo(int64_t n, int64_t c, int64_t o, int64_t groups, DimVector in, DimVector k,
        DimVector stride, DimVector pl, DimVector pr, DimVector dil) {
  return Geo{n, c, o, groups, in, k, stride, pl, pr, dil};
}

// Hand-picked geometries, one per path of Note [Convolution on the CUDA device] and the usual
// layers, then random ones.
std::vector<Geo> geometries() {
  std::vector<Geo> g{
      geo(2, 3, 8, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),     // 3x3 "same"
      geo(8, 3, 64, 1, {32, 32}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),  // the benchmark's
      geo(2, 4, 6, 1, {16, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}),   // padding_r cut
      geo(3, 4, 6, 2, {11, 10}, {3, 2}, {2, 1}, {1, 0}, {0, 1}, {1, 2}),   // groups, dilation
      geo(2, 8, 8, 8, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),   // depthwise
      geo(2, 3, 5, 1, {10, 9}, {4, 4}, {1, 1}, {1, 1}, {2, 2}, {1, 1}),    // even "same": explicit
      geo(2, 3, 4, 1, {6, 7}, {3, 3}, {1, 1}, {3, 0}, {0, 2}, {1, 1}),     // pl - pr >= stride
      geo(2, 16, 32, 1, {9, 8}, {1, 1}, {2, 2}, {0, 0}, {0, 0}, {1, 1}),   // 1x1, stride 2
      geo(1, 2, 3, 1, {8, 8}, {7, 7}, {1, 1}, {3, 3}, {3, 3}, {1, 1}),     // large kernel
      geo(2, 3, 4, 1, {12, 12}, {3, 3}, {1, 2}, {2, 2}, {2, 2}, {3, 3}),   // dilation 3
      geo(1, 2, 2, 1, {5, 5}, {5, 5}, {1, 1}, {0, 0}, {0, 0}, {1, 1}),     // kernel = input
      geo(3, 4, 5, 1, {20}, {5}, {2}, {2}, {2}, {2}),                      // 1-d
      geo(2, 4, 6, 2, {17}, {4}, {3}, {0}, {1}, {1}),                      // 1-d groups, cut input
      geo(2, 2, 4, 1, {5, 6, 7}, {3, 2, 3}, {1, 2, 1}, {1, 0, 1}, {1, 0, 1}, {1, 1, 2}),  // 3-d
      geo(1, 4, 4, 2, {4, 5, 6}, {2, 3, 3}, {2, 1, 1}, {0, 1, 2}, {1, 1, 0}, {1, 1, 1}),  // 3-d
  };
  std::mt19937 rng(37);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 24; ++i) {
    Geo r;
    const int64_t dims = 1 + i % 3;
    r.groups = pick(1, 3);
    r.n = pick(1, 3);
    r.c = r.groups * pick(1, 3);
    r.o = r.groups * pick(1, 3);
    for (int64_t d = 0; d < dims; ++d) {
      const int64_t k = pick(0, 4) == 0 ? 1 : pick(1, dims == 3 ? 3 : 5);
      const int64_t dil = pick(0, 2) == 0 ? 2 : 1;
      r.k.push_back(k);
      r.dil.push_back(dil);
      r.stride.push_back(pick(1, 3));
      r.pl.push_back(pick(0, 2));
      r.pr.push_back(pick(0, 2));
      const int64_t extent = dil * (k - 1) + 1;
      r.in.push_back(std::max<int64_t>(1, extent - r.pl[d] - r.pr[d]) + pick(0, dims == 3 ? 3 : 6));
    }
    g.push_back(r);
  }
  return g;
}

// The three maps of one geometry, on x's device.
std::vector<Tensor> maps(const Geo& g, const Tensor& x, const Tensor& w, const Tensor& gy) {
  return {native::conv_forward(x, w, g.params()),
          native::conv_backward_input(gy, w, g.params(), g.x_shape()),
          native::conv_backward_weight(x, gy, g.params(), g.w_shape())};
}

// The number of terms an element of each map sums (at most).
std::vector<double> terms(const Geo& g) {
  double k = 1, out = 1;
  for (int64_t v : g.k) k *= static_cast<double>(v);
  for (int64_t v : g.y_shape()) out *= static_cast<double>(v);
  out /= static_cast<double>(g.n * g.o);
  return {static_cast<double>(g.c / g.groups) * k, static_cast<double>(g.o / g.groups) * k,
          static_cast<double>(g.n) * out};
}

// t's values in a contiguous view one element into a larger storage: a storage offset that is not
// a multiple of 16 bytes, which cuda/convolution.cc copies to an aligned block for the library.
Tensor shifted(const Tensor& t) {
  Tensor big = empty({t.numel() + 1}, t.dtype());
  Tensor v = native::view(native::narrow(big, 0, 1, t.numel()), t.sizes());
  native::copy_(v, t);
  return v;
}

Tensor abs64(const Tensor& t) {
  return native::unary(UnaryOp::kAbs, native::to(host(t), kFloat64));
}

std::vector<double> doubles(const Tensor& t) {
  const Tensor d = native::contiguous(native::to(host(t), kFloat64));
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor u = host(a), v = host(b);
  return u.sizes() == v.sizes() && u.dtype() == v.dtype() &&
         std::memcmp(u.raw_data(), v.raw_data(),
                     static_cast<size_t>(u.numel() * u.element_size())) == 0;
}

TEST(ConvolutionConformance, DeviceMatchesTheCpuWithinTheDotProductBoundAndRepeatsItsBits) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  const cuda::Dnn* library = cuda::dnn();
  std::printf("convolution library: %s\n", library ? library->name().c_str() : "none (im2col)");
  const char* names[] = {"forward", "backward_input", "backward_weight"};
  Random rnd(37);
  int library_2d = 0, fallback_3d = 0;
  int index = 0;
  for (const Geo& g : geometries()) {
    SCOPED_TRACE(g.str());
    const bool shift = index++ % 3 == 1;  // contiguous operands at an unaligned offset
    for (ScalarType dtype : {kFloat32, kFloat64}) {
      SCOPED_TRACE(dtype_name(dtype));
      const double u = dtype == kFloat32 ? 0x1p-24 : 0x1p-53;
      Tensor x = rnd.tensor(g.x_shape(), dtype, -1, 1);
      Tensor w = rnd.tensor(g.w_shape(), dtype, -1, 1);
      Tensor gy = rnd.tensor(g.y_shape(), dtype, -1, 1);
      if (shift) {
        x = shifted(x);
        w = shifted(w);
        gy = shifted(gy);
      }
      const std::vector<Tensor> cpu = maps(g, x, w, gy);
      const std::vector<Tensor> bound_of = maps(g, abs64(x), abs64(w), abs64(gy));
      const cuda::ConvolutionCounters before = cuda::convolution_counters();
      const Tensor dx = same_on(x, kGpu), dw = same_on(w, kGpu), dgy = same_on(gy, kGpu);
      const std::vector<Tensor> dev = maps(g, dx, dw, dgy);
      const cuda::ConvolutionCounters after = cuda::convolution_counters();
      const std::vector<Tensor> again = maps(g, dx, dw, dgy);
      const std::vector<double> k = terms(g);
      for (size_t m = 0; m < 3; ++m) {
        SCOPED_TRACE(names[m]);
        ASSERT_EQ(dev[m].sizes(), cpu[m].sizes());
        ASSERT_EQ(dev[m].dtype(), dtype);
        ASSERT_TRUE(dev[m].device().is_cuda());
        const std::vector<double> a = doubles(dev[m]), b = doubles(cpu[m]);
        const std::vector<double> s = doubles(bound_of[m]);
        for (size_t i = 0; i < a.size(); ++i) {
          const double bound = 2.01 * k[m] * u * s[i];  // 2 gamma_K, and s's own rounding
          ASSERT_LE(std::abs(a[i] - b[i]), bound)
              << "element " << i << ": device " << a[i] << ", cpu " << b[i];
        }
        EXPECT_TRUE(same_bytes(dev[m], again[m])) << "a second run gave other bits";
      }
      // Which path ran: the library for every 1-d and 2-d call when there is one (3-d calls
      // may fall back, Note [Convolution on the CUDA device]); never without one.
      const int64_t lib = after.library - before.library, ref = after.reference - before.reference;
      EXPECT_EQ(lib + ref, 3);
      if (library == nullptr) {
        EXPECT_EQ(lib, 0);
      } else if (g.in.size() < 3) {
        EXPECT_EQ(lib, 3) << "the im2col reference ran " << ref << " of the 3 maps";
        ++library_2d;
      } else if (ref > 0) {
        ++fallback_3d;
        std::printf("3-d %s %s: %lld of 3 maps ran the im2col reference\n", g.str().c_str(),
                    dtype_name(dtype), static_cast<long long>(ref));
      }
    }
  }
  if (library != nullptr) {
    EXPECT_GT(library_2d, 40);
  }
  std::printf("3-d calls that fell back: %d\n", fallback_3d);
}

// The reference of the library call (what the host-run "library" computes) against a direct
// evaluation of one element of each map, so that the mapping test above rests on a checked
// reference.
TEST(ConvolutionConformance, ReferenceOfTheLibraryCallMatchesHandComputedElements) {
  // 2-d, n 1, c 2, o 2, groups 2: each output channel sees one input channel.
  // x[0, 0] = [[1, 2, 3], [4, 5, 6]], x[0, 1] = 10 * x[0, 0]; w[o] = [[1, -1]] (k 1x2),
  // w[1] = [[2, 0]]; pad 0/1 (h/w), stride 1/2, dilation 1/1. out = 2 x floor((3 + 2 - 2) / 2 + 1)
  // = 2 x 2; padded row of x[0, 0] = [0, 1, 2, 3, 0].
  cuda::ConvArgs a;
  a.n = 1;
  a.c = 2;
  a.o = 2;
  a.groups = 2;
  a.in[0] = 2;
  a.in[1] = 3;
  a.k[0] = 1;
  a.k[1] = 2;
  a.out[0] = 2;
  a.out[1] = 2;
  a.pad[1] = 1;
  a.stride[1] = 2;
  std::vector<double> x{1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60};
  std::vector<double> w{1, -1, 2, 0};
  std::vector<double> y(8, -7);
  a.f64 = true;
  a.x = x.data();
  a.w = w.data();
  a.y = y.data();
  cuda::reference_convolution<double>(a);
  // Channel 0, row 0: windows [0, 1] and [2, 3] -> -1, -1; row 1: [0, 4], [5, 6] -> -4, -1.
  // Channel 1 (w = [2, 0]), row 0: [0, 10], [20, 30] -> 0, 40; row 1: [0, 40], [50, 60] -> 0, 100.
  EXPECT_EQ(y, (std::vector<double>{-1, -1, -4, -1, 0, 40, 0, 100}));
  // backward data: gx = sum over outputs of gy * w at the positions read.
  std::vector<double> gy{1, 1, 1, 1, 1, 1, 1, 1};
  a.kind = cuda::ConvKind::kBackwardData;
  a.y = gy.data();
  cuda::reference_convolution<double>(a);
  // Channel 0: position 0 is read as the window's second element (w = -1) by output 0, ...
  // positions 1, 2 by output 1 as w[0] = 1 and w[1] = -1: gx row = [-1, 1, -1].
  EXPECT_EQ(x, (std::vector<double>{-1, 1, -1, -1, 1, -1, 0, 2, 0, 0, 2, 0}));
  // backward filter: gw[o, 0, 0, j] = sum over outputs of the x element at offset j.
  x = {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60};
  a.kind = cuda::ConvKind::kBackwardFilter;
  cuda::reference_convolution<double>(a);
  // Channel 0: first elements 0 + 2 + 0 + 5 = 7, second 1 + 3 + 4 + 6 = 14; channel 1: x 10.
  EXPECT_EQ(w, (std::vector<double>{7, 14, 70, 140}));
}

}  // namespace
}  // namespace mutagrad
