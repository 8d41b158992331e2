// One training step of //examples:train_digits's model: a 64-128-10 MLP on a batch of 32
// (matmul + bias, relu, matmul + bias, cross_entropy), backward, then the optimizer's in-place
// step and zero_grad. Two optimizers: AdamW (the example's) and SGD with momentum.
//
//   ./bazelw run //benchmarks:training_benchmark
//   ./bazelw build //benchmarks:training_vs_libtorch   # + libtorch's counterparts, same run
//
// The inputs are fixed random pixels in [0, 1) and labels in [0, 10), drawn once; the cost of
// a step does not depend on the values. libtorch's cases: libtorch_training_cases.cc.
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <vector>

#include "mutagrad.h"
#include "optim/optim.h"

namespace mutagrad {
namespace {

constexpr int64_t kBatch = 32, kIn = 64, kHidden = 128, kOut = 10;

void run_steps(benchmark::State& state, bool adamw) {
  Generator gen(0);
  const Tensor x = rand({kBatch, kIn}, gen);
  const Tensor y = randint(0, kOut, {kBatch}, gen);
  Tensor w1 = empty({kIn, kHidden}).requires_grad_(), b1 = empty({kHidden}).requires_grad_();
  Tensor w2 = empty({kHidden, kOut}).requires_grad_(), b2 = empty({kOut}).requires_grad_();
  for (Tensor* w : {&w1, &w2}) {
    Tensor wt = w->t();
    nn::init::kaiming_uniform_(wt, gen, std::sqrt(5.0));
  }
  nn::init::uniform_(b1, gen, -0.125, 0.125);
  nn::init::uniform_(b2, gen, -0.088, 0.088);
  const std::vector<Tensor> params = {w1, b1, w2, b2};
  std::unique_ptr<optim::Optimizer> opt;
  if (adamw) {
    opt = std::make_unique<optim::AdamW>(params, optim::AdamWOptions(3e-3).weight_decay(1e-2));
  } else {
    opt = std::make_unique<optim::SGD>(params, optim::SGDOptions(0.05).momentum(0.9));
  }
  for (auto _ : state) {
    Tensor logits = (x.matmul(w1) + b1).relu().matmul(w2) + b2;
    Tensor loss = cross_entropy(logits, y);
    opt->zero_grad();
    loss.backward();
    opt->step();
    benchmark::DoNotOptimize(loss.raw_data());
  }
}

void BM_TrainStepAdamW(benchmark::State& state) { run_steps(state, true); }
void BM_TrainStepSgdMomentum(benchmark::State& state) { run_steps(state, false); }
BENCHMARK(BM_TrainStepAdamW);
BENCHMARK(BM_TrainStepSgdMomentum);

}  // namespace
}  // namespace mutagrad
