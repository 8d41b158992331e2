// nn::init: bounds and statistics of the draws against torch.nn.init's formulas, the same
// parameters for the same seed, exactly one version bump per call (recorded with the caller's
// line) on a leaf that requires grad, and typed errors.
#include <cmath>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::values;

std::pair<double, double> min_max(const Tensor& t) {
  const std::vector<double> v = values(t);
  return {*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

TEST(NnInit, KaimingAndXavierBoundsFollowTorchFormulas) {
  Generator gen(0);
  Tensor w = empty({128, 64}).requires_grad_();
  nn::init::kaiming_uniform_(w, gen, std::sqrt(5.0));
  // torch.nn.Linear's init: gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / 64) = 1 / 8.
  auto [lo, hi] = min_max(w);
  EXPECT_GE(lo, -0.125);
  EXPECT_LT(hi, 0.125);
  EXPECT_LT(lo, -0.12);  // 8192 draws reach close to both ends
  EXPECT_GT(hi, 0.12);
  EXPECT_EQ(w.version(), 1u);
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());

  Tensor x = empty({20, 30}, kFloat64);
  nn::init::xavier_uniform_(x, gen, 2.0);
  const double bound = 2.0 * std::sqrt(6.0 / 50.0);
  std::tie(lo, hi) = min_max(x);
  EXPECT_GE(lo, -bound);
  EXPECT_LT(hi, bound);
  EXPECT_LT(lo, -0.9 * bound);

  Tensor k = empty({10, 4, 3, 3}, kFloat64);  // fan_out = 10 * 9
  nn::init::kaiming_uniform_(k, gen, 0.0, "fan_out", "relu");
  std::tie(lo, hi) = min_max(k);
  EXPECT_LT(hi, std::sqrt(2.0) * std::sqrt(3.0 / 90.0));
  EXPECT_EQ(nn::init::calculate_fan_in_and_fan_out(k), std::make_pair(int64_t{36}, int64_t{90}));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu"), std::sqrt(2.0 / 1.0001));
}

TEST(NnInit, UniformNormalZerosOnes) {
  Generator gen(3);
  Tensor t = empty({100000}, kFloat64);
  nn::init::uniform_(t, gen, -2.0, 3.0);
  auto [lo, hi] = min_max(t);
  EXPECT_GE(lo, -2.0);
  EXPECT_LT(hi, 3.0);
  EXPECT_NEAR(t.mean().item<double>(), 0.5, 0.02);
  nn::init::normal_(t, gen, 1.0, 0.5);
  EXPECT_NEAR(t.mean().item<double>(), 1.0, 0.01);
  EXPECT_NEAR(t.std().item<double>(), 0.5, 0.01);
  nn::init::zeros_(t);
  EXPECT_EQ(t.abs().sum().item<double>(), 0.0);
  nn::init::ones_(t);
  EXPECT_EQ(t.sum().item<double>(), 100000.0);
  EXPECT_EQ(t.version(), 4u);
  // Same seed, same parameters.
  Generator g1(9), g2(9);
  Tensor a = empty({5, 7}), b = empty({5, 7});
  nn::init::kaiming_uniform_(a, g1);
  nn::init::kaiming_uniform_(b, g2);
  EXPECT_EQ(values(a), values(b));
}

TEST(NnInit, WriteIsRecordedWithTheCallersLine) {
  Generator gen(1);
  Tensor w = empty({3, 3}, kFloat64).requires_grad_();
  nn::init::zeros_(w);
  Tensor y = (w * w).sum();  // saves w
  const int line = __LINE__ + 1;
  nn::init::normal_(w, gen);
  const std::string msg = testing_util::error_of([&] { y.backward(); });
  EXPECT_NE(msg.find("init_ops_test.cc:" + std::to_string(line)), std::string::npos) << msg;
}

TEST(NnInit, Errors) {
  Generator gen(0);
  Tensor v = empty({5});
  EXPECT_THROW(nn::init::kaiming_uniform_(v, gen), ShapeError);
  Tensor w = empty({2, 3});
  EXPECT_THROW(nn::init::kaiming_uniform_(w, gen, 0.0, "fan_avg"), ValueError);
  EXPECT_THROW(nn::init::calculate_gain("swish"), ValueError);
  Tensor i = zeros({2, 3}, kInt64);
  EXPECT_THROW(nn::init::uniform_(i, gen), DTypeError);
  EXPECT_THROW(nn::init::uniform_(w, gen, 1.0, 0.0), ValueError);
  EXPECT_EQ(w.version(), 0u);
  EXPECT_EQ(i.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
