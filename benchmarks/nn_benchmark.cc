// Module overhead: one training step of a 3-layer MLP with BatchNorm and Dropout written with
// nn/ modules, and the same step written with raw tensors and the same ops, in one run.
//
//   ./bazelw run //benchmarks:nn_benchmark
//
// Model: Linear(64, 128) BatchNorm1d ReLU Dropout(0.1) Linear(128, 128) BatchNorm1d ReLU
// Linear(128, 10), a batch of 64, cross entropy, backward and a plain SGD update (lr 0.05) under
// no-grad. The two cases compute the same values (module_test checks it bit for bit); the
// difference is what the modules add: registration lookups, virtual forward, hook checks,
// parameters() collection. docs/performance/autograd-training.md records the ratio.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "autograd/ops/nn_ops.h"
#include "mutagrad.h"
#include "nn/nn.h"

namespace mutagrad {
namespace {

constexpr int64_t kBatch = 64, kIn = 64, kHidden = 128, kOut = 10;
constexpr double kLr = 0.05;

std::shared_ptr<nn::Sequential> make_model() {
  return std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(kIn, kHidden), std::make_shared<nn::BatchNorm1d>(kHidden),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Dropout>(0.1),
      std::make_shared<nn::Linear>(kHidden, kHidden), std::make_shared<nn::BatchNorm1d>(kHidden),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(kHidden, kOut));
}

void sgd(const std::vector<Tensor>& params) {
  NoGradGuard no_grad;
  for (Tensor p : params) {
    p.add_(p.grad(), -kLr);
    p.set_grad(Tensor());
  }
}

void BM_MlpStepModules(benchmark::State& state) {
  Generator gen(0);
  const Tensor x = rand({kBatch, kIn}, gen);
  const Tensor y = randint(0, kOut, {kBatch}, gen);
  auto model = make_model();
  nn::CrossEntropyLoss criterion;
  for (auto _ : state) {
    Tensor loss = criterion((*model)(x), y);
    loss.backward();
    sgd(model->parameters());
    benchmark::DoNotOptimize(loss.raw_data());
  }
}
BENCHMARK(BM_MlpStepModules)->Unit(benchmark::kMicrosecond);

void BM_MlpStepRawTensors(benchmark::State& state) {
  Generator gen(0);
  const Tensor x = rand({kBatch, kIn}, gen);
  const Tensor y = randint(0, kOut, {kBatch}, gen);
  // The same start as the modules' (their state_dict), as plain tensors.
  std::vector<Tensor> t;
  for (const Tensor& s : make_model()->state_dict().values()) t.push_back(s.clone());
  // w0 b0 g0 be0 rm0 rv0 n0 | w1 b1 g1 be1 rm1 rv1 n1 | w2 b2
  const std::vector<Tensor> params = {t[0], t[1], t[2],  t[3],  t[7],
                                      t[8], t[9], t[10], t[14], t[15]};
  for (Tensor p : params) p.requires_grad_();
  for (auto _ : state) {
    t[6].add_(1);
    Tensor h = batch_norm(t[1].addmm(x, t[0].t()), t[4], t[5], t[2], t[3], true).relu();
    h = dropout(h, 0.1, true);
    t[13].add_(1);
    h = batch_norm(t[8].addmm(h, t[7].t()), t[11], t[12], t[9], t[10], true).relu();
    Tensor loss = cross_entropy(t[15].addmm(h, t[14].t()), y);
    loss.backward();
    sgd(params);
    benchmark::DoNotOptimize(loss.raw_data());
  }
}
BENCHMARK(BM_MlpStepRawTensors)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mutagrad
