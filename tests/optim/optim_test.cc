// optim/: each optimizer against values derived by hand from torch.optim 1.13's formulas for
// 2-3 steps, one version bump per parameter per step, state_dict round trips, the stale-tensor
// error naming the step and this file's line, and bad input that changes nothing.
#include "optim/optim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "mutagrad.h"

namespace mutagrad {
namespace {

Tensor vec(const std::vector<double>& v) {
  Tensor t = zeros({static_cast<int64_t>(v.size())}, TensorOptions(kFloat64));
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t;
}

Tensor param(const std::vector<double>& v) { return vec(v).requires_grad_(); }

void set_grad(const Tensor& p, const std::vector<double>& g) { p.set_grad(vec(g)); }

std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-14) {
  std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "element " << i;
  }
}

template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

TEST(SGD, PlainStepIsLrTimesGrad) {
  Tensor p = param({1.0, -2.0});
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  set_grad(p, {0.5, 1.0});
  opt.step();
  expect_values(p, {1.0 - 0.05, -2.0 - 0.1});
  EXPECT_EQ(p.version(), 1u);
}

TEST(SGD, MomentumDampeningWeightDecay) {
  // g' = g + wd p; buf1 = g'1; buf_t = m buf + (1 - d) g'; p -= lr buf.
  const double lr = 0.1, m = 0.9, d = 0.2, wd = 0.01;
  Tensor p = param({1.0});
  optim::SGD opt({p}, optim::SGDOptions(lr).momentum(m).dampening(d).weight_decay(wd));
  double pv = 1.0, buf = 0.0;
  const double grads[3] = {0.5, -0.25, 2.0};
  for (int t = 0; t < 3; ++t) {
    set_grad(p, {grads[t]});
    opt.step();
    const double g = grads[t] + wd * pv;
    buf = t == 0 ? g : m * buf + (1 - d) * g;
    pv -= lr * buf;
    expect_values(p, {pv});
  }
  EXPECT_EQ(p.version(), 3u);
}

TEST(SGD, NesterovAndMaximize) {
  const double lr = 0.05, m = 0.5;
  Tensor p = param({2.0});
  optim::SGD opt({p}, optim::SGDOptions(lr).momentum(m).nesterov(true).maximize(true));
  double pv = 2.0, buf = 0.0;
  const double grads[2] = {1.0, 3.0};
  for (int t = 0; t < 2; ++t) {
    set_grad(p, {grads[t]});
    opt.step();
    const double g = -grads[t];
    buf = t == 0 ? g : m * buf + g;
    pv -= lr * (g + m * buf);
    expect_values(p, {pv});
  }
}

// Adam/AdamW by hand: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; vmax = max(vmax, v);
// p -= lr / (1 - b1^t) * m / (sqrt(v or vmax) / sqrt(1 - b2^t) + eps).
struct AdamRef {
  double lr, b1, b2, eps, wd;
  bool amsgrad, decoupled;
  double p, m = 0, v = 0, vmax = 0;
  int t = 0;
  void step(double g) {
    ++t;
    if (decoupled) {
      p *= 1 - lr * wd;
    } else {
      g += wd * p;
    }
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    vmax = std::max(vmax, v);
    const double denom = std::sqrt(amsgrad ? vmax : v) / std::sqrt(1 - std::pow(b2, t)) + eps;
    p -= lr / (1 - std::pow(b1, t)) * m / denom;
  }
};

TEST(Adam, ThreeStepsWithWeightDecayAndAmsgrad) {
  for (bool amsgrad : {false, true}) {
    Tensor p = param({0.7});
    optim::Adam opt({p},
                    optim::AdamOptions(0.01).betas({0.8, 0.9}).weight_decay(0.1).amsgrad(amsgrad));
    AdamRef ref{0.01, 0.8, 0.9, 1e-8, 0.1, amsgrad, false, 0.7};
    for (double g : {1.0, -3.0, 0.5}) {
      set_grad(p, {g});
      opt.step();
      ref.step(g);
      expect_values(p, {ref.p});
    }
    EXPECT_EQ(p.version(), 3u);
    EXPECT_EQ(opt.state(p).count("max_exp_avg_sq"), amsgrad ? 1u : 0u);
    EXPECT_EQ(opt.state(p)["step"].item<double>(), 3.0);
  }
}

TEST(AdamW, DecoupledDecayIsOneWrite) {
  Tensor p = param({0.7, -1.2});
  optim::AdamW opt({p}, optim::AdamWOptions(0.01).weight_decay(0.5));
  AdamRef r0{0.01, 0.9, 0.999, 1e-8, 0.5, false, true, 0.7};
  AdamRef r1{0.01, 0.9, 0.999, 1e-8, 0.5, false, true, -1.2};
  const double grads[3][2] = {{1.0, 2.0}, {-3.0, 0.1}, {0.5, 0.5}};
  for (const auto& g : grads) {
    set_grad(p, {g[0], g[1]});
    opt.step();
    r0.step(g[0]);
    r1.step(g[1]);
    expect_values(p, {r0.p, r1.p});
  }
  EXPECT_EQ(p.version(), 3u);  // decay and update: one bump per step
  EXPECT_EQ(optim::AdamWOptions().weight_decay(), 1e-2);
}

TEST(RMSprop, CenteredWithMomentum) {
  const double lr = 0.01, a = 0.9, eps = 1e-8, m = 0.5, wd = 0.1;
  for (bool centered : {false, true}) {
    Tensor p = param({1.5});
    optim::RMSprop opt(
        {p}, optim::RMSpropOptions(lr).alpha(a).momentum(m).centered(centered).weight_decay(wd));
    double pv = 1.5, sq = 0, ga = 0, buf = 0;
    for (double g0 : {1.0, -2.0, 0.25}) {
      set_grad(p, {g0});
      opt.step();
      const double g = g0 + wd * pv;
      sq = a * sq + (1 - a) * g * g;
      ga = a * ga + (1 - a) * g;
      const double avg = std::sqrt(centered ? sq - ga * ga : sq) + eps;
      buf = m * buf + g / avg;
      pv -= lr * buf;
      expect_values(p, {pv}, 1e-13);
    }
    EXPECT_EQ(p.version(), 3u);
  }
}

TEST(RMSprop, NoMomentumIsAddcdiv) {
  Tensor p = param({1.0});
  optim::RMSprop opt({p}, optim::RMSpropOptions(0.1).maximize(true));
  set_grad(p, {2.0});
  opt.step();
  const double sq = 0.01 * 4.0;
  expect_values(p, {1.0 + 0.1 * 2.0 / (std::sqrt(sq) + 1e-8)});
}

TEST(Optimizer, ParamGroupsHaveTheirOwnOptions) {
  Tensor a = param({1.0});
  Tensor b = param({1.0});
  Tensor frozen = param({1.0});
  std::vector<optim::ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b, frozen}, optim::SGDOptions(1.0));
  optim::SGD opt(groups, optim::SGDOptions(0.1));
  set_grad(a, {1.0});
  set_grad(b, {1.0});
  opt.step();
  expect_values(a, {0.9});
  expect_values(b, {0.0});
  expect_values(frozen, {1.0});  // no grad: skipped, not bumped
  EXPECT_EQ(frozen.version(), 0u);
  opt.param_groups()[0].options().set_lr(0.5);  // a scheduler's write
  opt.step();
  expect_values(a, {0.4});
}

TEST(Optimizer, ZeroGrad) {
  Tensor p = param({1.0, 2.0});
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  set_grad(p, {3.0, 4.0});
  Tensor g = p.grad();
  opt.zero_grad(/*set_to_none=*/false);
  expect_values(g, {0.0, 0.0});
  EXPECT_TRUE(p.grad().is_same(g));
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
}

TEST(Optimizer, StateDictRoundTrip) {
  Tensor p1 = param({0.5, -0.5});
  Tensor q1 = param({0.5, -0.5});
  optim::Adam a1({p1}, optim::AdamOptions(0.1).amsgrad(true));
  set_grad(p1, {1.0, -2.0});
  a1.step();
  set_grad(p1, {0.3, 0.2});
  a1.step();
  optim::StateDict saved = a1.state_dict();
  ASSERT_EQ(saved.state.count(0), 1u);
  EXPECT_EQ(saved.param_groups[0].options.at("amsgrad"), 1.0);
  EXPECT_EQ(saved.param_groups[0].options.at("lr"), 0.1);

  q1.detach().copy_(p1.detach());
  optim::Adam a2({q1}, optim::AdamOptions(0.5));
  a2.load_state_dict(saved);
  EXPECT_EQ(a2.param_groups()[0].options().get_lr(), 0.1);
  for (double g : {0.7, -0.1, 2.0}) {
    set_grad(p1, {g, g});
    set_grad(q1, {g, g});
    a1.step();
    a2.step();
    expect_values(q1, values(p1), 0.0);
  }
  // The snapshot did not move with the later steps.
  EXPECT_EQ(saved.state[0]["step"].item<double>(), 2.0);

  optim::SGD other({param({1.0}), param({2.0})}, optim::SGDOptions(0.1));
  optim::StateDict two = other.state_dict();
  EXPECT_NE(error_of<ValueError>([&] { a2.load_state_dict(two); }).find("doesn't match"),
            std::string::npos);
}

TEST(Optimizer, StepBetweenForwardAndBackwardNamesTheStepAndLine) {
  Tensor w = param({1.0, 2.0});
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  Tensor loss = (w * w).sum();  // MulBackward0 saves w
  set_grad(w, {1.0, 1.0});
  const int line = __LINE__ + 1;
  opt.step();
  const std::string msg = error_of<autograd::AutogradError>([&] { loss.backward(); });
  EXPECT_NE(msg.find("The first in-place write after it was saved is SGD.step at "),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(std::string("optim_test.cc:") + std::to_string(line)), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("MulBackward0"), std::string::npos) << msg;

  Tensor v = param({1.0});
  optim::AdamW adamw({v}, optim::AdamWOptions(0.1));
  Tensor y = (v * v).sum();
  set_grad(v, {1.0});
  adamw.step();
  EXPECT_NE(error_of<autograd::AutogradError>([&] { y.backward(); }).find("AdamW.step"),
            std::string::npos);
}

TEST(Optimizer, BadInputChangesNothing) {
  Tensor a = param({1.0});
  Tensor b = param({1.0, 2.0});
  std::vector<optim::ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b});
  optim::SGD opt(groups, optim::SGDOptions(0.1).momentum(0.9));
  set_grad(a, {1.0});
  set_grad(b, {1.0, 1.0});
  opt.step();
  // A bad option in the second group: the first group is not stepped either.
  opt.param_groups()[1].options().set_lr(-0.5);
  EXPECT_NE(error_of<ValueError>([&] { opt.step(); }).find("invalid lr value: -0.5"),
            std::string::npos);
  EXPECT_EQ(a.version(), 1u);
  EXPECT_EQ(b.version(), 1u);
  EXPECT_EQ(opt.state(a)["momentum_buffer"].version(), 0u);
  EXPECT_NE(error_of<ValueError>([&] {
              opt.param_groups()[0].options().set("momentun", 1);
            }).find("unknown option 'momentun'"),
            std::string::npos);

  EXPECT_NE(error_of<ValueError>([] {
              optim::SGD({param({1.0})}, optim::SGDOptions(-1));
            }).find("invalid lr value: -1"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([] {
              optim::SGD({param({1.0})}, optim::SGDOptions(0.1).nesterov(true));
            }).find("Nesterov"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([] {
              optim::Adam({param({1.0})}, optim::AdamOptions().betas({0.9, 1.0}));
            }).find("beta2"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              optim::SGD({a, a}, optim::SGDOptions(0.1));
            }).find("more than once"),
            std::string::npos);
  Tensor nonleaf = a * 2.0;
  EXPECT_NE(
      error_of<ValueError>([&] { optim::SGD({nonleaf}, optim::SGDOptions(0.1)); }).find("non-leaf"),
      std::string::npos);
  std::vector<optim::ParamGroup> mixed;
  mixed.emplace_back(std::vector<Tensor>{param({1.0})}, optim::AdamOptions());
  EXPECT_NE(error_of<ValueError>([&] {
              optim::SGD(mixed, optim::SGDOptions(0.1));
            }).find("options of another optimizer"),
            std::string::npos);
}

TEST(ClipGrad, NormAndValue) {
  Tensor a = param({0.0, 0.0});
  Tensor b = param({0.0});
  Tensor c = param({0.0});  // no grad: ignored
  set_grad(a, {3.0, 0.0});
  set_grad(b, {4.0});
  Tensor total = optim::clip_grad_norm_({a, b, c}, 1.0);
  EXPECT_DOUBLE_EQ(total.item<double>(), 5.0);
  const double coef = 1.0 / (5.0 + 1e-6);
  expect_values(a.grad(), {3.0 * coef, 0.0});
  expect_values(b.grad(), {4.0 * coef});

  set_grad(a, {3.0, -7.0});
  set_grad(b, {4.0});
  Tensor inf = optim::clip_grad_norm_({a, b}, 14.0, INFINITY);
  EXPECT_DOUBLE_EQ(inf.item<double>(), 7.0);
  expect_values(a.grad(), {3.0, -7.0});  // under max_norm: scaled by 1

  set_grad(a, {3.0, -7.0});
  optim::clip_grad_value_({a, b, c}, 3.5);
  expect_values(a.grad(), {3.0, -3.5});
  expect_values(b.grad(), {3.5});

  set_grad(a, {NAN, 1.0});
  EXPECT_NE(
      error_of<ValueError>([&] { optim::clip_grad_norm_({a}, 1.0, 2.0, true); }).find("non-finite"),
      std::string::npos);
  EXPECT_EQ(a.grad().version(), 0u);
}

}  // namespace
}  // namespace mutagrad
