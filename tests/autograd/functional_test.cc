// The functional API against analytic Jacobians and Hessians.
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::values;

// f(x) = sum(x^3) + (x0 * x1)^2: H = diag(6x) + the Hessian of (x0 x1)^2.
Tensor cubic(const Tensor& x) { return x.pow(3).sum() + (x.select(0, 0) * x.select(0, 1)).pow(2); }

std::vector<double> cubic_hessian(const std::vector<double>& x) {
  const size_t n = x.size();
  std::vector<double> h(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) h[i * n + i] = 6 * x[i];
  h[0 * n + 0] += 2 * x[1] * x[1];
  h[1 * n + 1] += 2 * x[0] * x[0];
  h[0 * n + 1] += 4 * x[0] * x[1];
  h[1 * n + 0] += 4 * x[0] * x[1];
  return h;
}

TEST(Functional, HessianMatchesAnalytic) {
  Tensor x = tensor({0.5, -1.0, 2.0}, kFloat64);
  Tensor h = autograd::hessian(cubic, x);
  EXPECT_EQ(h.sizes(), IntArrayRef({3, 3}));
  expect_close(h, cubic_hessian(values(x)));
}

TEST(Functional, HvpAndVhpMatchTheAnalyticHessian) {
  Tensor x = tensor({0.5, -1.0, 2.0}, kFloat64);
  Tensor v = tensor({1.0, 2.0, -3.0}, kFloat64);
  std::vector<double> h = cubic_hessian(values(x));
  std::vector<double> expected(3, 0.0);
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) expected[i] += h[i * 3 + j] * values(v)[j];
  }
  auto [out, hv] = autograd::hvp(cubic, x, v);
  expect_close(hv, expected);
  expect_close(out, values(cubic(x)));
  auto [out2, vh] = autograd::vhp(cubic, x, v);
  expect_close(vh, expected);  // symmetric Hessian
  EXPECT_FALSE(hv.requires_grad());
}

TEST(Functional, HvpOfQuadraticForm) {
  // f(x) = x^T A x: H = A + A^T.
  Tensor a = tensor({{1.0, 2.0}, {0.0, 3.0}}, kFloat64);
  auto f = [a](const Tensor& x) { return x.matmul(a.matmul(x)); };
  Tensor x = tensor({1.0, -1.0}, kFloat64);
  auto [out, hv] = autograd::hvp(f, x, tensor({1.0, 0.0}, kFloat64));
  expect_close(hv, {2, 2});
  expect_close(autograd::hessian(f, x), {2, 2, 2, 6});
}

TEST(Functional, JacobianJvpVjp) {
  Tensor a = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, kFloat64);
  auto f = [a](const Tensor& x) { return a.matmul(x).sin(); };
  Tensor x = tensor({0.1, 0.2, -0.3}, kFloat64);
  Tensor j = autograd::jacobian(f, x);
  EXPECT_EQ(j.sizes(), IntArrayRef({2, 3}));
  std::vector<double> ax = values(a.matmul(x));
  std::vector<double> expected;
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) expected.push_back(std::cos(ax[r]) * values(a)[r * 3 + c]);
  }
  expect_close(j, expected);
  Tensor u = tensor({1.0, -1.0, 2.0}, kFloat64);
  auto [y, jv] = autograd::jvp(f, x, u);
  expect_close(jv, values(j.matmul(u)));
  Tensor w = tensor({2.0, -0.5}, kFloat64);
  auto [y2, vj] = autograd::vjp(f, x, w);
  expect_close(vj, values(w.matmul(j)));
}

TEST(Functional, SeveralInputsAndOutputs) {
  autograd::TensorFunction f = [](const VariableList& in) {
    return VariableList{in[0] * in[1], (in[0] + in[1]).sum()};
  };
  Tensor a = tensor({1.0, 2.0}, kFloat64);
  Tensor b = tensor({3.0, 4.0}, kFloat64);
  std::vector<VariableList> j = autograd::jacobian(f, {a, b});
  ASSERT_EQ(j.size(), 2u);
  expect_close(j[0][0], {3, 0, 0, 4});  // d(a*b)/da = diag(b)
  expect_close(j[0][1], {1, 0, 0, 2});
  expect_close(j[1][0], {1, 1});
  EXPECT_EQ(j[1][1].sizes(), IntArrayRef({2}));
  std::vector<VariableList> h =
      autograd::hessian([](const VariableList& in) { return (in[0] * in[1]).sum(); }, {a, b});
  expect_close(h[0][0], {0, 0, 0, 0});
  expect_close(h[0][1], {1, 0, 0, 1});
}

TEST(Functional, CreateGraphKeepsTheResultDifferentiable) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor v = tensor({1.0, 1.0}, kFloat64);
  auto [out, hv] = autograd::hvp([](const Tensor& t) { return t.pow(4).sum(); }, x, v, true);
  // hv = 12 x^2 v; d/dx sum(hv) = 24 x.
  expect_close(hv, {12, 48});
  ASSERT_TRUE(hv.requires_grad());
  hv.sum().backward();
  expect_close(x.grad(), {24, 48});
}

TEST(Functional, UnusedInputGivesZeros) {
  auto [out, g] = autograd::vjp([](const Tensor& t) { return ones({2}, kFloat64); },
                                tensor({1.0, 2.0}, kFloat64), ones({2}, kFloat64));
  expect_close(g, {0, 0});
}

}  // namespace
}  // namespace mutagrad
