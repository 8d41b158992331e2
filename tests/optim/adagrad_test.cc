// optim::Adagrad against a naive double-precision reference of torch.optim.Adagrad 1.13's
// formula, on the test's device (CPU, and the host-run CUDA device in adagrad_test_cuda): one
// version bump per parameter per step, state from the constructor on, state_dict round trip,
// the stale-tensor error naming "Adagrad.step", bad options that change nothing.
// tests/python/adagrad_test.py compares it with torch 1.13 itself.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mutagrad.h"
#include "optim/optim.h"
#include "tests/tensor/test_device.h"

namespace mutagrad {
namespace {

using testing_device::host_copy;
using testing_device::on_test_device;

Tensor vec(const std::vector<double>& v) {
  return on_test_device(from_vector(v, {static_cast<int64_t>(v.size())}));
}

Tensor param(const std::vector<double>& v) { return vec(v).requires_grad_(); }

std::vector<double> values(const Tensor& t) {
  Tensor c = host_copy(t.detach()).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
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

struct Reference {
  double lr, lr_decay, weight_decay, init, eps;
  bool maximize;
  std::vector<double> p, sum;
  int step = 0;

  void update(const std::vector<double>& grad) {
    ++step;
    const double clr = lr / (1 + (step - 1) * lr_decay);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = maximize ? -grad[i] : grad[i];
      g += weight_decay * p[i];
      sum[i] += g * g;
      p[i] -= clr * g / (std::sqrt(sum[i]) + eps);
    }
  }
};

TEST(Adagrad, MatchesTheReferenceWithEveryOption) {
  for (bool maximize : {false, true}) {
    const std::vector<double> start = {1.0, -2.0, 0.25};
    Reference ref{0.1, 0.5, 0.1, 0.2, 1e-10, maximize, start, {0.2, 0.2, 0.2}};
    Tensor p = param(start);
    optim::Adagrad opt({p}, optim::AdagradOptions(0.1)
                                .lr_decay(0.5)
                                .weight_decay(0.1)
                                .initial_accumulator_value(0.2)
                                .maximize(maximize));
    for (int k = 0; k < 20; ++k) {
      const std::vector<double> g = {std::sin(k + 1.0), 0.5 - 0.1 * k, std::cos(3.0 * k)};
      p.set_grad(vec(g));
      opt.step();
      ref.update(g);
      EXPECT_EQ(p.version(), static_cast<uint32_t>(k + 1));
    }
    const std::vector<double> got = values(p);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], ref.p[i], 1e-12) << "element " << i << " maximize " << maximize;
    }
    const std::vector<double> sum = values(opt.state(p)["sum"]);
    for (size_t i = 0; i < sum.size(); ++i) EXPECT_NEAR(sum[i], ref.sum[i], 1e-12);
    EXPECT_EQ(opt.state(p)["step"].item<double>(), 20.0);
  }
}

TEST(Adagrad, StateExistsFromTheConstructorPerGroup) {
  Tensor a = param({1.0, 2.0});
  Tensor b = param({3.0});
  std::vector<optim::ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b},
                      optim::AdagradOptions(0.5).initial_accumulator_value(0.7));
  optim::Adagrad opt(groups, optim::AdagradOptions(0.1).initial_accumulator_value(0.3));
  optim::StateDict sd = opt.state_dict();
  ASSERT_EQ(sd.state.size(), 2u);
  EXPECT_EQ(values(sd.state[0]["sum"]), (std::vector<double>{0.3, 0.3}));
  EXPECT_EQ(values(sd.state[1]["sum"]), (std::vector<double>{0.7}));
  EXPECT_EQ(sd.state[0]["step"].item<double>(), 0.0);
  EXPECT_EQ(sd.state[0]["step"].dtype(), kFloat32);
  EXPECT_EQ(a.version(), 0u);

  // A group added later gets its state too, with its own initial value.
  Tensor c = param({4.0});
  opt.add_param_group(
      optim::ParamGroup({c}, optim::AdagradOptions(0.1).initial_accumulator_value(1.5)));
  EXPECT_EQ(values(opt.state(c)["sum"]), (std::vector<double>{1.5}));
  c.set_grad(vec({2.0}));
  opt.step();  // only c has a gradient
  EXPECT_NEAR(values(c)[0], 4.0 - 0.1 * 2.0 / (std::sqrt(1.5 + 4.0) + 1e-10), 1e-15);
  EXPECT_EQ(a.version(), 0u);
  EXPECT_EQ(c.version(), 1u);
}

TEST(Adagrad, StateDictRoundTrip) {
  Tensor p = param({0.5, -0.5});
  Tensor q = param({0.5, -0.5});
  optim::Adagrad a1({p}, optim::AdagradOptions(0.2).lr_decay(0.1));
  for (double g : {1.0, -0.3}) {
    p.set_grad(vec({g, 2 * g}));
    a1.step();
  }
  optim::StateDict saved = a1.state_dict();
  q.detach().copy_(p.detach());
  optim::Adagrad a2({q}, optim::AdagradOptions(0.9));
  a2.load_state_dict(saved);
  EXPECT_EQ(a2.param_groups()[0].options().get_lr(), 0.2);
  for (double g : {0.7, -0.1, 2.0}) {
    p.set_grad(vec({g, g}));
    q.set_grad(vec({g, g}));
    a1.step();
    a2.step();
    EXPECT_EQ(values(q), values(p));  // lr decay continues from step 2
  }
}

TEST(Adagrad, StepBetweenForwardAndBackwardNamesTheStep) {
  Tensor w = param({1.0, 2.0});
  optim::Adagrad opt({w}, optim::AdagradOptions(0.1));
  Tensor loss = (w * w).sum();
  w.set_grad(vec({1.0, 1.0}));
  const int line = __LINE__ + 1;
  opt.step();
  const std::string msg = error_of<autograd::AutogradError>([&] { loss.backward(); });
  EXPECT_NE(msg.find("Adagrad.step at "), std::string::npos) << msg;
  EXPECT_NE(msg.find("adagrad_test.cc:" + std::to_string(line)), std::string::npos) << msg;
}

TEST(Adagrad, BadOptionsChangeNothing) {
  for (const char* option :
       {"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"}) {
    optim::AdagradOptions o(0.1);
    o.set(option, -1.0);
    const std::string msg = error_of<ValueError>([&] { optim::Adagrad({param({1.0})}, o); });
    EXPECT_NE(msg.find(std::string("invalid ") + option + " value: -1"), std::string::npos) << msg;
  }
  Tensor a = param({1.0});
  optim::Adagrad opt({a}, optim::AdagradOptions(0.1));
  a.set_grad(vec({1.0}));
  opt.param_groups()[0].options().set("lr_decay", -0.5);
  EXPECT_NE(error_of<ValueError>([&] { opt.step(); }).find("lr_decay"), std::string::npos);
  EXPECT_EQ(a.version(), 0u);
  EXPECT_EQ(opt.state(a)["step"].item<double>(), 0.0);
  EXPECT_EQ(opt.state(a)["sum"].version(), 0u);
}

}  // namespace
}  // namespace mutagrad
