// libtorch (PyTorch's C++ API) counterparts of the cases in autograd_benchmark.cc: the same
// 100-op chain on 4-element float32 tensors and the same 2-layer MLP step (same shapes, SGD
// under a no-grad guard, gradients dropped after each step). Linked next to those cases into
// //benchmarks:autograd_vs_libtorch so that both are timed in one run (tags = ["manual"]: needs
// `sudo apt-get install libtorch-dev`). libtorch runs with at::set_num_threads(2), like ours.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <vector>

namespace mutagrad_vs_libtorch {
namespace {

constexpr int kChain = 100;

// The op sequence of tiny_chain in autograd_benchmark.cc.
torch::Tensor tiny_chain(const torch::Tensor& x, const torch::Tensor& c) {
  torch::Tensor y = x;
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

void BM_Libtorch_TinyChain(benchmark::State& state) {
  at::set_num_threads(2);
  const bool record = state.range(0) != 0;
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({4}).requires_grad_(record);
  torch::Tensor c = torch::randn({4});
  torch::AutoGradMode mode(record);
  for (auto _ : state) {
    torch::Tensor y = tiny_chain(x, c);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  set_per_op(state);
  state.SetLabel(record ? "record" : "no_grad");
}
BENCHMARK(BM_Libtorch_TinyChain)->Arg(0)->Arg(1);

void BM_Libtorch_TinyChainBackward(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({4}).requires_grad_();
  torch::Tensor c = torch::randn({4});
  torch::Tensor seed = torch::ones({4});
  for (auto _ : state) {
    torch::Tensor y = tiny_chain(x, c);
    y.backward(seed);
    benchmark::DoNotOptimize(x.grad().data_ptr());
  }
  set_per_op(state);
}
BENCHMARK(BM_Libtorch_TinyChainBackward);

// One SGD step of relu(x W1 + b1) W2 + b2 with a mean squared error loss.
void BM_Libtorch_MlpTrainingStep(benchmark::State& state) {
  at::set_num_threads(2);
  const int64_t batch = 32, in = 64, hidden = 128, out = 10;
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({batch, in});
  torch::Tensor target = torch::randn({batch, out});
  torch::Tensor w1 = (torch::randn({in, hidden}) * 0.1).requires_grad_();
  torch::Tensor b1 = torch::zeros({hidden}).requires_grad_();
  torch::Tensor w2 = (torch::randn({hidden, out}) * 0.1).requires_grad_();
  torch::Tensor b2 = torch::zeros({out}).requires_grad_();
  std::vector<torch::Tensor> params = {w1, b1, w2, b2};
  for (auto _ : state) {
    torch::Tensor h = (x.matmul(w1) + b1).relu();
    torch::Tensor pred = h.matmul(w2) + b2;
    torch::Tensor loss = (pred - target).pow(2).mean();
    loss.backward();
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : params) {
      p.sub_(p.grad() * 0.01);
      p.mutable_grad() = torch::Tensor();
    }
    benchmark::DoNotOptimize(loss.data_ptr());
  }
}
BENCHMARK(BM_Libtorch_MlpTrainingStep);

}  // namespace
}  // namespace mutagrad_vs_libtorch
