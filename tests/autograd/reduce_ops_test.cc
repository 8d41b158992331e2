// Reductions: gradcheck and gradgradcheck over all dims and some dims, with and without
// keepdim, on contiguous and strided inputs; tie and zero handling by hand.
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::strided_leaf;

std::vector<Tensor> inputs(uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return {leaf({2, 3, 2}, seed, lo, hi), strided_leaf({2, 3, 2}, seed + 1, lo, hi)};
}

TEST(ReduceOps, Sum) {
  for (const Tensor& x : inputs(1)) {
    CHECK_GRADS([](const VariableList& in) { return in[0].sum(); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].sum({1}); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].sum({0, -1}, true); }, {x});
  }
}

TEST(ReduceOps, Mean) {
  for (const Tensor& x : inputs(3)) {
    CHECK_GRADS([](const VariableList& in) { return in[0].mean(); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].mean({2}); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].mean({0, 1}, true); }, {x});
  }
}

TEST(ReduceOps, Prod) {
  for (const Tensor& x : inputs(5, 0.5, 1.5)) {
    CHECK_GRADS([](const VariableList& in) { return in[0].prod(); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].prod({1}); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].prod({0, 2}, true); }, {x});
  }
}

TEST(ReduceOps, ProdWithZeros) {
  // One zero in a group: only the zero gets the product of the others; two zeros: nothing.
  Tensor x =
      dev(tensor({{2.0, 0.0, 3.0}, {0.0, 0.0, 5.0}, {1.0, 2.0, 4.0}}, kFloat64)).requires_grad_();
  x.prod({1}).sum().backward();
  expect_close(x.grad(), {0, 6, 0, 0, 0, 0, 8, 4, 2});
  CHECK_GRADS([](const VariableList& in) { return in[0].prod({1}); },
              {x.detach().requires_grad_()});
  Tensor y = dev(tensor({1.5, 0.0, -2.0}, kFloat64)).requires_grad_();
  CHECK_GRADS([](const VariableList& in) { return in[0].prod(); }, {y});
  // Two and three zeros: first derivatives 0, second derivatives still exact.
  Tensor z = dev(tensor({{0.0, 0.0, 3.0}, {0.0, 0.0, 0.0}}, kFloat64)).requires_grad_();
  CHECK_GRADS([](const VariableList& in) { return in[0].prod({1}); }, {z});
}

TEST(ReduceOps, MaxMin) {
  for (const Tensor& x : inputs(7)) {
    CHECK_GRADS([](const VariableList& in) { return in[0].max(); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].min(); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].max({1}); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].min({0, 2}, true); }, {x});
  }
}

TEST(ReduceOps, MaxSharesTheGradientAmongTies) {
  Tensor x = dev(tensor({1.0, 3.0, 3.0, 2.0}, kFloat64)).requires_grad_();
  x.max().backward();
  expect_close(x.grad(), {0, 0.5, 0.5, 0});
  EXPECT_STREQ(x.max().grad_fn()->name(), "MaxBackward1");
  EXPECT_STREQ(x.min().grad_fn()->name(), "MinBackward1");
  EXPECT_STREQ(x.max({0}).grad_fn()->name(), "AmaxBackward0");
}

// max(dim) / min(dim) as PyTorch's: values and the first index; the gradient goes to that
// index only (MaxBackward0), where amax shares it among ties.
TEST(ReduceOps, MaxDimAndMinDimRouteTheGradientToTheReturnedIndex) {
  Tensor x = dev(tensor({{1.0, 3.0, 3.0}, {2.0, 0.0, 2.0}}, kFloat64)).requires_grad_();
  auto [values, indices] = max_dim(x, 1);
  expect_close(values, {3, 2});
  expect_close(indices, {1, 0});
  EXPECT_EQ(indices.dtype(), kInt64);
  EXPECT_STREQ(values.grad_fn()->name(), "MaxBackward0");
  (values * dev(tensor({10.0, 20.0}, kFloat64))).sum().backward();
  expect_close(x.grad(), {0, 10, 0, 20, 0, 0});
  x.set_grad(Tensor());
  auto [low, where] = min_dim(x, 0, /*keepdim=*/true);
  EXPECT_EQ(low.sizes().vec(), (std::vector<int64_t>{1, 3}));
  expect_close(low, {1, 0, 2});
  expect_close(where, {0, 1, 1});
  EXPECT_STREQ(low.grad_fn()->name(), "MinBackward0");
  low.sum().backward();
  expect_close(x.grad(), {1, 0, 0, 0, 1, 1});
  // A 0-dim input: its only element.
  Tensor s = dev(full({}, 4.0, kFloat64)).requires_grad_();
  auto [sv, si] = max_dim(s, 0);
  sv.backward();
  expect_close(s.grad(), {1});
  expect_close(si, {0});
  CHECK_GRADS([](const VariableList& in) { return max_dim(in[0], 1).first; }, {leaf({3, 4}, 31)});
  CHECK_GRADS([](const VariableList& in) { return min_dim(in[0], -2, true).first.exp(); },
              {strided_leaf({3, 4}, 32)});
}

TEST(ReduceOps, NodeNames) {
  Tensor x = leaf({2, 2}, 9);
  EXPECT_STREQ(x.sum().grad_fn()->name(), "SumBackward0");
  EXPECT_STREQ(x.sum({0}).grad_fn()->name(), "SumBackward1");
  EXPECT_STREQ(x.mean().grad_fn()->name(), "MeanBackward0");
  EXPECT_STREQ(x.mean({0}).grad_fn()->name(), "MeanBackward1");
  EXPECT_STREQ(x.prod().grad_fn()->name(), "ProdBackward0");
  EXPECT_STREQ(x.prod({0}).grad_fn()->name(), "ProdBackward1");
  EXPECT_FALSE(x.argmax().requires_grad());
}

TEST(ReduceOps, SumTo) {
  Tensor g = leaf({2, 3, 4}, 10);
  CHECK_GRADS([](const VariableList& in) { return sum_to(in[0], {3, 1}); }, {g});
  CHECK_GRADS([](const VariableList& in) { return sum_to(in[0], {1, 4}); }, {g});
  Tensor s = sum_to(dev(ones({2, 3}, kFloat64)), {3});
  expect_close(s, {2, 2, 2});
}

}  // namespace
}  // namespace mutagrad
