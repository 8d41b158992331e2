// The engine: backward through small graphs with hand-derived gradients, accumulation,
// broadcasting reduction, retain_graph, retain_grad, no_grad, create_graph.
#include <gtest/gtest.h>

#include "mutagrad.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;

std::vector<double> values(const Tensor& t) {
  Tensor c = t.contiguous().to(kFloat64);
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

TEST(Engine, MulSumGradients) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor w = tensor({4.0, 5.0, 6.0}, kFloat64).requires_grad_();
  Tensor loss = (x * w).sum();
  EXPECT_EQ(loss.grad_fn()->name(), std::string("SumBackward0"));
  loss.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1, 2, 3}));
}

TEST(Engine, GradientsAccumulateOverTwoBackwardCalls) {
  Tensor x = tensor({1.0, -2.0}, kFloat64).requires_grad_();
  (x * x).sum().backward();
  (x * x).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{4, -8}));
}

TEST(Engine, DiamondSumsBothPaths) {
  Tensor x = tensor({3.0}, kFloat64).requires_grad_();
  Tensor a = x * 2.0;
  Tensor b = x.exp();
  (a + b).sum().backward();
  EXPECT_NEAR(values(x.grad())[0], 2.0 + std::exp(3.0), 1e-12);
}

TEST(Engine, BroadcastGradientIsReducedToInputShape) {
  Tensor x = ones({2, 3}, kFloat64).requires_grad_();
  Tensor b = tensor({{1.0}, {2.0}}, kFloat64).requires_grad_();      // [2, 1]
  Tensor c = tensor({10.0, 20.0, 30.0}, kFloat64).requires_grad_();  // [3]
  ((x * b) + c).sum().backward();
  EXPECT_EQ(b.grad().sizes(), IntArrayRef({2, 1}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{3, 3}));
  EXPECT_EQ(values(c.grad()), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 1, 1, 2, 2, 2}));
}

TEST(Engine, MixedDtypeGradientIsCastToInputDtype) {
  Tensor x = tensor({1.0, 2.0}, kFloat32).requires_grad_();
  Tensor y = tensor({3.0, 4.0}, kFloat64).requires_grad_();
  (x * y).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  EXPECT_EQ(y.grad().dtype(), kFloat64);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3, 4}));
}

TEST(Engine, BackwardTwiceWithoutRetainGraphRaisesPyTorchsHint) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor loss = (x.exp() * x).sum();
  loss.backward();
  try {
    loss.backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Specify retain_graph=True"), std::string::npos);
  }
}

TEST(Engine, BackwardTwiceWithRetainGraphAccumulates) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor loss = (x * x).sum();
  loss.backward(Tensor(), /*retain_graph=*/true);
  loss.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{4, 8}));
}

TEST(Engine, NodesWithoutSavedTensorsCanRunTwice) {
  // As PyTorch: only unpacking a freed saved tensor raises.
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor loss = (x + 1.0).sum();
  loss.backward();
  loss.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 2}));
}

TEST(Engine, NoGradRecordsNothing) {
  Tensor x = tensor({1.0}, kFloat64).requires_grad_();
  Tensor y;
  {
    NoGradGuard guard;
    EXPECT_FALSE(GradMode::is_enabled());
    y = x * 2.0;
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
  {
    NoGradGuard off;
    EnableGradGuard on;
    EXPECT_TRUE((x * 2.0).requires_grad());
  }
}

TEST(Engine, RetainGradKeepsNonLeafGradient) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor h = x * 3.0;
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  Tensor other = x * 5.0;
  (h * h).sum().backward();
  EXPECT_EQ(values(h.grad()), (std::vector<double>{6, 12}));   // 2h
  EXPECT_EQ(values(x.grad()), (std::vector<double>{18, 36}));  // 18x
  EXPECT_FALSE(other.grad().defined());
}

TEST(Engine, RootThatDoesNotRequireGradIsAnError) {
  Tensor x = tensor({1.0}, kFloat64);
  EXPECT_THROW((x * 2.0).sum().backward(), AutogradError);
}

TEST(Engine, NonScalarRootNeedsGradient) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  EXPECT_THROW((x * 2.0).backward(), AutogradError);
  (x * 2.0).backward(tensor({1.0, 10.0}, kFloat64));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 20}));
}

TEST(Engine, CreateGraphGivesSecondDerivative) {
  Tensor x = tensor({2.0}, kFloat64).requires_grad_();
  Tensor y = x * x * x;  // y' = 3x^2 = 12, y'' = 6x = 12
  auto g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(values(g[0]), (std::vector<double>{12}));
  ASSERT_TRUE(g[0].requires_grad());
  auto gg = autograd::grad({g[0]}, {x});
  EXPECT_EQ(values(gg[0]), (std::vector<double>{12}));
  EXPECT_FALSE(x.grad().defined());  // grad() does not accumulate
}

TEST(Engine, CreateGraphBackwardLeavesNoReferenceCycle) {
  // x.grad() keeps a graph that reaches x's AccumulateGrad; that node holds x weakly.
  std::weak_ptr<TensorImpl> weak_x;
  std::weak_ptr<autograd::Node> weak_fn;
  {
    Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
    (x * x * x).sum().backward(Tensor(), std::nullopt, /*create_graph=*/true);
    ASSERT_TRUE(x.grad().requires_grad());
    EXPECT_EQ(values(x.grad()), (std::vector<double>{3, 12}));
    weak_x = x.impl_ptr();
    weak_fn = x.grad().grad_fn();
  }
  EXPECT_TRUE(weak_x.expired());
  EXPECT_TRUE(weak_fn.expired());
}

TEST(Engine, GradWithUnusedInput) {
  Tensor x = tensor({1.0}, kFloat64).requires_grad_();
  Tensor z = tensor({1.0}, kFloat64).requires_grad_();
  Tensor y = (x * 2.0).sum();
  EXPECT_THROW(autograd::grad({y}, {x, z}, {}, true), AutogradError);
  auto g = autograd::grad({y}, {x, z}, {}, true, false, /*allow_unused=*/true);
  EXPECT_EQ(values(g[0]), (std::vector<double>{2}));
  EXPECT_FALSE(g[1].defined());
}

TEST(Engine, BackwardWithInputsOnlyAccumulatesThere) {
  Tensor x = tensor({1.0}, kFloat64).requires_grad_();
  Tensor w = tensor({3.0}, kFloat64).requires_grad_();
  Tensor h = x * w;
  autograd::backward({(h * h).sum()}, {}, std::nullopt, false, {w, h});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_EQ(values(w.grad()), (std::vector<double>{6}));  // 2 h x
  EXPECT_EQ(values(h.grad()), (std::vector<double>{6}));  // 2 h
}

TEST(Engine, LongChainDoesNotOverflowTheStack) {
  Tensor x = tensor({1.0}, kFloat64).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 200000; ++i) y = y + 0.0;
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1}));
  y = Tensor();  // releasing the chain must not recurse either
}

TEST(Engine, ExecutionOrderIsDeterministic) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  auto build = [&] { return ((x * 2.0).exp() + x.sin() * x.cos()).sum(); };
  build().backward();
  std::vector<double> first = values(x.grad());
  for (int i = 0; i < 5; ++i) {
    x.set_grad(Tensor());
    build().backward();
    EXPECT_EQ(values(x.grad()), first);  // bitwise: same order of accumulation
  }
}

}  // namespace
}  // namespace mutagrad
