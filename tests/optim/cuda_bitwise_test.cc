// The CPU's bits on the CUDA device (issue 39, item 4): every optimizer and option run 20 steps
// on the CPU and on the CUDA device (the host-run backend here, a GPU under --config=cuda) from
// the same parameters and gradients ends with bitwise the same parameters and state; and the
// in-place ops optimizers are made of (add_ with alpha, addcmul_, addcdiv_, lerp_, the scalar
// add_/sub_/mul_/div_) write bitwise the CPU's values, float32 and float64, on random data with
// edge values (zeros of both signs, subnormals, huge and tiny magnitudes, inf, nan). And the
// CPU's one-pass optimizer steps against its op-by-op steps, bitwise. The optimizer tests run
// under every build of the CPU kernels this machine has (Note [Fused steps per capability]).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mutagrad.h"
#include "optim/optim.h"
#include "tensor/cpu/vec_kernels.h"

namespace mutagrad {
namespace {

const Device kCuda(DeviceType::CUDA, 0);

Tensor host(const Tensor& t) { return t.detach().to(kCPU).contiguous(); }

// Bitwise equality of two tensors (any devices), except that a NaN equals any NaN: the sign and
// payload of a NaN that arithmetic makes are left open by IEEE 754 (x86's default NaN has the
// sign bit set, a GPU's has not) and so is which NaN wins where two meet, which the compiler
// decides by the operand order it picks (Note [NaN bits] in tests/cuda/conformance_util.h).
::testing::AssertionResult same_bits(const Tensor& cpu, const Tensor& cuda) {
  const Tensor a = host(cpu);
  const Tensor b = host(cuda);
  if (a.dtype() != b.dtype() || !a.sizes().equals(b.sizes())) {
    return ::testing::AssertionFailure() << "dtype or shape differs";
  }
  const size_t item = a.dtype() == kFloat32 ? 4 : 8;
  const char* pa = static_cast<const char*>(a.unsafe_impl()->data());
  const char* pb = static_cast<const char*>(b.unsafe_impl()->data());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(pa + i * item, pb + i * item, item) != 0 &&
        !(item == 4 ? std::isnan(reinterpret_cast<const float*>(pa)[i]) &&
                          std::isnan(reinterpret_cast<const float*>(pb)[i])
                    : std::isnan(reinterpret_cast<const double*>(pa)[i]) &&
                          std::isnan(reinterpret_cast<const double*>(pb)[i]))) {
      const Tensor da = a.to(kFloat64);
      const Tensor db = b.to(kFloat64);
      return ::testing::AssertionFailure()
             << "element " << i << " of " << a.numel() << ": cpu " << da.data_ptr<double>()[i]
             << " cuda " << db.data_ptr<double>()[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// n random values with a spread of magnitudes, and edge values first when `edges`.
std::vector<double> random_values(std::mt19937_64& rng, int64_t n, bool edges, bool positive) {
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> exponent(-6, 6);
  std::vector<double> v;
  if (edges) {
    const double inf = std::numeric_limits<double>::infinity();
    for (double e : {0.0, -0.0, 1e-40, -1e-310, 3e38, -3e38, 1e-30, 1.0, -1.0, 0.5, inf, -inf,
                     std::numeric_limits<double>::quiet_NaN()}) {
      v.push_back(positive ? std::abs(e) : e);
    }
  }
  while (static_cast<int64_t>(v.size()) < n) {
    const double x = normal(rng) * std::pow(10.0, exponent(rng));
    v.push_back(positive ? std::abs(x) + 1e-3 : x);
  }
  v.resize(static_cast<size_t>(n));
  return v;
}

Tensor make(const std::vector<double>& v, ScalarType dtype) {
  return from_vector(v, {static_cast<int64_t>(v.size())}).to(dtype);
}

constexpr int64_t kN = 1031;  // not a multiple of any vector width

struct OpCase {
  std::string name;
  // Applies the op in place to x (other operands a, b, w on x's device).
  std::function<void(Tensor& x, const Tensor& a, const Tensor& b, const Tensor& w)> apply;
};

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  for (double alpha : {1.0, -1.0, 0.1, -0.9, 1e-3, 3.0e-8, 7.0}) {
    cases.push_back(
        {"add_(b, alpha=" + std::to_string(alpha) + ")",
         [alpha](Tensor& x, const Tensor&, const Tensor& b, const Tensor&) { x.add_(b, alpha); }});
    cases.push_back(
        {"sub_(b, alpha=" + std::to_string(alpha) + ")",
         [alpha](Tensor& x, const Tensor&, const Tensor& b, const Tensor&) { x.sub_(b, alpha); }});
    cases.push_back({"addcmul_(a, b, " + std::to_string(alpha) + ")",
                     [alpha](Tensor& x, const Tensor& a, const Tensor& b, const Tensor&) {
                       x.addcmul_(a, b, alpha);
                     }});
    cases.push_back({"addcdiv_(a, b, " + std::to_string(alpha) + ")",
                     [alpha](Tensor& x, const Tensor& a, const Tensor& b, const Tensor&) {
                       x.addcdiv_(a, b, alpha);
                     }});
    cases.push_back(
        {"add_(" + std::to_string(alpha) + ")",
         [alpha](Tensor& x, const Tensor&, const Tensor&, const Tensor&) { x.add_(alpha); }});
    cases.push_back(
        {"sub_(" + std::to_string(alpha) + ")",
         [alpha](Tensor& x, const Tensor&, const Tensor&, const Tensor&) { x.sub_(alpha); }});
    cases.push_back(
        {"mul_(" + std::to_string(alpha) + ")",
         [alpha](Tensor& x, const Tensor&, const Tensor&, const Tensor&) { x.mul_(alpha); }});
    cases.push_back(
        {"div_(" + std::to_string(alpha) + ")",
         [alpha](Tensor& x, const Tensor&, const Tensor&, const Tensor&) { x.div_(alpha); }});
  }
  for (double w : {0.0, 0.1, 0.4999, 0.5, 0.9, 1.0, -0.3, 1.7}) {
    cases.push_back(
        {"lerp_(b, " + std::to_string(w) + ")",
         [w](Tensor& x, const Tensor&, const Tensor& b, const Tensor&) { x.lerp_(b, w); }});
  }
  cases.push_back({"lerp_(b, tensor weight)", [](Tensor& x, const Tensor&, const Tensor& b,
                                                 const Tensor& w) { x.lerp_(b, w); }});
  cases.push_back({"add_(x, alpha=0.3) (aliased)",
                   [](Tensor& x, const Tensor&, const Tensor&, const Tensor&) { x.add_(x, 0.3); }});
  cases.push_back({"addcmul_(a, a, 0.1)", [](Tensor& x, const Tensor& a, const Tensor&,
                                             const Tensor&) { x.addcmul_(a, a, 0.1); }});
  return cases;
}

class InplaceOps : public ::testing::TestWithParam<ScalarType> {};

TEST_P(InplaceOps, WriteTheCpusBitsOnCuda) {
  const ScalarType dtype = GetParam();
  std::mt19937_64 rng(39);
  for (const OpCase& c : op_cases()) {
    for (bool edges : {false, true}) {
      const Tensor x0 = make(random_values(rng, kN, edges, false), dtype);
      const Tensor a0 = make(random_values(rng, kN, edges, false), dtype);
      const Tensor b0 = make(random_values(rng, kN, edges, false), dtype);
      std::uniform_real_distribution<double> unit(-0.5, 1.5);
      std::vector<double> wv(kN);
      for (double& e : wv) e = unit(rng);
      const Tensor w0 = make(wv, dtype);
      Tensor x = x0.clone();
      c.apply(x, a0, b0, w0);
      Tensor xc = x0.to(kCuda);
      c.apply(xc, a0.to(kCuda), b0.to(kCuda), w0.to(kCuda));
      EXPECT_TRUE(same_bits(x, xc))
          << c.name << " " << dtype_name(dtype) << (edges ? " with edge values" : "");
      // A non-contiguous self (every other element) takes the strided paths.
      Tensor y = x0.clone();
      Tensor ys = y.slice(0, 0, kN - 1, 2);
      Tensor yc = x0.to(kCuda);
      Tensor ycs = yc.slice(0, 0, kN - 1, 2);
      c.apply(ys, a0.slice(0, 0, kN - 1, 2), b0.slice(0, 1, kN, 2), w0.slice(0, 0, kN - 1, 2));
      c.apply(ycs, a0.to(kCuda).slice(0, 0, kN - 1, 2), b0.to(kCuda).slice(0, 1, kN, 2),
              w0.to(kCuda).slice(0, 0, kN - 1, 2));
      EXPECT_TRUE(same_bits(y, yc))
          << c.name << " strided " << dtype_name(dtype) << (edges ? " with edge values" : "");
      // ... and the strided CPU writes what it writes into contiguous operands.
      Tensor z = x0.slice(0, 0, kN - 1, 2).contiguous();
      c.apply(z, a0.slice(0, 0, kN - 1, 2).contiguous(), b0.slice(0, 1, kN, 2).contiguous(),
              w0.slice(0, 0, kN - 1, 2).contiguous());
      EXPECT_TRUE(same_bits(z, ys)) << c.name << " strided vs contiguous on the CPU "
                                    << dtype_name(dtype) << (edges ? " with edge values" : "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, InplaceOps, ::testing::Values(kFloat32, kFloat64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// One optimizer configuration: builds the optimizer over `params`.
struct OptimCase {
  std::string name;
  std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make;
};

std::vector<OptimCase> optim_cases() {
  using namespace optim;
  auto sgd = [](SGDOptions o) {
    return [o](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<SGD>(std::move(p), o);
    };
  };
  auto adam = [](AdamOptions o) {
    return [o](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<Adam>(std::move(p), o);
    };
  };
  auto adamw = [](AdamWOptions o) {
    return [o](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<AdamW>(std::move(p), o);
    };
  };
  auto rmsprop = [](RMSpropOptions o) {
    return [o](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<RMSprop>(std::move(p), o);
    };
  };
  auto adagrad = [](AdagradOptions o) {
    return [o](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<Adagrad>(std::move(p), o);
    };
  };
  return {
      {"SGD", sgd(SGDOptions(0.1))},
      {"SGD weight_decay", sgd(SGDOptions(0.1).weight_decay(0.01))},
      {"SGD momentum", sgd(SGDOptions(0.05).momentum(0.9))},
      {"SGD momentum dampening", sgd(SGDOptions(0.05).momentum(0.9).dampening(0.1))},
      {"SGD nesterov weight_decay",
       sgd(SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-3))},
      {"SGD maximize momentum", sgd(SGDOptions(0.05).momentum(0.5).maximize(true))},
      {"Adam", adam(AdamOptions(1e-3))},
      {"Adam weight_decay", adam(AdamOptions(1e-2).weight_decay(0.1))},
      {"Adam amsgrad", adam(AdamOptions(1e-2).amsgrad(true).betas({0.8, 0.95}))},
      {"Adam amsgrad weight_decay maximize",
       adam(AdamOptions(1e-2).amsgrad(true).weight_decay(0.05).maximize(true))},
      {"AdamW", adamw(AdamWOptions(1e-3))},
      {"AdamW amsgrad", adamw(AdamWOptions(1e-2).amsgrad(true).weight_decay(0.1))},
      {"RMSprop", rmsprop(RMSpropOptions(1e-2))},
      {"RMSprop centered", rmsprop(RMSpropOptions(1e-2).centered(true))},
      {"RMSprop momentum", rmsprop(RMSpropOptions(1e-2).momentum(0.9))},
      {"RMSprop centered momentum weight_decay",
       rmsprop(RMSpropOptions(1e-2).centered(true).momentum(0.8).weight_decay(0.01))},
      {"Adagrad", adagrad(AdagradOptions(0.1))},
      {"Adagrad lr_decay weight_decay",
       adagrad(
           AdagradOptions(0.1).lr_decay(0.01).weight_decay(0.05).initial_accumulator_value(0.1))},
  };
}

class Optimizers : public ::testing::TestWithParam<ScalarType> {};

// Runs f under each build of the CPU kernels this CPU runs (baseline, AVX2, AVX-512), then
// restores the one in use.
template <typename F>
void for_each_cpu_build(const F& f) {
  const cpu::CpuCapability saved = cpu::cpu_capability();
  for (cpu::CpuCapability c : cpu::kCpuCapabilities) {
    if (!cpu::cpu_capability_runs(c)) continue;
    cpu::set_cpu_capability(c);
    SCOPED_TRACE(std::string("CPU build ") + cpu::cpu_capability_name(c));
    f();
  }
  cpu::set_cpu_capability(saved);
}

TEST_P(Optimizers, GiveTheCpusParametersOnCuda) {
  for_each_cpu_build([&] {
    const ScalarType dtype = GetParam();
    constexpr int kSteps = 20;
    constexpr int64_t kNumel = 257;
    for (const OptimCase& c : optim_cases()) {
      std::mt19937_64 rng(7);
      // Two parameters: a vector and a (non-square) matrix.
      const std::vector<Tensor> start = {
          make(random_values(rng, kNumel, false, false), dtype),
          make(random_values(rng, 6 * 5, false, false), dtype).reshape({6, 5})};
      std::vector<Tensor> cpu, cuda;
      for (const Tensor& s : start) {
        cpu.push_back(s.clone().requires_grad_());
        cuda.push_back(s.to(kCuda).requires_grad_());
      }
      std::unique_ptr<optim::Optimizer> on_cpu = c.make(cpu);
      std::unique_ptr<optim::Optimizer> on_cuda = c.make(cuda);
      for (int k = 0; k < kSteps; ++k) {
        for (size_t i = 0; i < start.size(); ++i) {
          const Tensor g = make(random_values(rng, start[i].numel(), false, false), dtype)
                               .reshape(start[i].sizes());
          cpu[i].set_grad(g);
          cuda[i].set_grad(g.to(kCuda));
        }
        on_cpu->step();
        on_cuda->step();
      }
      for (size_t i = 0; i < start.size(); ++i) {
        EXPECT_TRUE(same_bits(cpu[i], cuda[i]))
            << c.name << " " << dtype_name(dtype) << ": parameter " << i << " after " << kSteps
            << " steps";
        EXPECT_FALSE(same_bits(cpu[i], start[i])) << c.name << ": the steps changed nothing";
      }
    }
  });
}

// Note [Fused optimizer steps] (tensor/cpu/fused_optim.h): a contiguous CPU parameter takes
// the one-pass step, a strided one (the same values in every other element of a buffer) the
// op-by-op step; both end bitwise equal, also with edge values (zeros of both signs, subnormals,
// huge magnitudes, inf, nan) in the parameters and gradients.
TEST_P(Optimizers, FusedCpuStepEqualsTheOpByOpStep) {
  for_each_cpu_build([&] {
    const ScalarType dtype = GetParam();
    constexpr int kSteps = 12;
    for (const OptimCase& c : optim_cases()) {
      for (bool edges : {false, true}) {
        std::mt19937_64 rng(11);
        const std::vector<Tensor> start = {
            make(random_values(rng, 1031, edges, false), dtype),
            make(random_values(rng, 6 * 5, false, false), dtype).reshape({6, 5})};
        std::vector<Tensor> fused, strided;
        for (const Tensor& s : start) {
          fused.push_back(s.clone().requires_grad_());
          std::vector<int64_t> sizes = s.sizes().vec();
          sizes.push_back(2);
          Tensor every_other = zeros(sizes, TensorOptions(dtype)).select(-1, 0);
          every_other.copy_(s);
          ASSERT_FALSE(every_other.is_contiguous());
          strided.push_back(every_other.requires_grad_());
        }
        std::unique_ptr<optim::Optimizer> one_pass = c.make(fused);
        std::unique_ptr<optim::Optimizer> op_by_op = c.make(strided);
        for (int k = 0; k < kSteps; ++k) {
          for (size_t i = 0; i < start.size(); ++i) {
            const Tensor g =
                make(random_values(rng, start[i].numel(), edges && k == 3, false), dtype)
                    .reshape(start[i].sizes());
            fused[i].set_grad(g);
            strided[i].set_grad(g.clone());
          }
          one_pass->step();
          op_by_op->step();
        }
        for (size_t i = 0; i < start.size(); ++i) {
          EXPECT_TRUE(same_bits(fused[i], strided[i]))
              << c.name << " " << dtype_name(dtype) << (edges ? " with edge values" : "")
              << ": parameter " << i << " after " << kSteps << " steps";
        }
        EXPECT_EQ(fused[0].version(), static_cast<uint32_t>(kSteps)) << c.name;
      }
    }
  });
}

// Note [One pass per group] (optim/fused.h): a group's one-pass steps run as one pass over all
// their elements, yet every parameter ends bitwise as when each is stepped alone, in order. A
// strided parameter (op-by-op) and one of the other dtype end a pass, so the group has three:
// - seven disjoint parameters of 73,036 elements, two threads, the split inside the third
//   (and two of them slices of one buffer);
// - two parameters that overlap between two of 40,000 elements: run one at a time, in order (as
//   one pass, the second thread would update the later one before the first thread reached the
//   earlier one);
// - one parameter above the two-thread threshold alone.
TEST_P(Optimizers, OnePassPerGroupEqualsOneParameterAtATime) {
  const ScalarType dtype = GetParam();
  const ScalarType other = dtype == kFloat32 ? kFloat64 : kFloat32;
  constexpr int kSteps = 4;
  auto build = [&](std::mt19937_64 rng) {
    auto values = [&](int64_t n, ScalarType t) {
      return make(random_values(rng, n, false, false), t);
    };
    std::vector<Tensor> ps;
    const Tensor shared = values(2000, dtype);
    for (int64_t n : {30000, 3, 40000, 1, 1031}) ps.push_back(values(n, dtype));
    ps.push_back(shared.narrow(0, 0, 1000));
    ps.push_back(shared.narrow(0, 1000, 1000));
    Tensor strided = zeros({700, 2}, TensorOptions(dtype)).select(1, 0);
    strided.copy_(values(700, dtype));
    ps.push_back(strided);
    const Tensor overlapping = values(1000, dtype);
    ps.push_back(values(40000, dtype));
    ps.push_back(overlapping.narrow(0, 400, 600));
    ps.push_back(overlapping.narrow(0, 0, 600));
    ps.push_back(values(40000, dtype));
    ps.push_back(values(500, other));
    ps.push_back(values(70001, dtype));
    for (Tensor& p : ps) p.requires_grad_();
    return ps;
  };
  for (const OptimCase& c : optim_cases()) {
    std::mt19937_64 rng(12);
    std::vector<Tensor> grouped = build(rng), alone = build(rng);
    rng.seed(13);
    std::unique_ptr<optim::Optimizer> group = c.make(grouped);
    std::vector<std::unique_ptr<optim::Optimizer>> each;
    for (const Tensor& p : alone) each.push_back(c.make({p}));
    for (int k = 0; k < kSteps; ++k) {
      for (size_t i = 0; i < grouped.size(); ++i) {
        const Tensor g =
            make(random_values(rng, grouped[i].numel(), false, false), grouped[i].dtype());
        grouped[i].set_grad(g);
        alone[i].set_grad(g.clone());
      }
      group->step();
      for (const auto& o : each) o->step();
    }
    for (size_t i = 0; i < grouped.size(); ++i) {
      EXPECT_TRUE(same_bits(grouped[i], alone[i])) << c.name << ": parameter " << i;
      EXPECT_EQ(grouped[i].version(), alone[i].version()) << c.name << ": parameter " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Optimizers, ::testing::Values(kFloat32, kFloat64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace mutagrad
