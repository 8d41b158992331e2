// nn::init's trunc_normal_, eye_ and orthogonal_ (nn/init.h): their distributions and
// orthogonality, one tracked write each, refused input that changes nothing, and the same bits
// as the Python package's mutagrad.nn.init for the same generator seed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "mutagrad.h"
#include "nn/nn.h"
#include "tests/nn/nn_test_util.h"

namespace {

using namespace mutagrad;
using mutagrad::testing_device::on_test_device;
using mutagrad::testing_device::test_device;
using mutagrad_nn_test::error_of;
using mutagrad_nn_test::values;

double phi(double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); }
double big_phi(double x) { return (1 + std::erf(x / std::sqrt(2.0))) / 2; }

std::vector<double> hex_values(const std::vector<const char*>& hex) {
  std::vector<double> out;
  for (const char* h : hex) out.push_back(std::strtod(h, nullptr));
  return out;
}

TEST(Init, TruncNormalHasTheTruncatedDistributionsMomentsAndBounds) {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    Generator gen(11, test_device());
    Tensor w = on_test_device(empty({200, 100}, dtype)).requires_grad_();
    const uint32_t v = w.version();
    const double mean = 1.0, std = 2.0, a = -1.0, b = 4.0;
    nn::init::trunc_normal_(w, gen, mean, std, a, b);
    EXPECT_EQ(w.version(), v + 1);
    EXPECT_TRUE(w.requires_grad());
    EXPECT_FALSE(w.grad_fn());
    const std::vector<double> s = values(w);
    double m = 0, sq = 0;
    for (double e : s) {
      ASSERT_GE(e, a);
      ASSERT_LE(e, b);
      m += e / s.size();
    }
    for (double e : s) sq += (e - m) * (e - m) / s.size();
    // The truncated normal's mean and variance (alpha, beta: the bounds in std units).
    const double al = (a - mean) / std, be = (b - mean) / std, z = big_phi(be) - big_phi(al);
    const double t_mean = mean + std * (phi(al) - phi(be)) / z;
    const double t_var =
        std * std * (1 + (al * phi(al) - be * phi(be)) / z - std::pow((phi(al) - phi(be)) / z, 2));
    // 20,000 draws: the mean's standard error is about 0.01; 5 of them.
    EXPECT_NEAR(m, t_mean, 0.05);
    EXPECT_NEAR(sq, t_var, 0.05 * t_var);
  }
}

TEST(Init, TruncNormalRefusesBadArgumentsAndChangesNothing) {
  Generator gen(1, test_device());
  Tensor w = on_test_device(zeros({4, 4}, kFloat64));
  const uint32_t v = w.version();
  std::string msg = error_of<ValueError>([&] { nn::init::trunc_normal_(w, gen, 0, 1, 2, 1); });
  EXPECT_NE(msg.find("a=2 b=1"), std::string::npos) << msg;
  EXPECT_THROW(nn::init::trunc_normal_(w, gen, 0, 0.0), ValueError);
  Tensor i = on_test_device(zeros({4}, kInt64));
  EXPECT_THROW(nn::init::trunc_normal_(i, gen), DTypeError);
  EXPECT_EQ(w.version(), v);
  EXPECT_EQ(values(w), std::vector<double>(16, 0.0));
  EXPECT_EQ(i.version(), 0u);
}

TEST(Init, EyeWritesTheIdentityOnceAndRefusesOtherRanks) {
  Tensor w = on_test_device(full({3, 5}, 7.0, kFloat32)).requires_grad_();
  nn::init::eye_(w);
  EXPECT_EQ(w.version(), 1u);
  std::vector<double> got = values(w);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 5; ++c) EXPECT_EQ(got[r * 5 + c], r == c ? 1.0 : 0.0);
  }
  Tensor i = on_test_device(full({2, 2}, 5, kInt64));
  nn::init::eye_(i);
  EXPECT_EQ(values(i), (std::vector<double>{1, 0, 0, 1}));
  Tensor t3 = on_test_device(full({2, 2, 2}, 7.0, kFloat32));
  std::string msg = error_of<ShapeError>([&] { nn::init::eye_(t3); });
  EXPECT_NE(msg.find("[2, 2, 2]"), std::string::npos) << msg;
  EXPECT_EQ(t3.version(), 0u);
  EXPECT_EQ(values(t3), std::vector<double>(8, 7.0));
}

// Q^T Q = gain^2 I over the tall side of w viewed as [size(0), numel / size(0)].
void expect_orthogonal(const Tensor& w, double gain, double tol) {
  const int64_t rows = w.size(0), cols = w.numel() / rows;
  Tensor q = w.detach().to(kFloat64).reshape({rows, cols});
  if (rows < cols) q = q.t();
  const std::vector<double> g = values(q.t().matmul(q));
  const int64_t n = q.size(1);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      EXPECT_NEAR(g[r * n + c], r == c ? gain * gain : 0.0, tol) << r << "," << c;
    }
  }
}

TEST(Init, OrthogonalGivesOrthonormalColumnsOrRowsWrittenOnce) {
  Generator gen(5, test_device());
  for (std::vector<int64_t> shape : {std::vector<int64_t>{10, 6}, {6, 10}, {4, 3, 2}, {7, 7}}) {
    for (ScalarType dtype : {kFloat32, kFloat64}) {
      Tensor w = on_test_device(empty(shape, dtype)).requires_grad_();
      nn::init::orthogonal_(w, gen, 1.5);
      EXPECT_EQ(w.version(), 1u);
      expect_orthogonal(w, 1.5, dtype == kFloat32 ? 1e-5 : 1e-12);
    }
  }
  // Two draws from one generator differ; the same seed repeats.
  Tensor w1 = on_test_device(empty({4, 4}, kFloat64)), w2 = on_test_device(empty({4, 4}, kFloat64));
  Generator g1(9, test_device()), g2(9, test_device());
  nn::init::orthogonal_(w1, g1);
  nn::init::orthogonal_(w2, g2);
  EXPECT_EQ(values(w1), values(w2));
  nn::init::orthogonal_(w2, g2);
  EXPECT_NE(values(w1), values(w2));
}

TEST(Init, OrthogonalRefusesOneDimAndSkipsEmpty) {
  Generator gen(5, test_device());
  Tensor v = on_test_device(full({6}, 2.0, kFloat32));
  std::string msg = error_of<ShapeError>([&] { nn::init::orthogonal_(v, gen); });
  EXPECT_NE(msg.find("[6]"), std::string::npos) << msg;
  EXPECT_EQ(v.version(), 0u);
  EXPECT_EQ(values(v), std::vector<double>(6, 2.0));
  Tensor i = on_test_device(zeros({2, 2}, kInt64));
  EXPECT_THROW(nn::init::orthogonal_(i, gen), DTypeError);
  Tensor e = on_test_device(empty({0, 3}, kFloat32));
  nn::init::orthogonal_(e, gen);
  EXPECT_EQ(e.version(), 0u);
}

// The Python package's values for the same seeds, printed with float.hex() by:
//   g = mutagrad.Generator().manual_seed(7)
//   t = mutagrad.empty(3, 4, dtype=mutagrad.float64)
//   mutagrad.nn.init.trunc_normal_(t, 0.5, 2.0, -1.0, 3.0, generator=g)
//   (then orthogonal_ of a fresh [3, 5] float64 tensor, and of a [5, 2] float32 one with
//   gain=2.0, each from a new generator seeded 7), on the CPU.
TEST(Init, SameBitsAsThePythonPackageForTheSameSeed) {
  // On the CPU in both twins of this test: that is where the values were recorded.
  Generator g(7);
  Tensor t = empty({3, 4}, kFloat64);
  nn::init::trunc_normal_(t, g, 0.5, 2.0, -1.0, 3.0);
  EXPECT_EQ(values(t),
            hex_values({"0x1.593f584322e81p+1", "0x1.f79a21f6cf81ap-2", "-0x1.f24660522f946p-1",
                        "0x1.be22db9e3ef78p-2", "0x1.8eaf4e8d75218p-4", "0x1.0cbfe8411034cp-2",
                        "0x1.edf11bb2e88c2p+0", "0x1.ffca59ad35610p-6", "-0x1.e378eb665dafep-1",
                        "0x1.0999f32699259p+0", "0x1.bdfab090d2bccp+0", "0x1.e3348dc60b72ep+0"}));
  Generator g2(7);
  Tensor q = empty({3, 5}, kFloat64);
  nn::init::orthogonal_(q, g2);
  EXPECT_EQ(values(q),
            hex_values({"0x1.d5ad7beccc415p-1", "0x1.e38f3aeea769ap-3", "0x1.39ca4578a3d32p-6",
                        "0x1.2aabfcffd2ae6p-2", "-0x1.0d5fc61753f22p-3", "0x1.b55abb8f6a9f0p-8",
                        "0x1.084c68545aeedp-1", "0x1.96eacf64d4000p-2", "-0x1.0592b3c83f262p-3",
                        "0x1.7ee493ed9b776p-1", "-0x1.2d04f38d45e37p-3", "0x1.d0996470da2a7p-3",
                        "-0x1.87faa230e65fbp-1", "0x1.eabe3ef74af77p-2", "0x1.5561679ba56f2p-2"}));
  Generator g3(7);
  Tensor q32 = empty({5, 2}, kFloat32);
  nn::init::orthogonal_(q32, g3, 2.0);
  EXPECT_EQ(values(q32),
            hex_values({"0x1.b1ee3p+0", "-0x1.2a303p-3", "0x1.21e852p-5", "0x1.633ecep-1",
                        "-0x1.f1be76p-3", "0x1.e7a4e6p-1", "0x1.085adep+0", "0x1.d65cfp-2",
                        "-0x1.b5d0ccp-7", "0x1.8ae096p+0"}));
}

}  // namespace
