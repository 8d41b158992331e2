// Binary ops: gradcheck and gradgradcheck at both argument positions, with broadcasting,
// scalars on either side, and non-contiguous inputs.
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::strided_leaf;

// Shape pairs: same shape, one broadcast [3] against [2, 3], and [2, 1] with [1, 3].
struct ShapePair {
  DimVector a, b;
};
const std::vector<ShapePair> kShapes = {
    {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{3}, {2, 3}}};

template <typename F>
void check_binary(F op, double lo = -1.0, double hi = 1.0, double lo_b = -1.0, double hi_b = 1.0) {
  uint64_t seed = 100;
  for (const ShapePair& s : kShapes) {
    SCOPED_TRACE(::testing::Message()
                 << "shapes " << IntArrayRef(s.a) << " and " << IntArrayRef(s.b));
    CHECK_GRADS([op](const VariableList& in) { return op(in[0], in[1]); },
                {leaf(s.a, seed++, lo, hi), leaf(s.b, seed++, lo_b, hi_b)});
    // Only the first / only the second argument requires grad.
    CHECK_GRADS([op](const VariableList& in) { return op(in[0], in[1]); },
                {leaf(s.a, seed++, lo, hi), leaf(s.b, seed++, lo_b, hi_b).detach()});
    CHECK_GRADS([op](const VariableList& in) { return op(in[0], in[1]); },
                {leaf(s.a, seed++, lo, hi).detach(), leaf(s.b, seed++, lo_b, hi_b)});
  }
  // Non-contiguous operands.
  CHECK_GRADS([op](const VariableList& in) { return op(in[0], in[1]); },
              {strided_leaf({2, 3}, seed++, lo, hi), strided_leaf({2, 3}, seed++, lo_b, hi_b)});
}

TEST(BinaryOps, Add) {
  check_binary([](const Tensor& a, const Tensor& b) { return a + b; });
  check_binary([](const Tensor& a, const Tensor& b) { return a.add(b, 2.5); });
}

TEST(BinaryOps, Sub) {
  check_binary([](const Tensor& a, const Tensor& b) { return a - b; });
  check_binary([](const Tensor& a, const Tensor& b) { return a.sub(b, -0.5); });
}

TEST(BinaryOps, Mul) {
  check_binary([](const Tensor& a, const Tensor& b) { return a * b; });
}

TEST(BinaryOps, Div) {
  check_binary([](const Tensor& a, const Tensor& b) { return a / b; }, -1, 1, 0.5, 2.0);
}

// A forward op run inside a backward (create_graph) must not read the running node's output
// mask: here d/dx of x ** y asks PowBackward1 for self's gradient only, and the pow it computes
// (x ** (y - 1)) must still save its result for the later derivative with respect to y.
TEST(BinaryOps, ForwardOpsInsideABackwardIgnoreItsOutputMask) {
  Tensor x = leaf({3}, 40, 0.5, 2.0);
  Tensor y = leaf({3}, 41, 0.5, 2.0);
  auto gx = autograd::grad({x.pow(y).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true);
  auto gy = autograd::grad({gx[0].sum()}, {y});
  const std::vector<double> xs = testing_util::values(x), ys = testing_util::values(y);
  std::vector<double> want;  // d/dy (y x^(y-1)) = x^(y-1) (1 + y ln x)
  for (size_t i = 0; i < xs.size(); ++i) {
    want.push_back(std::pow(xs[i], ys[i] - 1) * (1 + ys[i] * std::log(xs[i])));
  }
  expect_close(gy[0], want, 1e-12);
}

TEST(BinaryOps, PowTensor) {
  check_binary([](const Tensor& a, const Tensor& b) { return a.pow(b); }, 0.5, 2.0, -1.5, 1.5);
}

TEST(BinaryOps, MaximumMinimum) {
  // Disjoint ranges avoid ties; then swap so each side wins somewhere.
  check_binary([](const Tensor& a, const Tensor& b) { return a.maximum(b * 3.0); });
  check_binary([](const Tensor& a, const Tensor& b) { return a.minimum(b * 3.0); });
}

TEST(BinaryOps, MaximumSplitsTiesEvenly) {
  Tensor a = dev(tensor({1.0, 2.0, 3.0}, kFloat64)).requires_grad_();
  Tensor b = dev(tensor({1.0, 5.0, 0.0}, kFloat64)).requires_grad_();
  a.maximum(b).sum().backward();
  expect_close(a.grad(), {0.5, 0, 1});
  expect_close(b.grad(), {0.5, 1, 0});
}

TEST(BinaryOps, Where) {
  Tensor cond = dev(tensor({{true, false, true}, {false, false, true}}));
  uint64_t seed = 200;
  for (const ShapePair& s : kShapes) {
    CHECK_GRADS([](const VariableList& in) { return where(in[2], in[0], in[1]); },
                {leaf(s.a, seed++), leaf(s.b, seed++), cond});
  }
  CHECK_GRADS([](const VariableList& in) { return where(in[1], in[0], 2.0); },
              {strided_leaf({2, 3}, seed++), cond});
  CHECK_GRADS([](const VariableList& in) { return where(in[1], -1.0, in[0]); },
              {leaf({2, 3}, seed++), cond});
}

TEST(BinaryOps, ScalarOperands) {
  Tensor x = leaf({2, 3}, 300, 0.5, 2.0);
  Tensor xs = strided_leaf({2, 3}, 301, 0.5, 2.0);
  for (const Tensor& in : {x, xs}) {
    CHECK_GRADS([](const VariableList& v) { return v[0] + 2.0; }, {in});
    CHECK_GRADS([](const VariableList& v) { return 2.0 + v[0]; }, {in});
    CHECK_GRADS([](const VariableList& v) { return v[0] - 3; }, {in});
    CHECK_GRADS([](const VariableList& v) { return 3 - v[0]; }, {in});
    CHECK_GRADS([](const VariableList& v) { return v[0] * -1.5; }, {in});
    CHECK_GRADS([](const VariableList& v) { return -1.5 * v[0]; }, {in});
    CHECK_GRADS([](const VariableList& v) { return v[0] / 4.0; }, {in});
    CHECK_GRADS([](const VariableList& v) { return 4.0 / v[0]; }, {in});
    CHECK_GRADS([](const VariableList& v) { return pow(2.0, v[0]); }, {in});
    CHECK_GRADS([](const VariableList& v) { return add(v[0], 2.0, 3.0); }, {in});
    CHECK_GRADS([](const VariableList& v) { return rsub(v[0], 2.0, 3.0); }, {in});
  }
}

TEST(BinaryOps, NodeNames) {
  Tensor a = leaf({2}, 400);
  Tensor b = leaf({2}, 401);
  EXPECT_STREQ((a + b).grad_fn()->name(), "AddBackward0");
  EXPECT_STREQ((a + 1).grad_fn()->name(), "AddBackward1");
  EXPECT_STREQ((a - b).grad_fn()->name(), "SubBackward0");
  EXPECT_STREQ((a - 1).grad_fn()->name(), "SubBackward1");
  EXPECT_STREQ((1 - a).grad_fn()->name(), "RsubBackward1");
  EXPECT_STREQ((a * b).grad_fn()->name(), "MulBackward0");
  EXPECT_STREQ((a * 2).grad_fn()->name(), "MulBackward1");
  EXPECT_STREQ((a / b).grad_fn()->name(), "DivBackward0");
  EXPECT_STREQ((a / 2).grad_fn()->name(), "DivBackward1");
  EXPECT_STREQ(a.pow(b).grad_fn()->name(), "PowBackward1");
  EXPECT_STREQ(pow(2.0, a).grad_fn()->name(), "PowBackward2");
  EXPECT_STREQ(a.maximum(b).grad_fn()->name(), "MaximumBackward0");
  EXPECT_STREQ(a.minimum(b).grad_fn()->name(), "MinimumBackward0");
  EXPECT_STREQ(where(a > b, a, b).grad_fn()->name(), "WhereBackward0");
}

TEST(BinaryOps, ComparisonsReturnBoolAndRecordNothing) {
  Tensor a = leaf({3}, 500);
  Tensor b = leaf({3}, 501);
  for (const Tensor& t : {a == b, a != b, a<b, a <= b, a> b, a >= b, a < 0.0, a >= 0.0,
                          (a > b) & (a > 0.0), (a > b) | (a > 0.0)}) {
    EXPECT_EQ(t.dtype(), kBool);
    EXPECT_FALSE(t.requires_grad());
  }
}

TEST(BinaryOps, PowGradientAtZeroBaseFollowsPyTorch) {
  // d/de 0^e = 0 for e >= 0 (not nan), as PyTorch.
  Tensor base = dev(tensor({0.0, 2.0}, kFloat64)).requires_grad_();
  Tensor e = dev(tensor({2.0, 3.0}, kFloat64)).requires_grad_();
  base.pow(e).sum().backward();
  expect_close(base.grad(), {0, 12});
  expect_close(e.grad(), {0, 8 * std::log(2.0)});
}

}  // namespace
}  // namespace mutagrad
