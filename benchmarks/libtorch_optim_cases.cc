// libtorch (PyTorch's C++ API) counterparts of the cases in optim_benchmark.cc: the tiny
// in-place scalar add_, and torch::optim::SGD (momentum) / AdamW steps over the same MLP
// parameters. Linked next to those cases into //benchmarks:optim_vs_libtorch so that both are
// timed in one run (tags = ["manual"]: needs libtorch-dev). libtorch runs with
// at::set_num_threads(2), like ours.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <vector>

namespace mutagrad_vs_libtorch {
namespace {

void BM_Libtorch_ScalarAddInplace(benchmark::State& state) {
  at::set_num_threads(2);
  torch::Tensor x = torch::zeros({state.range(0)});
  for (auto _ : state) {
    x.add_(2.0);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(x._version());
}
BENCHMARK(BM_Libtorch_ScalarAddInplace)->ArgName("n")->Arg(1)->Arg(1000);

std::vector<torch::Tensor> mlp_params(int64_t in, int64_t hidden) {
  torch::manual_seed(0);
  std::vector<torch::Tensor> params = {torch::randn({hidden, in}), torch::randn({hidden}),
                                       torch::randn({10, hidden}), torch::randn({10})};
  for (torch::Tensor& p : params) {
    p.requires_grad_();
    p.mutable_grad() = torch::randn(p.sizes());
  }
  return params;
}

// optim_benchmark.cc's deep_params(): 16 layers of 128 x 256 + 3 x 128 parameters.
std::vector<torch::Tensor> deep_params() {
  torch::manual_seed(0);
  std::vector<torch::Tensor> params;
  for (int layer = 0; layer < 16; ++layer) {
    for (std::vector<int64_t> sizes : {std::vector<int64_t>{128, 256}, std::vector<int64_t>{128},
                                       std::vector<int64_t>{128}, std::vector<int64_t>{128}}) {
      torch::Tensor p = torch::randn(sizes).requires_grad_();
      p.mutable_grad() = torch::randn(p.sizes());
      params.push_back(p);
    }
  }
  return params;
}

template <typename Opt, typename Options>
void run_step(benchmark::State& state, const Options& options) {
  at::set_num_threads(2);
  const int64_t in = state.range(0);
  std::vector<torch::Tensor> params =
      in == 0 ? deep_params() : mlp_params(in, in == 64 ? 128 : 1024);
  Opt opt(params, options);
  for (auto _ : state) {
    opt.step();
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(params[0]._version());
}

void BM_Libtorch_SGDMomentumStep(benchmark::State& state) {
  run_step<torch::optim::SGD>(state, torch::optim::SGDOptions(1e-3).momentum(0.9));
}
BENCHMARK(BM_Libtorch_SGDMomentumStep)->ArgName("in")->Arg(64)->Arg(1024)->Arg(0);

void BM_Libtorch_AdamWStep(benchmark::State& state) {
  run_step<torch::optim::AdamW>(state, torch::optim::AdamWOptions(1e-3).weight_decay(1e-2));
}
BENCHMARK(BM_Libtorch_AdamWStep)->ArgName("in")->Arg(64)->Arg(1024)->Arg(0);

}  // namespace
}  // namespace mutagrad_vs_libtorch
