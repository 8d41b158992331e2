// Backend conformance for the non-elementwise kernels, on every device: reductions, argmax,
// matmul, arange, nonzero and the random factories. Inputs have random geometry (permuted,
// gappy, offset), zero-size and 0-dim shapes, and lines long enough for the CUDA reductions to
// split them into chunks (Note [Deterministic CUDA reductions] in cuda/reduce.cu). Integer
// results, max/min, argmax, arange and nonzero equal the CPU's exactly; floating sums,
// products and matmul agree within the error bound of their summation order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "cuda/cuda.h"
#include "tensor/backend.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/sort.h"
#include "tensor/native/views.h"
#include "tensor/philox.h"
#include "tests/cuda/conformance_util.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using conformance::check_op;
using conformance::check_op_with;
using conformance::expect_close;
using conformance::expect_same;
using conformance::host;
using conformance::kGpu;
using conformance::same_on;
using tensor_testing::kAllDtypes;
using tensor_testing::Random;

// Random values with nan, infinities and signed zeros mixed in, but no values near the
// overflow threshold: whether max + max - max overflows depends on the summation order.
Tensor reduce_input(Random& rnd, IntArrayRef sizes, ScalarType dtype, bool specials = true) {
  Tensor t = rnd.tensor(sizes, dtype);
  if (!specials || !is_floating_point(dtype)) return t;
  const int64_t n = static_cast<int64_t>(t.storage().nbytes()) / t.element_size();
  Tensor flat(std::make_shared<TensorImpl>(t.storage(), DimVector{n}, DimVector{1}, 0, t.dtype(),
                                           VersionCounter()));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating_type_v<T>) {
      constexpr float kInf = std::numeric_limits<float>::infinity();
      const T sp[] = {T(std::numeric_limits<float>::quiet_NaN()), T(kInf), T(-kInf), T(0.0f),
                      T(-0.0f)};
      T* p = flat.data_ptr<T>();
      for (int64_t i = 0; i < n; ++i) {
        if (rnd.uniform(0, 200) == 0) p[i] = sp[rnd.uniform(0, 4)];
      }
    }
  });
  return t;
}

double epsilon(ScalarType dtype) {
  if (dtype == kFloat16) return 0x1p-10;
  if (dtype == kBFloat16) return 0x1p-7;
  return dtype == kFloat32 ? std::numeric_limits<float>::epsilon()
                           : std::numeric_limits<double>::epsilon();
}

using KernelConformance = conformance::DeviceTest;

// Shapes with long lines (several CUDA chunks) besides the usual ones.
std::vector<DimVector> reduce_shapes(std::vector<DimVector> shapes) {
  shapes.push_back({3, 1000});
  shapes.push_back({600, 5});
  shapes.push_back({70001});
  return shapes;
}

TEST_P(KernelConformance, ReductionsOverAnyDims) {
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProd, ReduceOp::kMax,
                          ReduceOp::kMin};
  for (const DimVector& shape : reduce_shapes(shapes())) {
    for (ScalarType dtype : kAllDtypes) {
      for (ReduceOp op : ops) {
        // Every dim, no dims (all), and a random subset; keepdim either way.
        std::vector<DimVector> dim_sets = {{}};
        for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) dim_sets.push_back({d});
        DimVector subset;
        for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
          if (rnd_.uniform(0, 1)) subset.push_back(d - static_cast<int64_t>(shape.size()));
        }
        dim_sets.push_back(subset);
        // Products of many values under/overflow: keep prod's inputs near 1.
        Tensor x = op == ReduceOp::kProd && is_floating_point(dtype)
                       ? native::binary(
                             BinaryOp::kAdd,
                             native::binary(BinaryOp::kMul, reduce_input(rnd_, shape, dtype, false),
                                            full({}, 0.01, dtype)),
                             full({}, 1.0, dtype))
                       : reduce_input(rnd_, shape, dtype);
        int64_t line = 1;
        for (int64_t s : shape) line *= std::max<int64_t>(s, 1);
        for (const DimVector& dims : dim_sets) {
          const bool keepdim = rnd_.uniform(0, 1);
          const std::string what =
              str(reduce_op_name(op), " ", dtype, shape, " dims ", dims, keepdim ? " keepdim" : "");
          // Both backends accumulate in double, in different orders: at most line^2 * |x|max
          // * eps(double) apart before the final rounding to the dtype. max/min are exact
          // (up to the sign of a zero).
          const bool tolerant =
              is_floating_point(dtype) && op != ReduceOp::kMax && op != ReduceOp::kMin;
          const double atol = tolerant ? 4.0 * 1.2e-16 * static_cast<double>(line * line) : 0;
          const double rtol =
              tolerant ? 2 * epsilon(dtype) + 2.2e-16 * static_cast<double>(line) : 0;
          check_op_with(
              GetParam(), {x},
              [&](const std::vector<Tensor>& t) { return native::reduce(op, t[0], dims, keepdim); },
              [&](const Tensor& got, const Tensor& want) {
                expect_close(got, want, atol, rtol, what);
              },
              what);
        }
      }
    }
  }
}

TEST_P(KernelConformance, ArgmaxFindsTheFirstMaximum) {
  for (const DimVector& shape : reduce_shapes(shapes())) {
    for (ScalarType dtype : kAllDtypes) {
      // Integers from a small range: many ties, the first must win.
      Tensor x = reduce_input(rnd_, shape, dtype);
      for (int64_t d = -1; d < static_cast<int64_t>(shape.size()); ++d) {
        std::optional<int64_t> dim = d < 0 ? std::nullopt : std::optional<int64_t>(d);
        for (bool keepdim : {false, true}) {
          check_op(
              GetParam(), {x},
              [&](const std::vector<Tensor>& t) { return native::argmax(t[0], dim, keepdim); }, 0,
              str("argmax ", dtype, shape, " dim ", d, keepdim ? " keepdim" : ""));
          check_op(
              GetParam(), {x},
              [&](const std::vector<Tensor>& t) { return native::argmin(t[0], dim, keepdim); }, 0,
              str("argmin ", dtype, shape, " dim ", d, keepdim ? " keepdim" : ""));
        }
      }
    }
  }
}

// A matrix operand of `sizes` stored row-major, transposed (column-major) or with gaps.
Tensor matrix(Random& rnd, DimVector sizes, ScalarType dtype, int layout) {
  if (layout == 1 && sizes.size() >= 2) {  // the transpose of a contiguous tensor
    std::swap(sizes[sizes.size() - 1], sizes[sizes.size() - 2]);
    Tensor t = rnd.tensor(sizes, dtype);
    Tensor c = native::clone(t);
    const int64_t nd = static_cast<int64_t>(sizes.size());
    return native::transpose(c, nd - 1, nd - 2);
  }
  if (layout == 2) return rnd.tensor(sizes, dtype);  // random geometry
  return native::clone(rnd.tensor(sizes, dtype));
}

TEST_P(KernelConformance, MatmulShapesLayoutsAndDtypes) {
  struct Case {
    DimVector a, b;
  };
  const Case cases[] = {
      {{3, 4}, {4, 5}},       {{1, 7}, {7, 1}},    {{5}, {5}},          {{4}, {4, 3}},
      {{2, 3}, {3}},          {{2, 3, 4}, {4, 2}}, {{4, 3}, {2, 3, 5}}, {{2, 1, 3, 4}, {3, 4, 2}},
      {{0, 3}, {3, 4}},       {{3, 0}, {0, 4}},    {{2, 0, 3}, {3, 2}}, {{33, 65}, {65, 17}},
      {{2, 2, 3}, {1, 3, 2}},
  };
  for (const Case& c : cases) {
    for (ScalarType dtype : {kInt32, kInt64, kFloat32, kFloat64}) {
      for (int la = 0; la < 3; ++la) {
        for (int lb = 0; lb < 3; ++lb) {
          Tensor a = matrix(rnd_, c.a, dtype, la);
          Tensor b = matrix(rnd_, c.b, dtype, lb);
          const int64_t k = c.a.back();
          // |a|, |b| <= 4: k products of at most 16, summed in the dtype.
          const double atol = is_floating_point(dtype) ? 16.0 * k * k * epsilon(dtype) : 0;
          const std::string what =
              str("matmul ", dtype, c.a, " layout ", la, " @ ", c.b, " layout ", lb);
          check_op_with(
              GetParam(), {a, b},
              [](const std::vector<Tensor>& t) { return native::matmul(t[0], t[1]); },
              [&](const Tensor& got, const Tensor& want) {
                expect_close(got, want, atol, 0, what);
              },
              what);
        }
      }
    }
  }
}

TEST_P(KernelConformance, MatmulIntegersWrapAsOnTheCpu) {
  Tensor a = full({2, 3}, std::numeric_limits<int32_t>::max(), kInt32);
  Tensor b = full({3, 2}, 3, kInt32);
  check_op(
      GetParam(), {a, b}, [](const std::vector<Tensor>& t) { return native::matmul(t[0], t[1]); },
      0, "int32 matmul overflow");
}

TEST_P(KernelConformance, ArangeMatchesTheCpuBitwise) {
  struct Case {
    Scalar start, end, step;
  };
  const Case cases[] = {{0, 10, 1}, {-3, 17, 4}, {0.5, 3.7, 0.1}, {10, -10, -0.3}, {1, 1, 1}};
  for (const Case& c : cases) {
    for (ScalarType dtype : {kInt32, kInt64, kFloat32, kFloat64}) {
      if (is_integral(dtype, false) &&
          (c.start.is_floating_point() || c.step.is_floating_point())) {
        continue;
      }
      Tensor want = arange(c.start, c.end, c.step, dtype);
      Tensor got = arange(c.start, c.end, c.step, dtype, GetParam());
      EXPECT_EQ(got.device(), GetParam());
      expect_same(got, want, 0, str("arange ", c.start, " ", c.end, " ", c.step, " ", dtype));
    }
  }
}

TEST_P(KernelConformance, NonzeroInRowMajorOrder) {
  std::vector<DimVector> all = shapes();
  all.push_back({40, 50});
  for (const DimVector& shape : all) {
    for (ScalarType dtype : kAllDtypes) {
      Tensor x = conformance::input(rnd_, shape, dtype);
      check_op(
          GetParam(), {x}, [](const std::vector<Tensor>& t) { return native::nonzero(t[0]); }, 0,
          str("nonzero ", dtype, shape));
    }
  }
}

// Long lines take the radix sort (Note [Long lines: a radix sort] in cuda/sort.cu): its key
// transform must give the merge sort's order: NaN greatest (first when descending), -0.0 equal
// to 0.0 and kept as -0.0, ties in index order. Few distinct values, so ties are everywhere.
TEST_P(KernelConformance, LongLinesSortAsTheCpu) {
  struct Case {
    DimVector shape;
    int64_t dim;
  };
  const Case cases[] = {{{5000}, 0}, {{2, 3000}, 1}, {{2500, 3}, 0}, {{2, 2100, 2}, 1}, {{3}, 0}};
  for (const Case& c : cases) {
    for (ScalarType dtype : {kFloat32, kFloat64, kInt32, kInt64, kBool}) {
      Tensor x = reduce_input(rnd_, c.shape, dtype);
      if (is_floating_point(dtype)) {
        // Ties: values rounded to quarters; then nan, infinities and signed zeros again.
        x = native::binary(BinaryOp::kDiv,
                           native::unary(UnaryOp::kRound, native::binary(BinaryOp::kMul, x, 4.0)),
                           4.0);
        const int64_t n = x.numel();
        dispatch_dtype(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (is_floating_type_v<T>) {
            const T sp[] = {T(std::numeric_limits<float>::quiet_NaN()),
                            T(std::numeric_limits<float>::infinity()), T(0.0f), T(-0.0f)};
            T* p = x.data_ptr<T>();
            for (int64_t i = 0; i < n; ++i) {
              if (rnd_.uniform(0, 20) == 0) p[i] = sp[rnd_.uniform(0, 3)];
            }
          }
        });
      }
      for (bool descending : {false, true}) {
        const std::string what =
            str("sort ", dtype, c.shape, " dim ", c.dim, descending ? " descending" : "");
        for (int part : {0, 1}) {
          check_op(
              GetParam(), {x},
              [&](const std::vector<Tensor>& t) {
                auto [values, indices] = native::sort(t[0], c.dim, descending);
                return part == 0 ? values : indices;
              },
              0, what + (part == 0 ? " values" : " indices"));
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, KernelConformance, conformance::kDevices,
                         conformance::device_name);

// The Random123 reference vectors for Philox4x32-10 (counter, key -> output).
TEST(Philox, KnownAnswers) {
  const Philox4 zero = philox4x32_10(0, 0, 0);
  EXPECT_EQ(zero.w[0], 0x6627e8d5u);
  EXPECT_EQ(zero.w[1], 0xe169c58du);
  EXPECT_EQ(zero.w[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.w[3], 0x9b00dbd8u);
  const uint64_t ones = ~uint64_t{0};
  const Philox4 all = philox4x32_10(ones, ones, ones);
  EXPECT_EQ(all.w[0], 0x408f276du);
  EXPECT_EQ(all.w[1], 0x41c83b0eu);
  EXPECT_EQ(all.w[2], 0xa20bc7c6u);
  EXPECT_EQ(all.w[3], 0x6d5451fdu);
}

class CudaRandom : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  }
};

// Element i of a draw is Philox at counter offset + i (Note [Random draws] in
// tensor/random_draw.h): checked against the formula evaluated here, on the host.
TEST_F(CudaRandom, DrawsArePhiloxAtConsecutiveCounters) {
  Generator gen(1234, kGpu);
  Tensor first = host(rand({5, 7}, gen, TensorOptions(kFloat64).device(kGpu)));
  Tensor second = host(rand({3}, gen, TensorOptions(kFloat32).device(kGpu)));
  for (int64_t i = 0; i < 35; ++i) {
    const Philox4 r = philox4x32_10(static_cast<uint64_t>(i), 0, 1234);
    EXPECT_EQ(first.data_ptr<double>()[i], uniform53(r.w[0], r.w[1])) << i;
  }
  for (int64_t i = 0; i < 3; ++i) {
    const Philox4 r = philox4x32_10(static_cast<uint64_t>(35 + i), 0, 1234);
    EXPECT_EQ(second.data_ptr<float>()[i], uniform24(r.w[0])) << i;
  }
  // The same seed repeats the stream; two draws equal one draw of both sizes.
  Generator again(1234, kGpu);
  Tensor both = host(rand({38}, again, TensorOptions(kFloat64).device(kGpu)));
  EXPECT_EQ(both.data_ptr<double>()[34], first.data_ptr<double>()[34]);
  EXPECT_EQ(both.data_ptr<double>()[35],
            uniform53(philox4x32_10(35, 0, 1234).w[0], philox4x32_10(35, 0, 1234).w[1]));
}

TEST_F(CudaRandom, DistributionsHaveTheirMoments) {
  Generator gen(7, kGpu);
  const int64_t n = 200000;
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    Tensor u = host(rand({n}, gen, TensorOptions(dtype).device(kGpu)));
    Tensor z = host(randn({n}, gen, TensorOptions(dtype).device(kGpu)));
    Tensor ud = native::to(u, kCPU, kFloat64), zd = native::to(z, kCPU, kFloat64);
    double umin = 1, umax = 0, usum = 0, zsum = 0, zsq = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double a = ud.data_ptr<double>()[i], b = zd.data_ptr<double>()[i];
      umin = std::min(umin, a);
      umax = std::max(umax, a);
      usum += a;
      zsum += b;
      zsq += b * b;
    }
    EXPECT_GE(umin, 0.0) << dtype;
    EXPECT_LT(umax, 1.0) << dtype;
    // Standard errors: uniform mean 0.29/sqrt(n) = 6.5e-4, normal mean 2.2e-3, variance 3.2e-3.
    EXPECT_NEAR(usum / n, 0.5, 0.004) << dtype;
    EXPECT_NEAR(zsum / n, 0.0, 0.012) << dtype;
    EXPECT_NEAR(zsq / n, 1.0, 0.02) << dtype;
  }
  Tensor k = host(randint(-3, 4, {5000}, gen, TensorOptions(kInt32).device(kGpu)));
  std::set<int32_t> seen(k.data_ptr<int32_t>(), k.data_ptr<int32_t>() + 5000);
  EXPECT_EQ(seen, (std::set<int32_t>{-3, -2, -1, 0, 1, 2, 3}));
}

TEST_F(CudaRandom, FactoriesTakeAGeneratorOfTheirDevice) {
  Generator cpu_gen(0);
  try {
    rand({3}, cpu_gen, TensorOptions(kFloat32).device(kGpu));
    ADD_FAILURE() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_EQ(std::string(e.what()),
              "rand(): Expected a 'cuda' device type for generator but found 'cpu'; pass a "
              "generator of the tensor's device (Generator(seed, cuda:0) or "
              "default_generator(cuda:0))");
  }
  Generator gpu_gen(0, kGpu);
  EXPECT_THROW(randn({3}, gpu_gen, kFloat32), DeviceError);
  EXPECT_THROW(randint(0, 3, {3}, gpu_gen), DeviceError);
}

}  // namespace
}  // namespace mutagrad
