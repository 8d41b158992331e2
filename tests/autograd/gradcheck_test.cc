// gradcheck itself: it passes correct formulas, catches a wrong one and names the worst
// element, and works from GoogleTest assertions. Also forward mode's checks and transforms:
// check_forward_ad catches a wrong jvp, jacobian/hessian by forward mode equal hand-derived
// values and reverse mode through in-place writes into views, and make_dual's device check.
#include <sstream>

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

TEST(Gradcheck, RequiresFloat64InputsUnlessAskedNotTo) {
  Tensor x = testing_util::dev(tensor({1.0f, 2.0f})).requires_grad_();
  auto fn = [](const VariableList& in) { return in[0] * 2.0; };
  EXPECT_THROW(autograd::gradcheck(fn, {x}), ValueError);
  autograd::GradcheckOptions options;
  options.require_float64 = false;
  options.eps = 1e-3;
  options.atol = 1e-2;
  EXPECT_TRUE(autograd::gradcheck(fn, {x}, options));
}

TEST(Gradcheck, SeveralOutputsAndANonDifferentiableInput) {
  Tensor x = leaf({2, 2}, 8);
  Tensor mask = testing_util::dev(tensor({true, false}));
  autograd::TensorFunction fn = [](const VariableList& in) {
    return VariableList{in[0].sum(0), in[0].masked_fill(in[1], 0.0), in[0] > 0.0};
  };
  EXPECT_TRUE(autograd::gradcheck(fn, {x, mask}));
  EXPECT_TRUE(autograd::gradgradcheck(fn, {x, mask}));
}

// Custom Functions whose backward each flag exists to catch (tests/python/gradcheck_flags_test.py
// compares the same cases with torch 1.13).
using autograd::AutogradContext;
using autograd::Function;

// y = x * x.sum(); backward misses the x.sum() dependence (wrong off-diagonal Jacobian).
struct WrongOffDiagonal : Function<WrongOffDiagonal> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x.sum();
  }
  static VariableList backward(AutogradContext* ctx, VariableList grads) {
    return {grads[0] * ctx->get_saved_variables()[0].sum()};
  }
};

// Backward adds a tiny amount that changes on every call.
struct Nondeterministic : Function<Nondeterministic> {
  static int calls;
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static VariableList backward(AutogradContext*, VariableList grads) {
    ++calls;
    return {grads[0] * 2.0 + grads[0] * (1e-9 * calls)};
  }
};
int Nondeterministic::calls = 0;

// Gradients are not materialized; backward returns ones for an undefined one.
struct NonzeroOnUndefined : Function<NonzeroOnUndefined> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({x});
    return x * 3.0;
  }
  static VariableList backward(AutogradContext* ctx, VariableList grads) {
    if (!grads[0].defined()) return {ones_like(ctx->get_saved_variables()[0])};
    return {grads[0] * 3.0};
  }
};

// Gradients are not materialized; backward fails (a mutagrad Error) on an undefined one.
struct RejectsUndefined : Function<RejectsUndefined> {
  static VariableList forward(AutogradContext* ctx, const Tensor& x) {
    ctx->set_materialize_grads(false);
    return {x * 2.0, x * 3.0};
  }
  static VariableList backward(AutogradContext*, VariableList grads) {
    if (!grads[0].defined() || !grads[1].defined()) {
      throw ValueError("RejectsUndefined: undefined gradient");
    }
    return {grads[0] * 2.0 + grads[1] * 3.0};
  }
};

// One output, gradients not materialized; backward fails on an undefined one.
struct RejectsUndefinedSingle : Function<RejectsUndefinedSingle> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->set_materialize_grads(false);
    return x * 2.0;
  }
  static VariableList backward(AutogradContext*, VariableList grads) {
    if (!grads[0].defined()) throw ValueError("RejectsUndefinedSingle: undefined gradient");
    return {grads[0] * 2.0};
  }
};

// Right for every non-zero grad_output, but ones for a zero one (not a multiple of it).
struct OnesForZeroGrad : Function<OnesForZeroGrad> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 3.0; }
  static VariableList backward(AutogradContext*, VariableList grads) {
    for (double g : testing_util::values(grads[0])) {
      if (g != 0) return {grads[0] * 3.0};
    }
    return {ones_like(grads[0])};
  }
};

autograd::GradcheckOptions fast() {
  autograd::GradcheckOptions options;
  options.fast_mode = true;
  return options;
}

TEST(Gradcheck, FastModePassesCorrectFunctionsAndCatchesAWrongJacobian) {
  autograd::TensorFunction good = [](const VariableList& in) {
    return VariableList{in[0].matmul(in[1]).tanh(), (in[0] - in[1]).exp()};
  };
  EXPECT_TRUE(autograd::gradcheck(good, {leaf({2, 2}, 11), leaf({2, 2}, 12)}, fast()));
  autograd::TensorFunction wrong = [](const VariableList& in) {
    return VariableList{WrongOffDiagonal::apply(in[0])};
  };
  EXPECT_FALSE(autograd::gradcheck(wrong, {leaf({3}, 13)}).ok());
  autograd::GradcheckResult r = autograd::gradcheck(wrong, {leaf({3}, 13)}, fast());
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.report().find("fast mode"), std::string::npos) << r.report();
  EXPECT_NE(r.report().find("slow mode"), std::string::npos) << r.report();
  // A wrong diagonal element only (wrong_triple) is caught by fast mode too.
  EXPECT_FALSE(autograd::gradcheck([](const VariableList& in) { return wrong_triple(in[0]); },
                                   {leaf({3}, 14)}, fast())
                   .ok());
  EXPECT_TRUE(autograd::gradgradcheck(good, {leaf({2, 2}, 15), leaf({2, 2}, 16)}, fast()));
}

TEST(Gradcheck, NondetTolBoundsTwoRunsOfBackward) {
  autograd::TensorFunction fn = [](const VariableList& in) {
    return VariableList{Nondeterministic::apply(in[0])};
  };
  for (bool fast_mode : {false, true}) {
    autograd::GradcheckOptions options;
    options.fast_mode = fast_mode;
    autograd::GradcheckResult r = autograd::gradcheck(fn, {leaf({3}, 17)}, options);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.report().find("not reentrant"), std::string::npos) << r.report();
    options.nondet_tol = 1e-6;
    EXPECT_TRUE(autograd::gradcheck(fn, {leaf({3}, 17)}, options));
  }
}

TEST(Gradcheck, UndefinedOutputGradients) {
  autograd::TensorFunction nonzero = [](const VariableList& in) {
    return VariableList{NonzeroOnUndefined::apply(in[0])};
  };
  autograd::GradcheckResult r = autograd::gradcheck(nonzero, {leaf({3}, 18)});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.report().find("undefined or zero"), std::string::npos) << r.report();
  autograd::GradcheckOptions off;
  off.check_undefined_grad = false;
  EXPECT_TRUE(autograd::gradcheck(nonzero, {leaf({3}, 18)}, off));

  // A backward failing on an undefined gradient: a failed check naming it; in a plain
  // one-output backward of a two-output Function the other gradient is undefined too, and the
  // error propagates (torch raises there as well).
  autograd::TensorFunction rejects = [](const VariableList& in) {
    return VariableList{RejectsUndefined::apply(in[0])[0]};
  };
  EXPECT_THROW(autograd::gradcheck(rejects, {leaf({3}, 19)}), ValueError);
  autograd::TensorFunction both = [](const VariableList& in) {
    return RejectsUndefined::apply(in[0]);
  };
  EXPECT_THROW(autograd::gradcheck(both, {leaf({3}, 19)}, off), ValueError);
  autograd::TensorFunction single = [](const VariableList& in) {
    return VariableList{RejectsUndefinedSingle::apply(in[0])};
  };
  EXPECT_TRUE(autograd::gradcheck(single, {leaf({3}, 19)}, off));
  r = autograd::gradcheck(single, {leaf({3}, 19)});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.report().find("Expected backward function to handle undefined output grads"),
            std::string::npos)
      << r.report();
  // Reached through a built-in node too (torch's engine runs SumBackward0 with an undefined
  // gradient, and it passes an undefined one on).
  r = autograd::gradcheck(
      [](const VariableList& in) {
        return VariableList{RejectsUndefinedSingle::apply(in[0]).sum()};
      },
      {leaf({3}, 19)});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.report().find("Expected backward function to handle undefined output grads"),
            std::string::npos)
      << r.report();
}

TEST(Gradcheck, BackwardMustScaleWithGradOutput) {
  autograd::GradcheckResult r = autograd::gradcheck(
      [](const VariableList& in) { return VariableList{OnesForZeroGrad::apply(in[0])}; },
      {leaf({3}, 20)});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.report().find("backward not multiplied by grad_output"), std::string::npos)
      << r.report();
}

TEST(Gradcheck, BatchedGradAndGradDtypesPassCorrectFunctions) {
  autograd::GradcheckOptions options;
  options.check_batched_grad = true;
  options.check_grad_dtypes = true;
  autograd::TensorFunction fn = [](const VariableList& in) {
    return VariableList{in[0].sin() * in[1], in[0].sum()};
  };
  EXPECT_TRUE(autograd::gradcheck(fn, {leaf({2, 3}, 21), leaf({2, 3}, 22)}, options));
  EXPECT_TRUE(autograd::gradgradcheck(fn, {leaf({2, 3}, 21), leaf({2, 3}, 22)}, options));
}

TEST(Gradcheck, GradgradcheckUsesTheGivenGradOutputs) {
  // First order: g -> 3 g^2 (backward squares its grad_output), differentiated by the engine as
  // 6 g. With grad_output 0 the first-order function's derivative is 0 both numerically and
  // analytically; an explicit grad_output count mismatch is refused.
  auto fn = [](const VariableList& in) { return VariableList{in[0].sin()}; };
  Tensor x = leaf({3}, 23);
  Tensor v = testing_util::dev(tensor({1.0, -2.0, 0.5}, kFloat64)).requires_grad_();
  EXPECT_TRUE(autograd::gradgradcheck(fn, {x}, {v}));
  Tensor constant_v = testing_util::dev(tensor({1.0, -2.0, 0.5}, kFloat64));
  EXPECT_TRUE(autograd::gradgradcheck(fn, {x}, {constant_v}));
  EXPECT_THROW(autograd::gradgradcheck(fn, {x}, {v, v}), ValueError);
  autograd::GradcheckOptions non_contig;
  non_contig.gen_non_contig_grad_outputs = true;
  EXPECT_TRUE(autograd::gradgradcheck(
      [](const VariableList& in) { return VariableList{in[0].matmul(in[0]).tanh()}; },
      {leaf({2, 2}, 24)}, non_contig));
}

// ---- Forward mode (issue 40) -----------------------------------------------------------------

using testing_util::Cube;

TEST(Gradcheck, CheckForwardAdCatchesAWrongJvp) {
  autograd::GradcheckOptions fw;
  fw.check_forward_ad = true;
  const Tensor x = leaf({3}, 25, 0.5, 1.5);  // no zero: 2 x^2 and 3 x^2 differ everywhere
  auto right = [](const VariableList& in) { return Cube<false>::apply(in[0]); };
  auto wrong = [](const VariableList& in) { return Cube<true>::apply(in[0]); };
  EXPECT_TRUE(autograd::gradcheck(right, {x}, fw));
  // The backward is right, so only the forward-mode check can fail.
  EXPECT_TRUE(autograd::gradcheck(wrong, {x}));
  autograd::GradcheckResult r = autograd::gradcheck(wrong, {x}, fw);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.report().find("Forward-mode"), std::string::npos) << r.report();
  // Built-in ops through an in-place write into a view of an intermediate pass.
  EXPECT_TRUE(autograd::gradcheck(
      [](const VariableList& in) {
        Tensor y = in[0] * in[1];
        y.narrow(0, 1, 2).mul_(in[0].narrow(0, 0, 2));
        return y.exp();
      },
      {leaf({3}, 26), leaf({3}, 27)}, fw));
}

// f(x) = y with y = x * x, then y[1:3] *= x[0:2] (through a view of the intermediate y):
// y = (x0^2, x0 x1^2, x1 x2^2). Its Jacobian and the Hessian of sum(y), by hand.
Tensor square_then_shifted_product(const Tensor& x) {
  Tensor y = x * x;
  y.narrow(0, 1, 2).mul_(x.narrow(0, 0, 2));
  return y;
}

TEST(Gradcheck, ForwardModeJacobianAndHessianThroughViewWrites) {
  const Tensor x = leaf({3}, 28).detach();
  const std::vector<double> a = testing_util::values(x);
  autograd::TensorFunction f(
      [](const VariableList& in) { return square_then_shifted_product(in[0]); });
  const std::vector<double> jac = {2 * a[0], 0, 0,           a[1] * a[1],    2 * a[0] * a[1],
                                   0,        0, a[2] * a[2], 2 * a[1] * a[2]};
  // Each strategy gives the hand-derived 3x3 matrix on the inputs' device.
  auto expect_both = [&](auto compute, const std::vector<double>& want) {
    for (auto strategy :
         {autograd::JacobianStrategy::kForwardMode, autograd::JacobianStrategy::kReverseMode}) {
      const Tensor m = compute(strategy);
      EXPECT_EQ(m.device(), x.device());
      ASSERT_TRUE(m.sizes().equals({3, 3})) << m.sizes();
      testing_util::expect_close(m, want, 1e-12);
    }
  };
  expect_both([&](auto strategy) { return autograd::jacobian(f, {x}, false, strategy)[0][0]; },
              jac);

  autograd::TensorFunction s(
      [](const VariableList& in) { return square_then_shifted_product(in[0]).sum(); });
  const std::vector<double> hess = {2,        2 * a[1], 0,        2 * a[1], 2 * a[0],
                                    2 * a[2], 0,        2 * a[2], 2 * a[1]};
  expect_both([&](auto strategy) { return autograd::hessian(s, {x}, false, strategy)[0][0]; },
              hess);

  // Two inputs (blocks [i][j]) and a column-major intermediate: forward == reverse mode.
  autograd::TensorFunction g([](const VariableList& in) {
    Tensor y = in[0].mm(in[1]).t().contiguous().t();  // 2x2, column-major
    y.select(1, 0).add_(in[0].select(1, 1).sin());
    return (y * y).sum() + in[1].exp().sum();
  });
  const VariableList xs = {leaf({2, 3}, 29).detach(), leaf({3, 2}, 30).detach()};
  const auto hfs = autograd::hessian(g, xs, false, autograd::JacobianStrategy::kForwardMode);
  const auto hrs = autograd::hessian(g, xs, false, autograd::JacobianStrategy::kReverseMode);
  const auto jfs = autograd::jacobian(g, xs, false, autograd::JacobianStrategy::kForwardMode);
  const auto jrs = autograd::jacobian(g, xs, false, autograd::JacobianStrategy::kReverseMode);
  for (size_t i = 0; i < 2; ++i) {
    testing_util::expect_close(jfs[0][i], testing_util::values(jrs[0][i]), 1e-12);
    for (size_t j = 0; j < 2; ++j) {
      ASSERT_EQ(hfs[i][j].sizes(), hrs[i][j].sizes());
      testing_util::expect_close(hfs[i][j], testing_util::values(hrs[i][j]), 1e-12);
    }
  }
}

TEST(Gradcheck, MakeDualRefusesATangentOnAnotherDevice) {
  Device other = kCPU;
  if (testing_device::test_device().is_cpu()) {
    if (!cuda::is_available()) GTEST_SKIP() << "needs a CUDA device: the _cuda twin runs it";
    other = Device(DeviceType::CUDA, 0);
  }
  const Tensor x = leaf({3}, 31).detach();
  const Tensor t = ones({3}, TensorOptions(kFloat64).device(other));
  const uint32_t x_version = x.version(), t_version = t.version();
  forward_ad::dual_level level;
  const std::string msg = testing_util::error_of<DeviceError>([&] { forward_ad::make_dual(x, t); });
  std::ostringstream primal_device, tangent_device;
  primal_device << x.device();
  tangent_device << other;
  EXPECT_NE(msg.find(primal_device.str()), std::string::npos) << msg;
  EXPECT_NE(msg.find(tangent_device.str()), std::string::npos) << msg;
  EXPECT_EQ(x.version(), x_version);
  EXPECT_EQ(t.version(), t_version);
  EXPECT_FALSE(forward_ad::unpack_dual(x).tangent.defined());
  EXPECT_FALSE(forward_ad::unpack_dual(t).tangent.defined());
  testing_util::expect_close(t, {1, 1, 1}, 0);
}

}  // namespace
}  // namespace mutagrad
