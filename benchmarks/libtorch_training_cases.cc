// libtorch (PyTorch 1.13's C++ API) counterparts of training_benchmark.cc: the same MLP step
// (same shapes, torch::nn::functional::cross_entropy, torch::optim::AdamW / SGD with the same
// hyperparameters, zero_grad before backward). Linked next to those cases into
// //benchmarks:training_vs_libtorch (manual: needs libtorch-dev). libtorch runs with
// at::set_num_threads(2), like ours.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <vector>

namespace mutagrad_vs_libtorch {
namespace {

constexpr int64_t kBatch = 32, kIn = 64, kHidden = 128, kOut = 10;

void run_steps(benchmark::State& state, bool adamw) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  const torch::Tensor x = torch::rand({kBatch, kIn});
  const torch::Tensor y = torch::randint(0, kOut, {kBatch});
  torch::Tensor w1 = torch::empty({kIn, kHidden}), b1 = torch::empty({kHidden});
  torch::Tensor w2 = torch::empty({kHidden, kOut}), b2 = torch::empty({kOut});
  {
    torch::NoGradGuard no_grad;
    torch::nn::init::kaiming_uniform_(w1.t(), std::sqrt(5.0));
    torch::nn::init::kaiming_uniform_(w2.t(), std::sqrt(5.0));
    b1.uniform_(-0.125, 0.125);
    b2.uniform_(-0.088, 0.088);
  }
  std::vector<torch::Tensor> params = {w1, b1, w2, b2};
  for (torch::Tensor& p : params) p.requires_grad_();
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (adamw) {
    opt = std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(3e-3).weight_decay(1e-2));
  } else {
    opt = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.05).momentum(0.9));
  }
  for (auto _ : state) {
    torch::Tensor logits = (x.matmul(w1) + b1).relu().matmul(w2) + b2;
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
    opt->zero_grad();
    loss.backward();
    opt->step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
}

void BM_Libtorch_TrainStepAdamW(benchmark::State& state) { run_steps(state, true); }
void BM_Libtorch_TrainStepSgdMomentum(benchmark::State& state) { run_steps(state, false); }
BENCHMARK(BM_Libtorch_TrainStepAdamW);
BENCHMARK(BM_Libtorch_TrainStepSgdMomentum);

}  // namespace
}  // namespace mutagrad_vs_libtorch
