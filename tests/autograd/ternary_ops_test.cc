// addcmul, addcdiv, lerp (autograd/ops/ternary_ops.h): values against the formulas written out
// element by element, gradcheck + gradgradcheck out of place and in place, node names, one
// version bump with the caller's line, and failed writes that change nothing.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/autograd/grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::check_grads;
using testing_util::dev;
using testing_util::error_of;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

TEST(TernaryOps, AddcmulAndAddcdivValues) {
  Tensor x = leaf({2, 3}, 1).detach();
  Tensor a = leaf({2, 3}, 2).detach();
  Tensor b = leaf({3}, 3, 0.5, 2.0).detach();  // broadcast over rows
  std::vector<double> xv = values(x), av = values(a), bv = values(b);
  std::vector<double> mul(6), div(6);
  for (int i = 0; i < 6; ++i) {
    mul[i] = xv[i] + 0.5 * av[i] * bv[i % 3];
    div[i] = xv[i] + (-2.0 * av[i]) / bv[i % 3];
  }
  expect_close(addcmul(x, a, b, 0.5), mul);
  expect_close(x.addcdiv(a, b, -2.0), div);
  Tensor y = x.clone();
  y.addcmul_(a, b, 0.5);
  expect_close(y, mul);
  Tensor z = x.clone();
  z.addcdiv_(a, b, -2.0);
  expect_close(z, div);
}

TEST(TernaryOps, LerpValuesBothBranches) {
  Tensor x = leaf({4}, 4).detach();
  Tensor e = leaf({4}, 5).detach();
  std::vector<double> xv = values(x), ev = values(e);
  for (double w : {0.25, 0.75, -0.1, 1.5}) {
    std::vector<double> want(4);
    for (int i = 0; i < 4; ++i) want[i] = xv[i] + w * (ev[i] - xv[i]);
    expect_close(lerp(x, e, w), want, 1e-12);
    Tensor y = x.clone();
    y.lerp_(e, w);
    expect_close(y, want, 1e-12);
  }
  Tensor w = dev(tensor({0.1, 0.6, -0.7, 0.49}, kFloat64));
  std::vector<double> wv = values(w), want(4);
  for (int i = 0; i < 4; ++i) want[i] = xv[i] + wv[i] * (ev[i] - xv[i]);
  expect_close(x.lerp(e, w), want, 1e-12);
  Tensor y = x.clone();
  y.lerp_(e, w);
  expect_close(y, want, 1e-12);
}

TEST(TernaryOps, LerpMatchesTorchRoundingInFloat32) {
  // w >= 0.5 takes end - (end - self) * (1 - w): at w = 1 the result is end exactly.
  Tensor x = dev(tensor({1e-3f, 3.0f, -7.25f}));
  Tensor e = dev(tensor({2.5f, -1e8f, 0.1f}));
  expect_close(lerp(x, e, 1.0), values(e), 0.0);
  expect_close(lerp(x, e, 0.0), values(x), 0.0);
}

TEST(TernaryOps, Gradients) {
  Tensor x = leaf({2, 3}, 6);
  Tensor a = strided_leaf({2, 3}, 7);
  Tensor b = leaf({3}, 8, 0.5, 1.5);
  Tensor w = leaf({2, 3}, 9, 0.0, 1.0);
  check_grads([](const VariableList& in) { return addcmul(in[0], in[1], in[2], 0.7); }, {x, a, b});
  check_grads([](const VariableList& in) { return addcdiv(in[0], in[1], in[2], -1.3); }, {x, a, b});
  check_grads([](const VariableList& in) { return lerp(in[0], in[1], 0.3); }, {x, a});
  check_grads([](const VariableList& in) { return lerp(in[0], in[1], 0.8); }, {x, a});
  check_grads([](const VariableList& in) { return lerp(in[0], in[1], in[2]); }, {x, a, w});
}

TEST(TernaryOps, InPlaceGradients) {
  Tensor x = leaf({2, 3}, 10);
  Tensor a = leaf({2, 3}, 11);
  Tensor b = leaf({2, 3}, 12, 0.5, 1.5);
  check_grads([](const VariableList& in) { return in[0].clone().addcmul_(in[1], in[2], 0.7); },
              {x, a, b});
  check_grads([](const VariableList& in) { return in[0].clone().addcdiv_(in[1], in[2], 2.0); },
              {x, a, b});
  check_grads([](const VariableList& in) { return in[0].clone().lerp_(in[1], 0.6); }, {x, a});
  check_grads([](const VariableList& in) { return in[0].clone().lerp_(in[1], in[2]); }, {x, a, b});
}

TEST(TernaryOps, OperandThatIsSelfIsStaleAsInTorch) {
  // y.addcmul_(y, a) saves y as tensor1, and the write makes it stale: PyTorch's error, with
  // the write's name and line.
  Tensor x = leaf({3}, 17);
  Tensor a = leaf({3}, 18);
  Tensor y = x.clone();
  const int line = __LINE__ + 1;
  y.addcmul_(y, a, 0.5);
  const std::string msg = error_of([&] { y.sum().backward(); });
  EXPECT_NE(msg.find("addcmul_ at tests/autograd/ternary_ops_test.cc:" + std::to_string(line)),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("AddcmulBackward0 saved it"), std::string::npos) << msg;
}

TEST(TernaryOps, NodeNames) {
  Tensor x = leaf({3}, 13);
  Tensor a = leaf({3}, 14);
  Tensor b = leaf({3}, 15, 0.5, 1.5);
  EXPECT_STREQ(addcmul(x, a, b).grad_fn()->name(), "AddcmulBackward0");
  EXPECT_STREQ(addcdiv(x, a, b).grad_fn()->name(), "AddcdivBackward0");
  EXPECT_STREQ(lerp(x, a, 0.5).grad_fn()->name(), "LerpBackward0");
  EXPECT_STREQ(lerp(x, a, b).grad_fn()->name(), "LerpBackward1");
  Tensor y = x.clone();
  y.addcdiv_(a, b);
  EXPECT_STREQ(y.grad_fn()->name(), "AddcdivBackward0");
}

TEST(TernaryOps, OneBumpWithTheCallersLine) {
  Tensor x = dev(zeros({3}, TensorOptions(kFloat64)));
  Tensor a = dev(ones({3}, TensorOptions(kFloat64)));
  const int line = __LINE__ + 1;
  x.addcmul_(a, a, 2.0);
  EXPECT_EQ(x.version(), 1u);
  std::optional<MutationSite> site = x.version_counter().site_of_bump(0);
  ASSERT_TRUE(site.has_value());
  EXPECT_STREQ(site->op, "addcmul_");
  EXPECT_EQ(site->line, line);
  x.addcdiv_(a, a);
  x.lerp_(a, 0.5);
  EXPECT_EQ(x.version(), 3u);
  EXPECT_STREQ(x.version_counter().site_of_bump(2)->op, "lerp_");
}

TEST(TernaryOps, FailedWritesChangeNothing) {
  Tensor x = dev(zeros({2, 3}, TensorOptions(kFloat32)));
  Tensor bad = dev(ones({4}, TensorOptions(kFloat32)));
  Tensor ok = dev(ones({2, 3}, TensorOptions(kFloat32)));
  EXPECT_NE(error_of<ShapeError>([&] { x.addcmul_(ok, bad); }).find("broadcast"),
            std::string::npos);
  Tensor wide = dev(ones({3, 2, 3}, TensorOptions(kFloat32)));
  EXPECT_NE(error_of<ShapeError>([&] { x.addcmul_(ok, wide); }).find("[2, 3]"), std::string::npos);
  Tensor i = dev(ones({2, 3}, TensorOptions(kInt64)));
  EXPECT_NE(error_of<DTypeError>([&] { i.addcdiv_(i, i); }).find("integer division"),
            std::string::npos);
  EXPECT_NE(error_of<DTypeError>([&] { i.addcmul_(i, i, 0.5); }).find("value=0.5"),
            std::string::npos);
  Tensor d = dev(ones({2, 3}, TensorOptions(kFloat64)));
  EXPECT_NE(error_of<DTypeError>([&] { x.lerp_(d, 0.5); }).find("for `end`"), std::string::npos);
  EXPECT_NE(error_of<DTypeError>([&] { i.addcmul_(d, d); }).find("can't be cast"),
            std::string::npos);
  EXPECT_EQ(x.version(), 0u);
  EXPECT_EQ(i.version(), 0u);
  expect_close(x, std::vector<double>(6, 0.0), 0.0);
  Tensor w = leaf({2, 3}, 16);
  EXPECT_NE(error_of([&] {
              w.addcmul_(ok.to(kFloat64), ok.to(kFloat64));
            }).find("a leaf Variable that requires grad"),
            std::string::npos);
  EXPECT_EQ(w.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
