// Convolution on the CPU (issue 37): conv2d forward + backward of an image batch (64 x 3 x
// 32 x 32, 64 filters of 3 x 3, padding 1, float32: oneDNN, tensor/cpu/convolution.cc) and one
// training step of the main job's digits CNN through nn/ modules (examples/train_digits.cc's
// DigitsCnn, a batch of 32 8x8 images, cross entropy, AdamW).
//
//   ./bazelw run //benchmarks:conv_benchmark
//   REPS=5 tools/torch2/compare_benchmarks.sh conv   # with libtorch 1.13 and 2.x, same run
//
// libtorch_conv_cases.cc has the same cases through torch::nn. docs/performance/convolution.md has
// the figures.
#include <benchmark/benchmark.h>

#include <memory>

#include "mutagrad.h"
#include "nn/nn.h"
#include "optim/optim.h"

namespace mutagrad {
namespace {

void BM_Conv2dForwardBackward(benchmark::State& state) {
  Generator gen(0);
  const Tensor x = rand({64, 3, 32, 32}, gen).requires_grad_();
  const Tensor w = (rand({64, 3, 3, 3}, gen) - 0.5).detach().requires_grad_();
  const Tensor b = zeros({64}).requires_grad_();
  for (auto _ : state) {
    Tensor y = conv2d(x, w, b, {1}, {1});
    y.sum().backward();
    x.set_grad(Tensor());
    w.set_grad(Tensor());
    b.set_grad(Tensor());
    benchmark::DoNotOptimize(y.raw_data());
  }
}
BENCHMARK(BM_Conv2dForwardBackward)->Unit(benchmark::kMicrosecond);

void BM_DigitsCnnStep(benchmark::State& state) {
  Generator gen(0);
  const Tensor x = rand({32, 1, 8, 8}, gen);
  const Tensor y = randint(0, 10, {32}, gen);
  auto model = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(nn::ConvOptions(1, 16, 3).padding(1)),
      std::make_shared<nn::BatchNorm2d>(16), std::make_shared<nn::ReLU>(true),
      std::make_shared<nn::MaxPool2d>(2),
      std::make_shared<nn::Conv2d>(nn::ConvOptions(16, 32, 3).padding(1)),
      std::make_shared<nn::BatchNorm2d>(32), std::make_shared<nn::ReLU>(true),
      std::make_shared<nn::AdaptiveAvgPool2d>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(128, 10));
  optim::AdamW opt(model->parameters(), optim::AdamWOptions(1e-3).weight_decay(1e-2));
  nn::CrossEntropyLoss criterion;
  for (auto _ : state) {
    opt.zero_grad();
    Tensor loss = criterion((*model)(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.raw_data());
  }
}
BENCHMARK(BM_DigitsCnnStep)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mutagrad
