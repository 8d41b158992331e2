// cumsum, cumprod, all, any, count_nonzero, var, std, norm, logsumexp: values against naive
// loops (cumsum/cumprod bit for bit: each line folded in double, in order up to 1024 elements as
// PyTorch's CPU, in the blocked order beyond),
// gradcheck + gradgradcheck (cumprod through zeros too), PyTorch's node names and errors. Runs
// on the CPU and, as statistics_ops_test_cuda, on the CUDA device.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(const std::vector<double>& v, IntArrayRef sizes) { return dev(from_vector(v, sizes)); }

// Row-major strides of `sizes`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) s[d - 1] = s[d] * sizes[d];
  return s;
}

TEST(StatisticsOps, ScansFoldEachLineInOrderInDouble) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<int64_t> sizes;
    const int ndim = static_cast<int>(rng() % 3) + 1;
    for (int d = 0; d < ndim; ++d) sizes.push_back(static_cast<int64_t>(rng() % 5) + 1);
    const int64_t dim = static_cast<int64_t>(rng() % static_cast<uint64_t>(ndim));
    Generator gen(trial);
    // float32 values whose running sums round differently in float and in double.
    const Tensor x = dev(randn(sizes, gen, kFloat32) * 1000.0);
    const Tensor y = x / 1000.0;
    const std::vector<double> v = values(x);
    const std::vector<double> w = values(y);
    const std::vector<int64_t> st = strides_of(sizes);
    std::vector<double> want_sum(v.size()), want_prod(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const int64_t pos = (static_cast<int64_t>(i) / st[dim]) % sizes[dim];
      if (pos != 0) continue;  // a line start: fold the line
      double s = 0, p = 1;
      for (int64_t k = 0; k < sizes[dim]; ++k) {
        const size_t j = i + static_cast<size_t>(k * st[dim]);
        s += v[j];
        p *= w[j];
        want_sum[j] = static_cast<float>(s);
        want_prod[j] = static_cast<float>(p);
      }
    }
    EXPECT_EQ(values(x.cumsum(dim)), want_sum) << "trial " << trial;
    EXPECT_EQ(values(y.cumprod(dim - ndim)), want_prod) << "trial " << trial;
  }
  // Integers and bools give int64; dtype= converts first.
  const Tensor b = dev(tensor({true, false, true}, kBool));
  EXPECT_EQ(b.cumsum(0).dtype(), kInt64);
  EXPECT_EQ(values(b.cumsum(0)), (std::vector<double>{1, 1, 2}));
  EXPECT_EQ(values(dev(tensor({2, 3, 4}, kInt32)).cumprod(0)), (std::vector<double>{2, 6, 24}));
  EXPECT_EQ(dev(tensor({2, 3}, kInt32)).cumsum(0, kFloat64).dtype(), kFloat64);
  // Through a non-contiguous view.
  const Tensor m = dev(arange(6, kFloat64).view({2, 3})).t();
  EXPECT_EQ(values(m.cumsum(0)), (std::vector<double>{0, 3, 1, 7, 3, 12}));
}

// Note [Blocked association order] (tensor/blocked_order.h) written out naively, in double:
// block 0 (1024 elements) folded in order from init, each later block from its own first
// element and offset by the carry (y at the previous block's end).
std::vector<double> blocked_scan(const std::vector<double>& x, bool prod) {
  constexpr size_t kBlock = 1024;
  auto op = [prod](double a, double b) { return prod ? a * b : a + b; };
  std::vector<double> y(x.size());
  double carry = prod ? 1 : 0;
  for (size_t b = 0; b < x.size(); b += kBlock) {
    const size_t e = std::min(x.size(), b + kBlock);
    double l = b == 0 ? op(carry, x[0]) : x[b];
    y[b] = b == 0 ? l : op(carry, l);
    for (size_t i = b + 1; i < e; ++i) {
      l = op(l, x[i]);
      y[i] = b == 0 ? l : op(carry, l);
    }
    carry = y[e - 1];
  }
  return y;
}

// The first index where a and b differ (bitwise for doubles that are not NaN), or -1.
int64_t first_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

TEST(StatisticsOps, LongScansFoldInTheBlockedOrderOnEveryDevice) {
  // Lines around block boundaries, odd sizes and 1M elements; several lines, strided ones too.
  Generator gen(7);
  for (int64_t len : {1023, 1024, 1025, 2047, 2048, 2049, 4097, 9999, 1 << 20}) {
    SCOPED_TRACE(testing::Message() << "length " << len);
    const Tensor x = randn({len}, gen, kFloat64);
    const Tensor f = x / 1000.0 + 1.0;  // products that neither overflow nor vanish
    for (bool prod : {false, true}) {
      const Tensor in = dev(prod ? f : x);
      const std::vector<double> want = blocked_scan(values(in), prod);
      if (len == (1 << 20)) {
        // The order matters here: a kernel folding in order (as before it) fails this test.
        std::vector<double> in_order = values(in);
        for (size_t i = 1; i < in_order.size(); ++i) {
          in_order[i] = prod ? in_order[i - 1] * in_order[i] : in_order[i - 1] + in_order[i];
        }
        EXPECT_NE(first_difference(in_order, want), -1);
      }
      const Tensor got = prod ? in.cumprod(0) : in.cumsum(0);
      const int64_t at = first_difference(values(got), want);
      EXPECT_EQ(at, -1) << (prod ? "cumprod" : "cumsum") << " differs at " << at;
      // The CPU's bits (the same as above on the CPU; the device's against the CPU's).
      const Tensor on_cpu = prod ? in.cpu().cumprod(0) : in.cpu().cumsum(0);
      EXPECT_EQ(first_difference(values(got), values(on_cpu)), -1);
    }
    // float32 accumulates in double and rounds each element.
    std::vector<double> want32 = blocked_scan(values(x.to(kFloat32)), false);
    for (double& v : want32) v = static_cast<float>(v);
    EXPECT_EQ(first_difference(values(dev(x.to(kFloat32)).cumsum(0)), want32), -1);
    // Integers are associative: the running sums themselves.
    const Tensor k = dev((x * 1000).to(kInt64));
    std::vector<double> want64 = values(k);
    for (size_t i = 1; i < want64.size(); ++i) want64[i] += want64[i - 1];
    EXPECT_EQ(first_difference(values(k.cumsum(0)), want64), -1);
  }
  // Lines along dim 1, contiguous and transposed (lines with a stride): 3 lines, and 40 (the
  // host-run CUDA kernel folds a line per thread once every thread has one, else runs the GPU's
  // three passes: Note [Host-run scans] in cuda/reduce.cu; both are checked). 5000 elements take
  // that one-pass kernel's pair of blocks (Note [Two blocks at once]), a lone block and a partial
  // one; 2500 no pair.
  for (auto [rows, len] : {std::pair<int64_t, int64_t>{3, 5000}, {40, 5000}, {40, 2500}}) {
    const Tensor m = randn({rows, len}, gen, kFloat64);
    const Tensor f = m / 1000.0 + 1.0;
    for (bool prod : {false, true}) {
      const Tensor v = prod ? f : m;
      for (const Tensor& t : {dev(v), dev(v.t().contiguous()).t()}) {
        const Tensor got = prod ? t.cumprod(1) : t.cumsum(1);
        for (int64_t r = 0; r < rows; ++r) {
          SCOPED_TRACE(testing::Message()
                       << (prod ? "cumprod" : "cumsum") << " length " << len << " line " << r);
          const int64_t at = first_difference(values(got.select(0, r)),
                                              blocked_scan(values(v.select(0, r)), prod));
          EXPECT_EQ(at, -1) << "differs at " << at;
        }
      }
    }
  }
}

TEST(StatisticsOps, AllAnyCountNonzero) {
  const Tensor x = f64({1, 0, 2, 3, 0, 0}, {2, 3});
  EXPECT_EQ(values(x.all()), std::vector<double>{0});
  EXPECT_EQ(values(x.any()), std::vector<double>{1});
  EXPECT_EQ(values(x.all(1)), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(x.any(0, true)), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(x.any(0, true).sizes().vec(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(x.all().dtype(), kBool);
  EXPECT_EQ(values(x.count_nonzero()), std::vector<double>{3});
  EXPECT_EQ(values(x.count_nonzero({0})), (std::vector<double>{2, 0, 1}));
  const Tensor empty = dev(zeros({0}, kFloat64));
  EXPECT_EQ(values(empty.all()), std::vector<double>{1});
  EXPECT_EQ(values(empty.any()), std::vector<double>{0});
}

TEST(StatisticsOps, VarStdNormLogsumexpMatchNaiveLoops) {
  const std::vector<double> v = {1.5, -2.0, 0.25, 4.0, -0.5, 3.0};
  const Tensor x = f64(v, {2, 3});
  auto var_of = [](const std::vector<double>& xs, double correction) {
    double mean = 0;
    for (double e : xs) mean += e;
    mean /= static_cast<double>(xs.size());
    double ss = 0;
    for (double e : xs) ss += (e - mean) * (e - mean);
    return ss / (static_cast<double>(xs.size()) - correction);
  };
  testing_util::expect_close(x.var(), {var_of(v, 1)}, 1e-12);
  testing_util::expect_close(x.var({1}, 0), {var_of({1.5, -2, 0.25}, 0), var_of({4, -0.5, 3}, 0)},
                             1e-12);
  testing_util::expect_close(x.std({0}, 1, true),
                             {std::sqrt(var_of({1.5, 4}, 1)), std::sqrt(var_of({-2, -0.5}, 1)),
                              std::sqrt(var_of({0.25, 3}, 1))},
                             1e-12);
  EXPECT_TRUE(std::isinf(values(f64({1.0, 2.0}, {2}).var({}, 2))[0]));  // no degrees of freedom
  auto norm_of = [&](double p) {
    if (std::isinf(p)) {
      double m = p > 0 ? 0 : kInf;
      for (double e : v) m = p > 0 ? std::max(m, std::abs(e)) : std::min(m, std::abs(e));
      return m;
    }
    if (p == 0) return 6.0;  // every element is nonzero
    double s = 0;
    for (double e : v) s += std::pow(std::abs(e), p);
    return std::pow(s, 1 / p);
  };
  for (double p : {0.0, 1.0, 2.0, 3.0, 0.5, kInf, -kInf}) {
    testing_util::expect_close(x.norm(p), {norm_of(p)}, 1e-12);
  }
  testing_util::expect_close(x.norm(1, {1}), {3.75, 7.5}, 1e-12);
  const Tensor l = f64({0.5, -kInf, 2.0, 1000.0, 1000.0, -kInf}, {2, 3});
  testing_util::expect_close(
      l.logsumexp({1}), {std::log(std::exp(0.5) + std::exp(2.0)), 1000.0 + std::log(2.0)}, 1e-12);
  EXPECT_EQ(l.logsumexp({1}, true).sizes().vec(), (std::vector<int64_t>{2, 1}));
}

TEST(StatisticsOps, GradientsAtEveryArgument) {
  CHECK_GRADS([](const VariableList& in) { return in[0].cumsum(1); }, {strided_leaf({3, 4}, 1)});
  CHECK_GRADS([](const VariableList& in) { return in[0].cumprod(0); }, {leaf({4, 2}, 2)});
  // Zeros: one per line, two in a line (their gradients: the exclusive products, then 0).
  CHECK_GRADS(
      [](const VariableList& in) {
        const Tensor mask = f64({1, 0, 1, 1, 1, 0, 1, 0}, {2, 4});
        return (in[0] * mask).cumprod(1);
      },
      {leaf({2, 4}, 3)});
  CHECK_GRADS([](const VariableList& in) { return in[0].var({1}, 1, true) + in[0].std({1}); },
              {leaf({3, 4}, 4)});
  CHECK_GRADS([](const VariableList& in) { return in[0].std() * in[0].var({}, 0); },
              {strided_leaf({2, 3}, 5)});
  for (double p : {1.0, 2.0, 3.0, 1.5, kInf, -kInf}) {
    CHECK_GRADS([p](const VariableList& in) { return in[0].norm(p, {1}); }, {leaf({2, 5}, 6)});
  }
  CHECK_GRADS([](const VariableList& in) { return in[0].norm(); }, {strided_leaf({3, 2}, 7)});
  CHECK_GRADS([](const VariableList& in) { return in[0].logsumexp({0}); }, {leaf({3, 2}, 8)});
  CHECK_GRADS(
      [](const VariableList& in) {
        return in[0].logsumexp({0, 1}, true);
      },
      {leaf({2, 2}, 9)});
}

TEST(StatisticsOps, NodeNamesAndErrorsAsTorch) {
  const Tensor x = leaf({2, 3}, 10);
  EXPECT_STREQ(x.cumsum(0).grad_fn()->name(), "CumsumBackward0");
  EXPECT_STREQ(x.cumprod(1).grad_fn()->name(), "CumprodBackward0");
  EXPECT_STREQ(x.var().grad_fn()->name(), "VarBackward0");
  EXPECT_STREQ(x.std({1}).grad_fn()->name(), "StdBackward0");
  EXPECT_STREQ(x.norm().grad_fn()->name(), "NormBackward1");
  EXPECT_STREQ(x.logsumexp({1}).grad_fn()->name(), "LogsumexpBackward0");
  EXPECT_FALSE(x.all().requires_grad());
  const Tensor i = dev(tensor({1, 2, 3}, kInt64));
  EXPECT_THROW(i.var(), DTypeError);
  EXPECT_THROW(i.norm(), DTypeError);
  EXPECT_THROW(x.cumsum(2), IndexError);
  EXPECT_EQ(i.logsumexp({0}).dtype(), kFloat32);
}

}  // namespace
}  // namespace mutagrad
