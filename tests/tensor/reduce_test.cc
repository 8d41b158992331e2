// Tests of the raw reductions and argmax (tensor/native/reduce.h): hand-derived values, dtype
// rules, empty inputs, error paths, and seeded random shapes, strides and dim sets against a
// naive reference.
#include "tensor/native/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/cpu/strided_loop.h"
#include "tensor/cpu/vec_kernels.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers

const double kNan = std::numeric_limits<double>::quiet_NaN();

Tensor reduce(ReduceOp op, const Tensor& x, IntArrayRef dims = {}, bool keepdim = false) {
  return native::reduce(op, x, dims, keepdim);
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 0) {
  std::vector<double> got = elements(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "element " << i;
    }
  }
}

TEST(Reduce, HandDerivedAllDims) {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Tensor s = reduce(ReduceOp::kSum, x);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.dtype(), kFloat32);
  EXPECT_EQ(s.item<double>(), 21);
  EXPECT_EQ(reduce(ReduceOp::kMean, x).item<double>(), 3.5);
  EXPECT_EQ(reduce(ReduceOp::kProd, x).item<double>(), 720);
  EXPECT_EQ(reduce(ReduceOp::kMax, x).item<double>(), 6);
  EXPECT_EQ(reduce(ReduceOp::kMin, x).item<double>(), 1);
  Tensor k = reduce(ReduceOp::kSum, x, {}, true);
  EXPECT_EQ(k.sizes().vec(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(k.item<double>(), 21);
}

TEST(Reduce, HandDerivedSomeDims) {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Tensor s0 = reduce(ReduceOp::kSum, x, {0});
  EXPECT_EQ(s0.sizes().vec(), (std::vector<int64_t>{3}));
  expect_values(s0, {5, 7, 9});
  Tensor s1 = reduce(ReduceOp::kSum, x, {-1}, true);
  EXPECT_EQ(s1.sizes().vec(), (std::vector<int64_t>{2, 1}));
  expect_values(s1, {6, 15});
  expect_values(reduce(ReduceOp::kMean, x, {1}), {2, 5});
  expect_values(reduce(ReduceOp::kProd, x, {0}), {4, 10, 18});
  expect_values(reduce(ReduceOp::kMax, x, {1}), {3, 6});
  expect_values(reduce(ReduceOp::kMin, x, {0}), {1, 2, 3});
  expect_values(reduce(ReduceOp::kSum, x, {0, 1}), {21});
  Tensor cube = native::contiguous(arange(24, kFloat64));
  Tensor c = strided_view(cube, {2, 3, 4}, {12, 4, 1}, 0);
  Tensor s02 = reduce(ReduceOp::kSum, c, {0, 2}, true);
  EXPECT_EQ(s02.sizes().vec(), (std::vector<int64_t>{1, 3, 1}));
  // dim 1 = j: sum over i, k of 12i + 4j + k = 2*(0+1+2+3) + 12*4 + 32j
  expect_values(s02, {60, 92, 124});
}

TEST(Reduce, IntegerAndBoolSumsAreInt64) {
  Tensor b = tensor({true, true, false, true});
  Tensor s = reduce(ReduceOp::kSum, b);
  ASSERT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(s.item<int64_t>(), 3);
  EXPECT_EQ(reduce(ReduceOp::kProd, b).item<int64_t>(), 0);
  Tensor i = tensor({{2, 3}, {4, 5}}, kInt32);
  Tensor p = reduce(ReduceOp::kProd, i, {1});
  ASSERT_EQ(p.dtype(), kInt64);
  expect_values(p, {6, 20});
  // Wider than int32: no overflow in the int64 accumulator.
  Tensor big = full({3}, 2000000000, kInt32);
  EXPECT_EQ(reduce(ReduceOp::kSum, big).item<int64_t>(), 6000000000);
  Tensor mx = reduce(ReduceOp::kMax, i, {0});
  ASSERT_EQ(mx.dtype(), kInt32);
  expect_values(mx, {4, 5});
  Tensor bm = reduce(ReduceOp::kMax, b);
  ASSERT_EQ(bm.dtype(), kBool);
  EXPECT_TRUE(bm.item<bool>());
  EXPECT_FALSE(reduce(ReduceOp::kMin, b).item<bool>());
}

TEST(Reduce, NanPropagatesThroughMaxAndMin) {
  Tensor x = tensor({{1.0, std::nan(""), 3.0}, {4.0, 5.0, 6.0}}, kFloat64);
  EXPECT_TRUE(std::isnan(reduce(ReduceOp::kMax, x).item<double>()));
  EXPECT_TRUE(std::isnan(reduce(ReduceOp::kMin, x).item<double>()));
  expect_values(reduce(ReduceOp::kMax, x, {0}), {4, kNan, 6});
  expect_values(reduce(ReduceOp::kMin, x, {1}), {kNan, 4});
  expect_values(reduce(ReduceOp::kSum, x, {1}), {kNan, 15});
}

TEST(Reduce, EmptyInputsGiveTheIdentity) {
  Tensor e = zeros({0, 3});
  expect_values(reduce(ReduceOp::kSum, e, {0}), {0, 0, 0});
  expect_values(reduce(ReduceOp::kProd, e, {0}), {1, 1, 1});
  expect_values(reduce(ReduceOp::kMean, e, {0}), {kNan, kNan, kNan});
  EXPECT_EQ(reduce(ReduceOp::kSum, e).item<double>(), 0);
  Tensor m = reduce(ReduceOp::kMax, e, {1});  // nothing to reduce into: an empty result
  EXPECT_EQ(m.sizes().vec(), (std::vector<int64_t>{0}));
  EXPECT_EQ(reduce(ReduceOp::kSum, zeros({0}, kInt64)).item<int64_t>(), 0);
}

TEST(Reduce, ZeroDimInput) {
  Tensor s = scalar_tensor(4.0);
  EXPECT_EQ(reduce(ReduceOp::kSum, s).item<double>(), 4);
  EXPECT_EQ(reduce(ReduceOp::kMax, s, {0}).item<double>(), 4);
  EXPECT_EQ(reduce(ReduceOp::kMean, s, {-1}, true).dim(), 0);
}

TEST(Reduce, Errors) {
  expect_error<DTypeError>(
      [] {
        reduce(ReduceOp::kMean, tensor({1, 2}));
      },
      "mean(): could not infer output dtype. Input dtype must be either a "
      "floating point or complex dtype. Got: Long");
  expect_error<IndexError>([] { reduce(ReduceOp::kMax, zeros({0})); },
                           "max(): Expected reduction dim to be specified for input.numel() == 0");
  expect_error<IndexError>(
      [] {
        reduce(ReduceOp::kMin, zeros({0, 3}), {0});
      },
      "min(): Expected reduction dim 0 to have non-zero size");
  expect_error<IndexError>(
      [] {
        reduce(ReduceOp::kSum, zeros({2, 3}), {2});
      },
      "dimension out of range (expected to be in range of [-2, 1], but got 2)");
  expect_error<ValueError>(
      [] {
        reduce(ReduceOp::kSum, zeros({2, 3}), {0, -2});
      },
      "dim 0 appears multiple times in the list of dims");
}

TEST(Reduce, LargeInputs) {
  // 1M float32 ones sum exactly (double accumulation), contiguous and transposed.
  Tensor x = ones({1000, 1000});
  EXPECT_EQ(reduce(ReduceOp::kSum, x).item<double>(), 1e6);
  Tensor xt = strided_view(x, {1000, 1000}, {1, 1000}, 0);
  Tensor cols = reduce(ReduceOp::kSum, xt, {0});
  expect_values(cols, std::vector<double>(1000, 1000.0));
  Tensor r = arange(300000, kFloat64);
  EXPECT_EQ(reduce(ReduceOp::kSum, r).item<double>(), 299999.0 * 300000.0 / 2);
  EXPECT_EQ(reduce(ReduceOp::kMax, r).item<double>(), 299999.0);
}

// The naive reference: every element of x folded into the output element it reduces to.
std::vector<double> reference_reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& red,
                                     IntArrayRef keep_sizes) {
  int64_t n = compute_numel(keep_sizes);
  double init = op == ReduceOp::kProd  ? 1
                : op == ReduceOp::kMax ? -INFINITY
                : op == ReduceOp::kMin ? INFINITY
                                       : 0;
  std::vector<double> acc(static_cast<size_t>(n), init);
  int64_t count = 1;
  for (size_t d = 0; d < red.size(); ++d) {
    if (red[d]) count *= x.sizes()[d];
  }
  DimVector out_strides = contiguous_strides(keep_sizes);
  for (const Index& idx : all_indices(x.sizes())) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) o += red[d] ? 0 : idx[d] * out_strides[d];
    double v = read(x, idx);
    double& a = acc[static_cast<size_t>(o)];
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        a += v;
        break;
      case ReduceOp::kProd:
        a *= v;
        break;
      case ReduceOp::kMax:
        a = std::max(a, v);
        break;
      case ReduceOp::kMin:
        a = std::min(a, v);
        break;
    }
  }
  if (op == ReduceOp::kMean) {
    for (double& a : acc) a /= static_cast<double>(count);
  }
  return acc;
}

TEST(Reduce, RandomShapesStridesAndDimsAgainstReference) {
  Random rnd(31337);
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProd, ReduceOp::kMax,
                          ReduceOp::kMin};
  for (int trial = 0; trial < 500; ++trial) {
    ReduceOp op = ops[rnd.uniform(0, 4)];
    ScalarType dt = op == ReduceOp::kMean ? (rnd.uniform(0, 1) ? kFloat32 : kFloat64)
                                          : kAllDtypes[rnd.uniform(0, kNumScalarTypes - 1)];
    Tensor x = rnd.tensor(rnd.shape(4, 6), dt, op == ReduceOp::kProd ? -2 : -4,
                          op == ReduceOp::kProd ? 2 : 4);
    const int64_t nd = x.dim();
    std::vector<int64_t> dims;
    std::vector<bool> red(static_cast<size_t>(nd), false);
    for (int64_t d = 0; d < nd; ++d) {
      if (rnd.uniform(0, 1)) {
        dims.push_back(rnd.uniform(0, 1) ? d : d - nd);
        red[d] = true;
      }
    }
    if (dims.empty()) red.assign(static_cast<size_t>(nd), true);
    bool keepdim = rnd.uniform(0, 1);
    Tensor r = reduce(op, x, dims, keepdim);
    DimVector keep_sizes, out_sizes;
    for (int64_t d = 0; d < nd; ++d) {
      keep_sizes.push_back(red[d] ? 1 : x.sizes()[d]);
      if (!red[d]) out_sizes.push_back(x.sizes()[d]);
    }
    ASSERT_EQ(r.sizes().vec(), keepdim ? keep_sizes.vec() : out_sizes.vec());
    std::vector<double> want = reference_reduce(op, x, red, keep_sizes);
    std::vector<double> got = elements(r);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      double w = want[i];
      if (dt == kFloat32 &&
          (op == ReduceOp::kSum || op == ReduceOp::kMean || op == ReduceOp::kProd)) {
        ASSERT_NEAR(got[i], w, 1e-5 * std::max(1.0, std::abs(w))) << reduce_op_name(op);
      } else if (dt == kFloat16 || dt == kBFloat16) {
        // Accumulated in float32 and rounded once (Note [Reduced dtypes]): one unit in the
        // last place of the dtype from the exact result.
        const double eps = dt == kFloat16 ? 0x1p-10 : 0x1p-7;
        ASSERT_NEAR(got[i], w, eps * std::max(1.0, std::abs(w))) << reduce_op_name(op) << " " << dt;
      } else if (dt == kFloat64) {
        ASSERT_NEAR(got[i], w, 1e-12 * std::max(1.0, std::abs(w))) << reduce_op_name(op);
      } else {
        ASSERT_EQ(got[i], w) << reduce_op_name(op) << " " << dt << " trial " << trial;
      }
    }
  }
}

// ---- The documented order, bitwise (Note [Reduction order] in tensor/cpu/reduce.cc) ----------

// The naive reference of the documented order: the input walked in memory order (StridedLoop's
// runs); a run into one accumulator folds as 8 partials (element k into k % 8 while 8 remain,
// contiguous runs only; the rest into partial 0; pairwise), any other run element by element;
// from 65536 elements with 16 per output, the two halves into two accumulator sets, combined.
template <typename T, typename A>
Tensor documented_reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& red) {
  auto combine = [op](A a, A b) -> A {
    if (op == ReduceOp::kSum) return a + b;
    if (op == ReduceOp::kMax) return (b > a || b != b) ? b : a;
    return (b < a || b != b) ? b : a;
  };
  const A id = op == ReduceOp::kSum   ? A(0)
               : op == ReduceOp::kMax ? -std::numeric_limits<A>::infinity()
                                      : std::numeric_limits<A>::infinity();
  DimVector keep;
  for (size_t d = 0; d < red.size(); ++d) keep.push_back(red[d] ? 1 : x.sizes()[d]);
  const DimVector keep_strides = contiguous_strides(keep);
  DimVector acc_strides = keep_strides;
  for (size_t d = 0; d < red.size(); ++d) {
    if (red[d]) acc_strides[d] = 0;
  }
  const ScalarType acc_dtype = std::is_same_v<A, double> ? kFloat64 : kFloat32;
  const int64_t n = x.numel(), outs = compute_numel(keep);
  const bool halves = n >= 65536 && outs * 16 <= n;
  std::vector<Tensor> accs;
  for (int h = 0; h < (halves ? 2 : 1); ++h) {
    Tensor acc = empty(keep, acc_dtype);
    for (int64_t i = 0; i < outs; ++i) acc.data_ptr<A>()[i] = id;
    accs.push_back(acc);
    Tensor view = strided_view(acc, x.sizes(), acc_strides, 0);
    cpu::StridedLoop<2> it({&x, &view});
    const int64_t begin = h == 0 ? 0 : n / 2, end = halves && h == 0 ? n / 2 : n;
    it.run(begin, end, [&](char** p, const int64_t* s, int64_t len) {
      auto in = [&](int64_t k) { return static_cast<A>(*reinterpret_cast<T*>(p[0] + k * s[0])); };
      if (s[1] != 0) {
        for (int64_t k = 0; k < len; ++k) {
          A& a = *reinterpret_cast<A*>(p[1] + k * s[1]);
          a = combine(a, in(k));
        }
        return;
      }
      A part[8];
      for (A& q : part) q = id;
      int64_t k = 0;
      if (s[0] == static_cast<int64_t>(sizeof(T))) {
        for (; k + 8 <= len; k += 8) {
          for (int j = 0; j < 8; ++j) part[j] = combine(part[j], in(k + j));
        }
      }
      for (; k < len; ++k) part[0] = combine(part[0], in(k));
      for (int w = 4; w > 0; w /= 2) {
        for (int j = 0; j < w; ++j) part[j] = combine(part[j], part[j + w]);
      }
      A& a = *reinterpret_cast<A*>(p[1]);
      a = combine(a, part[0]);
    });
  }
  if (halves) {
    for (int64_t i = 0; i < outs; ++i)
      accs[0].data_ptr<A>()[i] = combine(accs[0].data_ptr<A>()[i], accs[1].data_ptr<A>()[i]);
  }
  return native::to(accs[0], x.dtype());
}

// Sums, maxima and minima of float32 and float64 along every dim set of 1-3 dim shapes (runs
// of every length around the vector widths, blocks of rows and their leftovers, inputs past
// 65536 elements, which are cut in halves), contiguous, transposed and sliced, in every
// kernel build the CPU runs: the bits of the documented order. Magnitudes spread over 2^60, so
// that another association order rounds differently; zeros of both signs (ties, which max and
// min settle by the order), runs whose maximum or minimum is a zero, and NaNs in every lane.
TEST(Reduce, FloatReductionsHaveTheDocumentedOrdersBitsInEveryBuild) {
  const cpu::CpuCapability saved = cpu::cpu_capability();
  std::mt19937_64 rng(4242);
  std::uniform_real_distribution<double> mag(-30.0, 30.0);
  const std::vector<DimVector> shapes = {{1},        {7},          {64},          {70000},
                                         {65537},    {5, 3},       {17, 33},      {9, 256},
                                         {256, 257}, {3, 130, 40}, {2, 4, 16400}, {67, 1, 31}};
  int checked = 0;
  for (cpu::CpuCapability c : cpu::kCpuCapabilities) {
    if (!cpu::cpu_capability_runs(c)) continue;
    cpu::set_cpu_capability(c);
    for (const DimVector& shape : shapes) {
      for (ScalarType dt : {kFloat32, kFloat64}) {
        const int64_t n = compute_numel(shape);
        // Values spread over 2^60; in one input of three, many signed zeros (and all other
        // values of one sign, so that a zero is the maximum or minimum), in one of three NaNs.
        for (int variant = 0; variant < 3; ++variant) {
          std::vector<double> v(static_cast<size_t>(n));
          for (double& e : v) e = std::ldexp(mag(rng), static_cast<int>(rng() % 60) - 30);
          if (variant == 1) {
            const double sign = rng() % 2 ? 1.0 : -1.0;
            for (int64_t i = 0; i < n; ++i) {
              double& e = v[static_cast<size_t>(i)];
              e = rng() % 3 == 0 ? (rng() % 2 ? 0.0 : -0.0) : sign * std::abs(e);
            }
          }
          if (variant == 2) {
            for (int64_t i = static_cast<int64_t>(rng() % 37); i < n; i += 37 + (i % 5))
              v[static_cast<size_t>(i)] = std::numeric_limits<double>::quiet_NaN();
          }
          Tensor base = native::to(from_vector(v, shape), dt);
          const int64_t nd = static_cast<int64_t>(shape.size());
          std::vector<Tensor> inputs = {base};
          if (nd >= 2) inputs.push_back(native::transpose(base, 0, nd - 1));
          if (shape[0] >= 2)  // every other element along dim 0
            inputs.push_back(native::slice(base, 0, 0, shape[0], 2));
          for (const Tensor& x : inputs) {
            for (int64_t mask = 1; mask < (int64_t{1} << nd); ++mask) {
              std::vector<int64_t> dims;
              std::vector<bool> red(static_cast<size_t>(nd));
              for (int64_t d = 0; d < nd; ++d) {
                red[static_cast<size_t>(d)] = (mask >> d) & 1;
                if (red[static_cast<size_t>(d)]) dims.push_back(d);
              }
              for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
                Tensor got = reduce(op, x, dims, true);
                Tensor want;
                if (dt == kFloat32) {
                  want = op == ReduceOp::kSum ? documented_reduce<float, double>(op, x, red)
                                              : documented_reduce<float, float>(op, x, red);
                } else {
                  want = documented_reduce<double, double>(op, x, red);
                }
                ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
                Tensor g = native::contiguous(got), w = native::contiguous(want);
                dispatch_dtype(dt, [&](auto tag) {
                  using T = typename decltype(tag)::type;
                  if constexpr (std::is_floating_point_v<T>) {
                    for (int64_t i = 0; i < g.numel(); ++i) {
                      const T a = g.data_ptr<T>()[i], b = w.data_ptr<T>()[i];
                      const bool same = (a != a && b != b) || std::memcmp(&a, &b, sizeof(T)) == 0;
                      ASSERT_TRUE(same) << cpu::cpu_capability_name(c) << " " << reduce_op_name(op)
                                        << " " << dt << " shape " << x.sizes() << " strides "
                                        << x.strides() << " dims mask " << mask << " variant "
                                        << variant << " output " << i << ": " << a << " vs " << b;
                    }
                  }
                });
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  cpu::set_cpu_capability(saved);
  EXPECT_GT(checked, 1000);
}

// ---- argmax ---------------------------------------------------------------------------------

TEST(Argmax, HandDerived) {
  Tensor x = tensor({{1.0, 5.0, 5.0}, {7.0, 0.0, 7.0}});
  Tensor all = native::argmax(x, std::nullopt, false);
  ASSERT_EQ(all.dtype(), kInt64);
  EXPECT_EQ(all.dim(), 0);
  EXPECT_EQ(all.item<int64_t>(), 3);  // first maximum in row-major order
  Tensor k = native::argmax(x, std::nullopt, true);
  EXPECT_EQ(k.sizes().vec(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(k.item<int64_t>(), 3);
  expect_values(native::argmax(x, 1, false), {1, 0});  // ties: the first index
  expect_values(native::argmax(x, 0, false), {1, 0, 1});
  Tensor kd = native::argmax(x, -1, true);
  EXPECT_EQ(kd.sizes().vec(), (std::vector<int64_t>{2, 1}));
  expect_values(kd, {1, 0});
  // Non-contiguous input flattened in its logical order.
  Tensor xt = strided_view(native::clone(x), {3, 2}, {1, 3}, 0);  // [[1,7],[5,0],[5,7]]
  EXPECT_EQ(native::argmax(xt, std::nullopt, false).item<int64_t>(), 1);
  expect_values(native::argmax(xt, 0, false), {1, 0});
  EXPECT_EQ(native::argmax(tensor({3, -1, 9}, kInt32), 0, false).item<int64_t>(), 2);
  EXPECT_EQ(native::argmax(scalar_tensor(2.0), 0, false).item<int64_t>(), 0);
  EXPECT_EQ(native::argmax(scalar_tensor(2.0), std::nullopt, false).item<int64_t>(), 0);
}

TEST(Argmin, HandDerivedTiesNanAndErrors) {
  Tensor x = tensor({{4.0, 1.0, 1.0}, {0.0, 3.0, 0.0}});
  EXPECT_EQ(native::argmin(x, std::nullopt, false).item<int64_t>(), 3);  // first minimum
  expect_values(native::argmin(x, 1, false), {1, 0});                    // ties: the first
  expect_values(native::argmin(x, 0, true), {1, 0, 1});
  // Integers reversed as -1 - x: the extremes do not overflow.
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(native::argmin(tensor({hi, lo, 0}, kInt64), 0, false).item<int64_t>(), 1);
  EXPECT_EQ(native::argmin(tensor({hi, 5, lo}, kInt64), 0, false).item<int64_t>(), 2);
  EXPECT_EQ(native::argmin(tensor({1.0, std::nan(""), -9.0}, kFloat64), 0, false).item<int64_t>(),
            1);  // NaN is the minimum too (as PyTorch)
  expect_error<IndexError>([] { native::argmin(zeros({0}), std::nullopt, false); },
                           "argmin(): Expected reduction dim to be specified");
  expect_error<DTypeError>(
      [] {
        native::argmin(tensor({true, false}), 0, false);
      },
      "argmin(): \"argmin_cpu\" not implemented for 'Bool'");
}

TEST(Argmax, NanIsTheMaximum) {
  Tensor x = tensor({1.0, std::nan(""), 9.0, std::nan("")}, kFloat64);
  EXPECT_EQ(native::argmax(x, 0, false).item<int64_t>(), 1);
}

TEST(Argmax, RandomAgainstReference) {
  Random rnd(77);
  for (int trial = 0; trial < 200; ++trial) {
    DimVector shape = rnd.shape(4, 5);
    if (shape.empty()) continue;
    Tensor x = rnd.tensor(shape, rnd.uniform(0, 1) ? kInt64 : kFloat32);
    int64_t d = rnd.uniform(0, x.dim() - 1);
    Tensor r = native::argmax(x, d, false);
    DimVector out_shape(shape);
    out_shape.erase(static_cast<size_t>(d));
    ASSERT_EQ(r.sizes().vec(), out_shape.vec());
    for (const Index& o : all_indices(out_shape)) {
      Index idx(o);
      idx.insert(idx.begin() + d, 0);
      int64_t best = 0;
      double best_v = read(x, idx);
      for (int64_t i = 1; i < shape[d]; ++i) {
        idx[d] = i;
        if (read(x, idx) > best_v) {
          best_v = read(x, idx);
          best = i;
        }
      }
      ASSERT_EQ(read(r, o), static_cast<double>(best));
    }
  }
}

TEST(Argmax, Errors) {
  expect_error<DTypeError>([] { native::argmax(tensor({true}), std::nullopt, false); },
                           "\"argmax_cpu\" not implemented for 'Bool'");
  expect_error<IndexError>(
      [] { native::argmax(zeros({0}), std::nullopt, false); },
      "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  expect_error<IndexError>(
      [] {
        native::argmax(zeros({0, 2}), 0, false);
      },
      "argmax(): Expected reduction dim 0 to have non-zero size");
  expect_error<IndexError>([] { native::argmax(zeros({2}), 1, false); }, "dimension out of range");
}

}  // namespace
}  // namespace mutagrad
