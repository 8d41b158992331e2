// libtorch (PyTorch's C++ API) counterpart of nn_benchmark.cc's module case: the same MLP with
// BatchNorm and Dropout as a torch::nn::Sequential (same shapes, cross entropy, backward, a
// plain SGD update under no-grad). Linked next to our cases into //benchmarks:nn_vs_libtorch
// (libtorch 1.13) and //benchmarks:nn_vs_torch2 (2.x); manual. at::set_num_threads(2), as the
// other libtorch cases.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <vector>

namespace mutagrad_vs_libtorch {
namespace {

constexpr int64_t kBatch = 64, kIn = 64, kHidden = 128, kOut = 10;
constexpr double kLr = 0.05;

void BM_Libtorch_MlpStepModules(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  const torch::Tensor x = torch::rand({kBatch, kIn});
  const torch::Tensor y = torch::randint(0, kOut, {kBatch});
  torch::nn::Sequential model(torch::nn::Linear(kIn, kHidden), torch::nn::BatchNorm1d(kHidden),
                              torch::nn::ReLU(), torch::nn::Dropout(0.1),
                              torch::nn::Linear(kHidden, kHidden), torch::nn::BatchNorm1d(kHidden),
                              torch::nn::ReLU(), torch::nn::Linear(kHidden, kOut));
  for (auto _ : state) {
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    {
      torch::NoGradGuard no_grad;
      for (torch::Tensor& p : model->parameters()) {
        p.add_(p.grad(), -kLr);
        p.mutable_grad() = torch::Tensor();
      }
    }
    benchmark::DoNotOptimize(loss.data_ptr());
  }
}
BENCHMARK(BM_Libtorch_MlpStepModules)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mutagrad_vs_libtorch
