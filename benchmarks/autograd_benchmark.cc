// Autograd overhead: a chain of 100 tiny ops (per-op cost of recording a node and running it
// backward), one training step of a 2-layer MLP, and J v / H v of a small MLP by forward mode
// against the double vjp (BM_MlpJvp, BM_MlpHvp).
//
//   bazel run -c opt //benchmarks:autograd_benchmark
//
// Compare BM_TinyChain/no_grad (the raw ops) with BM_TinyChain/record (plus graph recording)
// and BM_TinyChainBackward (plus the backward pass): the differences are autograd's cost.
// The per_op counter is time per op of the chain. //benchmarks:autograd_vs_libtorch links these
// cases with libtorch's counterparts (libtorch_autograd_cases.cc) to time both in one run.
#include <benchmark/benchmark.h>

#include "mutagrad.h"

namespace mutagrad {
namespace {

constexpr int kChain = 100;

// 100 tiny ops alternating scalar and tensor operands and a unary op.
Tensor tiny_chain(const Tensor& x, const Tensor& c) {
  Tensor y = x;
  for (int i = 0; i < kChain; i += 4) {
    y = y * 1.0001;
    y = y + c;
    y = y.tanh();
    y = y - c;
  }
  return y;
}

void set_per_op(benchmark::State& state) {
  state.counters["per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kChain,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_TinyChain(benchmark::State& state) {
  const bool record = state.range(0) != 0;
  Generator gen(0);
  Tensor x = randn({4}, gen).requires_grad_(record);
  Tensor c = randn({4}, gen);
  autograd::AutoGradMode mode(record);
  for (auto _ : state) {
    Tensor y = tiny_chain(x, c);
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_per_op(state);
  state.SetLabel(record ? "record" : "no_grad");
}
BENCHMARK(BM_TinyChain)->Arg(0)->Arg(1);

void BM_TinyChainBackward(benchmark::State& state) {
  Generator gen(0);
  Tensor x = randn({4}, gen).requires_grad_();
  Tensor c = randn({4}, gen);
  Tensor seed = ones({4});
  for (auto _ : state) {
    Tensor y = tiny_chain(x, c);
    y.backward(seed);
    benchmark::DoNotOptimize(x.grad().raw_data());
  }
  set_per_op(state);
}
BENCHMARK(BM_TinyChainBackward);

// One SGD step of relu(x W1 + b1) W2 + b2 with a mean squared error loss.
void BM_MlpTrainingStep(benchmark::State& state) {
  const int64_t batch = 32, in = 64, hidden = 128, out = 10;
  Generator gen(0);
  Tensor x = randn({batch, in}, gen);
  Tensor target = randn({batch, out}, gen);
  Tensor w1 = (randn({in, hidden}, gen) * 0.1).requires_grad_();
  Tensor b1 = zeros({hidden}).requires_grad_();
  Tensor w2 = (randn({hidden, out}, gen) * 0.1).requires_grad_();
  Tensor b2 = zeros({out}).requires_grad_();
  const std::vector<Tensor> params = {w1, b1, w2, b2};
  for (auto _ : state) {
    Tensor h = (x.matmul(w1) + b1).relu();
    Tensor pred = h.matmul(w2) + b2;
    Tensor loss = (pred - target).pow(2).mean();
    loss.backward();
    NoGradGuard no_grad;
    for (const Tensor& p : params) {
      Tensor param = p;
      param.sub_(p.grad() * 0.01);
      p.set_grad(Tensor());
    }
    benchmark::DoNotOptimize(loss.raw_data());
  }
}
BENCHMARK(BM_MlpTrainingStep);

// Issue 40: J v of a small MLP's output and H v of its loss, by forward mode (a dual pass;
// forward-over-reverse for H v) and by the double-vjp trick (autograd::jvp_by_double_vjp,
// autograd::hvp_by_double_vjp), interleaved in one run. Arg 0: forward mode, 1: double vjp.
struct SmallMlp {
  Tensor x, target, w1, b1, w2, b2;
  SmallMlp() {
    Generator gen(0);
    x = randn({32, 64}, gen);
    target = randn({32, 10}, gen);
    w1 = randn({64, 128}, gen) * 0.1;
    b1 = randn({128}, gen) * 0.1;
    w2 = randn({128, 10}, gen) * 0.1;
    b2 = randn({10}, gen) * 0.1;
  }
  autograd::VariableList params() const { return {w1, b1, w2, b2}; }
  autograd::VariableList directions() const {
    Generator gen(1);
    autograd::VariableList v;
    for (const Tensor& p : params()) v.push_back(randn(p.sizes(), gen));
    return v;
  }
  Tensor output(const autograd::VariableList& p) const {
    return (x.matmul(p[0]) + p[1]).tanh().matmul(p[2]) + p[3];
  }
  Tensor loss(const autograd::VariableList& p) const { return (output(p) - target).pow(2).mean(); }
};

void BM_MlpJvp(benchmark::State& state) {
  const SmallMlp mlp;
  const autograd::VariableList p = mlp.params(), v = mlp.directions();
  const autograd::TensorFunction fn(
      [&](const autograd::VariableList& in) { return mlp.output(in); });
  for (auto _ : state) {
    autograd::FunctionalResult r =
        state.range(0) == 0 ? autograd::jvp(fn, p, v) : autograd::jvp_by_double_vjp(fn, p, v);
    benchmark::DoNotOptimize(r.result[0].raw_data());
  }
  state.SetLabel(state.range(0) == 0 ? "forward" : "double_vjp");
}
BENCHMARK(BM_MlpJvp)->Arg(0)->Arg(1);

void BM_MlpHvp(benchmark::State& state) {
  const SmallMlp mlp;
  const autograd::VariableList p = mlp.params(), v = mlp.directions();
  const autograd::TensorFunction fn([&](const autograd::VariableList& in) { return mlp.loss(in); });
  for (auto _ : state) {
    autograd::FunctionalResult r = state.range(0) == 0
                                       ? autograd::forward_over_reverse_hvp(fn, p, v)
                                       : autograd::hvp_by_double_vjp(fn, p, v);
    benchmark::DoNotOptimize(r.result[0].raw_data());
  }
  state.SetLabel(state.range(0) == 0 ? "forward_over_reverse" : "double_vjp");
}
BENCHMARK(BM_MlpHvp)->Arg(0)->Arg(1);

}  // namespace
}  // namespace mutagrad
