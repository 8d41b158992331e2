// libtorch (PyTorch's C++ API) counterparts of conv_benchmark.cc: conv2d forward + backward of
// the same batch and filters, and the digits CNN's training step through torch::nn with
// torch::optim::AdamW. Linked next to our cases into //benchmarks:conv_vs_libtorch (1.13) and
// //benchmarks:conv_vs_torch2 (2.x); manual. at::set_num_threads(2), as the other libtorch
// cases.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

namespace mutagrad_vs_libtorch {
namespace {

void BM_Libtorch_Conv2dForwardBackward(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  const torch::Tensor x = torch::rand({64, 3, 32, 32}).requires_grad_();
  const torch::Tensor w = (torch::rand({64, 3, 3, 3}) - 0.5).detach().requires_grad_();
  const torch::Tensor b = torch::zeros({64}).requires_grad_();
  for (auto _ : state) {
    torch::Tensor y = torch::conv2d(x, w, b, 1, 1);
    y.sum().backward();
    for (const torch::Tensor& t : {x, w, b}) t.mutable_grad() = torch::Tensor();
    benchmark::DoNotOptimize(y.data_ptr());
  }
}
BENCHMARK(BM_Libtorch_Conv2dForwardBackward)->Unit(benchmark::kMicrosecond);

void BM_Libtorch_DigitsCnnStep(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  const torch::Tensor x = torch::rand({32, 1, 8, 8});
  const torch::Tensor y = torch::randint(0, 10, {32});
  namespace tnn = torch::nn;
  tnn::Sequential model(tnn::Conv2d(tnn::Conv2dOptions(1, 16, 3).padding(1)), tnn::BatchNorm2d(16),
                        tnn::ReLU(tnn::ReLUOptions(true)), tnn::MaxPool2d(2),
                        tnn::Conv2d(tnn::Conv2dOptions(16, 32, 3).padding(1)), tnn::BatchNorm2d(32),
                        tnn::ReLU(tnn::ReLUOptions(true)), tnn::AdaptiveAvgPool2d(2),
                        tnn::Flatten(), tnn::Linear(128, 10));
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(1e-2));
  for (auto _ : state) {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
}
BENCHMARK(BM_Libtorch_DigitsCnnStep)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mutagrad_vs_libtorch
