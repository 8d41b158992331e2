// optim/lr_scheduler.h: each schedule's lrs over 50 steps against its closed form (derived by
// hand from torch 1.13's documentation; the chainable recurrences agree to rounding) and bit for
// bit against torch 1.13's sequences (torch_lr_sequences.inc, generated with torch), the
// composition rules of SequentialLR and initial_lr, OneCycleLR's momentum, ReduceLROnPlateau's
// patience and cooldown, state_dict round trips and bad arguments.
// tests/python/lr_scheduler_test.py compares the Python schedulers with torch 1.13's.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mutagrad.h"
#include "optim/optim.h"

namespace mutagrad {
namespace {

constexpr double kPi = 3.14159265358979323846;

#include "tests/optim/torch_lr_sequences.inc"

Tensor param() { return zeros({2}, TensorOptions(kFloat64)).requires_grad_(); }

std::vector<optim::ParamGroup> two_groups() {
  std::vector<optim::ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{param()});
  groups.emplace_back(std::vector<Tensor>{param()}, optim::SGDOptions(0.5).momentum(0.9));
  return groups;
}

// Steps `sched` 50 times; before each step (and after the last) the groups' lrs must be
// want(epoch, base_lr) for each group's base lr.
template <typename Scheduler>
void expect_schedule(optim::Optimizer& opt, Scheduler& sched,
                     const std::function<double(int64_t, double)>& want,
                     const std::vector<double>& base = {0.1, 0.5}) {
  for (int64_t epoch = 0; epoch <= 50; ++epoch) {
    ASSERT_EQ(sched.last_epoch(), epoch);
    for (size_t g = 0; g < base.size(); ++g) {
      const double expected = want(epoch, base[g]);
      const double got = opt.param_groups()[g].options().get_lr();
      EXPECT_NEAR(got, expected, 1e-12 * std::max(1.0, std::abs(expected)))
          << "epoch " << epoch << " group " << g;
      EXPECT_EQ(sched.get_last_lr()[g], got);
    }
    if (epoch < 50) sched.step();
  }
}

TEST(LRScheduler, StepLR) {
  for (auto [step_size, gamma] : {std::pair{10, 0.1}, {3, 0.5}, {1, 0.9}}) {
    optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
    optim::StepLR sched(opt, step_size, gamma);
    expect_schedule(opt, sched, [&](int64_t e, double b) {
      return b * std::pow(gamma, static_cast<double>(e / step_size));
    });
  }
}

TEST(LRScheduler, MultiStepLRCountsRepeatedMilestones) {
  optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
  optim::MultiStepLR sched(opt, {30, 5, 20, 20}, 0.5);
  expect_schedule(opt, sched, [](int64_t e, double b) {
    const int passed = (e >= 5) + 2 * (e >= 20) + (e >= 30);
    return b * std::pow(0.5, passed);
  });
}

TEST(LRScheduler, ExponentialLR) {
  optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
  optim::ExponentialLR sched(opt, 0.93);
  expect_schedule(opt, sched,
                  [](int64_t e, double b) { return b * std::pow(0.93, static_cast<double>(e)); });
}

TEST(LRScheduler, CosineAnnealingLRKeepsGoingPastTMax) {
  for (auto [T, lo] : {std::pair{10, 0.0}, {7, 0.01}, {50, 0.001}}) {
    optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
    optim::CosineAnnealingLR sched(opt, T, lo);
    expect_schedule(opt, sched, [&](int64_t e, double b) {
      return lo + (b - lo) * (1 + std::cos(kPi * static_cast<double>(e) / T)) / 2;
    });
  }
}

TEST(LRScheduler, LinearLR) {
  for (auto [start, end, iters] : {std::tuple{1.0 / 3, 1.0, 5}, {1.0, 0.1, 20}, {0.5, 0.5, 3}}) {
    optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
    optim::LinearLR sched(opt, start, end, iters);
    expect_schedule(opt, sched, [&](int64_t e, double b) {
      return b * (start + (end - start) * static_cast<double>(std::min<int64_t>(e, iters)) / iters);
    });
  }
  optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
  EXPECT_THROW(optim::LinearLR(opt, 1.5), ValueError);
  EXPECT_THROW(optim::LinearLR(opt, 0.5, -0.1), ValueError);
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);  // nothing changed
}

TEST(LRScheduler, LambdaLRPerGroup) {
  optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
  optim::LambdaLR sched(opt, std::vector<optim::LambdaLR::Lambda>{
                                 [](int64_t e) { return 1.0 / (1 + e); },
                                 [](int64_t e) { return std::pow(0.95, static_cast<double>(e)); }});
  expect_schedule(opt, sched, [](int64_t e, double b) {
    return b == 0.1 ? b / (1 + e) : b * std::pow(0.95, static_cast<double>(e));
  });
  EXPECT_THROW(
      optim::LambdaLR(opt, std::vector<optim::LambdaLR::Lambda>{[](int64_t) { return 1.0; }}),
      ValueError);
}

TEST(LRScheduler, SequentialLRWarmupThenCosine) {
  optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
  auto warmup = std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 5);
  // Built after the warmup changed the lr: its base is the group's initial_lr nonetheless.
  auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, 45);
  EXPECT_EQ(cosine->base_lrs(), (std::vector<double>{0.1, 0.5}));
  optim::SequentialLR sched(opt, {warmup, cosine}, {5});
  expect_schedule(opt, sched, [](int64_t e, double b) {
    if (e < 5) return b * (0.1 + 0.9 * e / 5.0);
    return b * (1 + std::cos(kPi * static_cast<double>(e - 5) / 45)) / 2;
  });
  EXPECT_THROW(optim::SequentialLR(opt, {warmup, cosine}, {5, 10}), ValueError);
}

TEST(LRScheduler, OneCycleLRCyclesLrAndMomentum) {
  for (bool three_phase : {false, true}) {
    optim::SGD opt(two_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::OneCycleOptions o;
    o.three_phase = three_phase;
    o.pct_start = 0.25;
    optim::OneCycleLR sched(opt, {1.0, 2.0}, 50, o);
    auto anneal = [](double a, double b, double pct) {
      return b + (a - b) / 2.0 * (std::cos(kPi * pct) + 1);
    };
    for (int64_t e = 0; e < 50; ++e) {
      for (size_t g = 0; g < 2; ++g) {
        const double max_lr = g == 0 ? 1.0 : 2.0;
        const double initial = max_lr / 25, min_lr = initial / 1e4;
        const double up = 0.25 * 50 - 1;
        double lr, momentum;
        if (e <= up) {
          lr = anneal(initial, max_lr, e / up);
          momentum = anneal(0.95, 0.85, e / up);
        } else if (!three_phase) {
          lr = anneal(max_lr, min_lr, (e - up) / (49 - up));
          momentum = anneal(0.85, 0.95, (e - up) / (49 - up));
        } else if (e <= 2 * up) {
          lr = anneal(max_lr, initial, (e - up) / up);
          momentum = anneal(0.85, 0.95, (e - up) / up);
        } else {
          lr = anneal(initial, min_lr, (e - 2 * up) / (49 - 2 * up));
          momentum = 0.95;
        }
        const auto& options = opt.param_groups()[g].options();
        EXPECT_NEAR(options.get_lr(), lr, 1e-12) << e << " " << g;
        EXPECT_NEAR(options.to_map().at("momentum"), momentum, 1e-12) << e << " " << g;
      }
      sched.step();
    }
    EXPECT_THROW(sched.step(), ValueError);  // step 51 of 50
  }
  optim::Adam adam({param()}, optim::AdamOptions(1e-3));
  optim::OneCycleLR sched(adam, 0.01, 10);
  EXPECT_EQ(adam.param_groups()[0].options().to_map().at("beta1"), 0.95);
  optim::RMSprop rms({param()}, optim::RMSpropOptions());
  EXPECT_NO_THROW(optim::OneCycleLR(rms, 0.01, 10));
  optim::Adagrad adagrad({param()}, optim::AdagradOptions());
  EXPECT_THROW(optim::OneCycleLR(adagrad, 0.01, 10), ValueError);
  EXPECT_THROW(optim::OneCycleLR(rms, 0.01, 0), ValueError);
}

TEST(LRScheduler, ReduceLROnPlateauPatienceAndCooldown) {
  optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
  optim::PlateauOptions o;
  o.patience = 2;
  o.cooldown = 1;
  o.min_lrs = {0.05, 0.0};
  optim::ReduceLROnPlateau sched(opt, o);
  // epochs:   1    2    3    4    5    6    7    8    9
  const std::vector<double> metric = {1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95};
  // Reductions after 3 bad epochs (epoch 5), cooldown 1 (epoch 6 ignored), then 3 bad: epoch 9.
  const std::vector<double> lr0 = {0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05};
  const std::vector<double> lr1 = {0.5, 0.5, 0.5, 0.5, 0.05, 0.05, 0.05, 0.05, 0.005};
  for (size_t i = 0; i < metric.size(); ++i) {
    sched.step(metric[i]);
    EXPECT_NEAR(opt.param_groups()[0].options().get_lr(), lr0[i], 1e-15) << i;
    EXPECT_NEAR(opt.param_groups()[1].options().get_lr(), lr1[i], 1e-15) << i;
  }
  EXPECT_EQ(sched.best(), 0.9);
  optim::SchedulerState saved = sched.state_dict();
  optim::ReduceLROnPlateau other(opt, o);
  other.load_state_dict(saved);
  EXPECT_EQ(other.best(), 0.9);
  EXPECT_EQ(other.last_epoch(), 9);
  optim::PlateauOptions bad;
  bad.factor = 1.0;
  EXPECT_THROW(optim::ReduceLROnPlateau(opt, bad), ValueError);
}

TEST(LRScheduler, StateDictRoundTripAndClosedForm) {
  optim::SGD a(two_groups(), optim::SGDOptions(0.1));
  optim::SGD b(two_groups(), optim::SGDOptions(0.1));
  optim::StepLR sa(a, 3, 0.5);
  optim::StepLR sb(b, 3, 0.5);
  for (int i = 0; i < 7; ++i) sa.step();
  sb.load_state_dict(sa.state_dict());
  sb.step(sa.last_epoch());  // the closed form puts b's lrs where a's are
  sa.step();
  sb.step();
  EXPECT_EQ(sb.last_epoch(), 8);
  EXPECT_EQ(sb.get_last_lr(), sa.get_last_lr());
  EXPECT_NEAR(sb.get_last_lr()[0], 0.1 * 0.25, 1e-15);
  // Resuming needs initial_lr on every group.
  optim::SGD fresh({param()}, optim::SGDOptions(0.1));
  EXPECT_THROW(optim::StepLR(fresh, 3, 0.5, /*last_epoch=*/4), ValueError);
}

TEST(LRScheduler, TheOptimizerStepsWithTheScheduledLr) {
  Tensor p = param();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  optim::StepLR sched(opt, 1, 0.5);
  for (int i = 0; i < 3; ++i) {
    p.set_grad(ones({2}, TensorOptions(kFloat64)));
    opt.step();
    sched.step();
  }
  EXPECT_DOUBLE_EQ(p.detach().select(0, 0).item<double>(), -(1.0 + 0.5 + 0.25));
}

// The chainable formulas in torch's operation order give torch's doubles: each group's lr (and
// OneCycleLR's momentum) equal to torch 1.13's, bit for bit, over 50 steps.
void expect_torch_sequence(const char* name, optim::Optimizer& opt, optim::LRScheduler& sched,
                           const std::vector<std::array<double, 4>>& want) {
  ASSERT_EQ(want.size(), 51u);
  for (size_t step = 0; step < want.size(); ++step) {
    for (size_t g = 0; g < 2; ++g) {
      const auto& options = opt.param_groups()[g].options();
      EXPECT_EQ(options.get_lr(), want[step][g]) << name << " step " << step << " group " << g;
      EXPECT_EQ(options.to_map().at("momentum"), want[step][2 + g])
          << name << " step " << step << " group " << g;
    }
    if (step + 1 < want.size()) {
      opt.step();
      sched.step();
    }
  }
}

std::vector<optim::ParamGroup> torch_groups() {
  std::vector<optim::ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{param()});
  groups.emplace_back(std::vector<Tensor>{param()}, optim::SGDOptions(0.5).momentum(0.9));
  return groups;
}

TEST(LRScheduler, TorchSequences) {
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::StepLR s(opt, 3, 0.5);
    expect_torch_sequence("StepLR", opt, s, kStepLR_3_0p5);
  }
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::MultiStepLR s(opt, {30, 5, 20, 20}, 0.5);
    expect_torch_sequence("MultiStepLR", opt, s, kMultiStepLR_5_20_20_30);
  }
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::ExponentialLR s(opt, 0.93);
    expect_torch_sequence("ExponentialLR", opt, s, kExponentialLR_0p93);
  }
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::CosineAnnealingLR s(opt, 7, 0.01);
    expect_torch_sequence("CosineAnnealingLR(7)", opt, s, kCosineAnnealingLR_7_0p01);
  }
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::CosineAnnealingLR s(opt, 50);
    expect_torch_sequence("CosineAnnealingLR(50)", opt, s, kCosineAnnealingLR_50);
  }
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::LinearLR s(opt, 0.25, 0.75, 20);
    expect_torch_sequence("LinearLR", opt, s, kLinearLR_0p25_0p75_20);
  }
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::LinearLR s(opt);
    expect_torch_sequence("LinearLR()", opt, s, kLinearLR_default);
  }
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    auto warmup = std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 5);
    auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, 45);
    optim::SequentialLR s(opt, {warmup, cosine}, {5});
    expect_torch_sequence("SequentialLR", opt, s, kSequential_Linear_Cosine);
  }
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::OneCycleOptions o;
    o.pct_start = 0.25;
    optim::OneCycleLR s(opt, {1.0, 2.0}, 50, o);
    expect_torch_sequence("OneCycleLR", opt, s, kOneCycleLR_cos);
  }
  {
    optim::SGD opt(torch_groups(), optim::SGDOptions(0.1).momentum(0.9));
    optim::OneCycleOptions o;
    o.cos = false;
    o.three_phase = true;
    o.div_factor = 10.0;
    o.final_div_factor = 100.0;
    optim::OneCycleLR s(opt, 0.3, 50, o);
    expect_torch_sequence("OneCycleLR(linear, three_phase)", opt, s,
                          kOneCycleLR_linear_three_phase);
  }
}

}  // namespace
}  // namespace mutagrad
