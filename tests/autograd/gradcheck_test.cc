// gradcheck itself: it passes correct formulas, catches a wrong one and names the worst
// element, and works from GoogleTest assertions.
#include "autograd/history.h"
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::leaf;

// A deliberately wrong backward: d(3x)/dx reported as 2 for every element but the last, 7.
class WrongTripleBackward final : public autograd::Node {
 public:
  const char* name() const override { return "WrongTripleBackward"; }
  VariableList apply(VariableList&& grads) override {
    Tensor g = grads[0] * 2.0;
    NoGradGuard guard;
    Tensor fix = zeros_like(g);
    fix.select(0, fix.size(0) - 1).fill_(5.0);
    return {g + fix * grads[0]};
  }
};

Tensor wrong_triple(const Tensor& x) {
  Tensor result;
  {
    NoGradGuard guard;
    result = x * 3.0;
  }
  if (autograd::compute_requires_grad(x)) {
    autograd::set_history(result, autograd::make_node<WrongTripleBackward>(x));
  }
  return result;
}

TEST(Gradcheck, PassesACorrectFunction) {
  autograd::GradcheckResult r = autograd::gradcheck(
      [](const VariableList& in) { return in[0] * in[1]; }, {leaf({3}, 1), leaf({3}, 2)});
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.report().empty());
}

TEST(Gradcheck, CatchesAWrongFormulaAndNamesTheWorstElement) {
  autograd::GradcheckResult r = autograd::gradcheck(
      [](const VariableList& in) { return wrong_triple(in[0]); }, {leaf({3}, 3)});
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(static_cast<bool>(r));
  const std::string& report = r.report();
  EXPECT_NE(report.find("output 0 with respect to input 0"), std::string::npos) << report;
  // The worst element is the last diagonal entry: analytic 7 vs numeric 3.
  EXPECT_NE(report.find("d output[2] / d input[2]"), std::string::npos) << report;
  EXPECT_NE(report.find("analytic 7"), std::string::npos) << report;
  EXPECT_NE(report.find("numeric 3"), std::string::npos) << report;
}

TEST(Gradcheck, ConvertsToAssertionResultWithTheReport) {
  ::testing::AssertionResult ok =
      autograd::gradcheck([](const VariableList& in) { return in[0].exp(); }, {leaf({2}, 4)});
  EXPECT_TRUE(ok);
  ::testing::AssertionResult bad = autograd::gradcheck(
      [](const VariableList& in) { return wrong_triple(in[0]); }, {leaf({2}, 5)});
  EXPECT_FALSE(bad);
  EXPECT_NE(std::string(bad.message()).find("Jacobian mismatch"), std::string::npos);
}

// y = x^2 whose backward uses x's value as a constant: right first derivative, but the
// gradient is not differentiable through x (second derivative 0 instead of 2).
class DetachedSquareBackward final : public autograd::Node {
 public:
  const char* name() const override { return "DetachedSquareBackward"; }
  VariableList apply(VariableList&& grads) override { return {grads[0] * (x_ * 2.0)}; }
  Tensor x_;
};

Tensor detached_square(const Tensor& x) {
  Tensor result;
  {
    NoGradGuard guard;
    result = x * x;
  }
  if (autograd::compute_requires_grad(x)) {
    auto node = autograd::make_node<DetachedSquareBackward>(x);
    node->x_ = x.detach();
    autograd::set_history(result, node);
  }
  return result;
}

TEST(Gradcheck, GradgradcheckCatchesAWrongSecondDerivative) {
  auto fn = [](const VariableList& in) { return detached_square(in[0]); };
  Tensor x = leaf({3}, 6);
  EXPECT_TRUE(autograd::gradcheck(fn, {x}));
  autograd::GradcheckResult r = autograd::gradgradcheck(fn, {x});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.report().find("gradgradcheck"), std::string::npos) << r.report();
  EXPECT_NE(r.report().find("with respect to input 0"), std::string::npos) << r.report();
}

TEST(Gradcheck, RequiresFloat64Inputs) {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  EXPECT_THROW(autograd::gradcheck([](const VariableList& in) { return in[0] * 2.0; }, {x}),
               ValueError);
}

TEST(Gradcheck, SeveralOutputsAndANonDifferentiableInput) {
  Tensor x = leaf({2, 2}, 8);
  Tensor mask = tensor({true, false});
  autograd::TensorFunction fn = [](const VariableList& in) {
    return VariableList{in[0].sum(0), in[0].masked_fill(in[1], 0.0), in[0] > 0.0};
  };
  EXPECT_TRUE(autograd::gradcheck(fn, {x, mask}));
  EXPECT_TRUE(autograd::gradgradcheck(fn, {x, mask}));
}

}  // namespace
}  // namespace mutagrad
