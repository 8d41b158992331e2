// The optimizers' cost (optim/): the tiny in-place scalar op they are built from (x.add_(2.0)
// on 1 and 1,000 float32 elements: the fast path of tensor/native/scalar_inplace.h), and one
// SGD-momentum / AdamW step over the parameters of an MLP (64-128-10: //examples:train_digits's
// model; 1024-1024-10: a larger one), gradients set once.
//
//   ./bazelw run //benchmarks:optim_benchmark
//
// //benchmarks:optim_vs_libtorch links these cases with libtorch's counterparts
// (libtorch_optim_cases.cc: torch::optim::SGD / AdamW) to time both in one run. Figures:
// docs/performance/autograd-training.md.
#include <benchmark/benchmark.h>

#include <vector>

#include "mutagrad.h"
#include "optim/optim.h"

namespace mutagrad {
namespace {

void BM_ScalarAddInplace(benchmark::State& state) {
  Tensor x = zeros({state.range(0)}, TensorOptions(kFloat32));
  for (auto _ : state) {
    x.add_(2.0);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(x.version());
}
BENCHMARK(BM_ScalarAddInplace)->ArgName("n")->Arg(1)->Arg(1000);

// The parameters of an MLP in -> hidden -> 10, each with a gradient.
std::vector<Tensor> mlp_params(int64_t in, int64_t hidden) {
  Generator gen(0);
  std::vector<Tensor> params = {randn({hidden, in}, gen, kFloat32), randn({hidden}, gen, kFloat32),
                                randn({10, hidden}, gen, kFloat32), randn({10}, gen, kFloat32)};
  for (Tensor& p : params) {
    p.requires_grad_();
    p.set_grad(randn(p.sizes(), gen, kFloat32));
  }
  return params;
}

// 16 layers of a 128 x 256 weight, a bias and a norm's weight and bias: 64 parameters of 0.53M
// elements in all, each below the two-thread threshold (Note [One pass per group] in
// optim/fused.h), as in a deep network's many mid-sized tensors.
std::vector<Tensor> deep_params() {
  Generator gen(0);
  std::vector<Tensor> params;
  for (int layer = 0; layer < 16; ++layer) {
    for (const std::vector<int64_t>& sizes :
         {std::vector<int64_t>{128, 256}, std::vector<int64_t>{128}, std::vector<int64_t>{128},
          std::vector<int64_t>{128}}) {
      Tensor p = randn(sizes, gen, kFloat32).requires_grad_();
      p.set_grad(randn(p.sizes(), gen, kFloat32));
      params.push_back(p);
    }
  }
  return params;
}

template <typename Opt, typename Options>
void run_step(benchmark::State& state, const Options& options) {
  const int64_t in = state.range(0);
  std::vector<Tensor> params = in == 0 ? deep_params() : mlp_params(in, in == 64 ? 128 : 1024);
  Opt opt(params, options);
  for (auto _ : state) {
    opt.step();
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(params[0].version());
}

void BM_SGDMomentumStep(benchmark::State& state) {
  run_step<optim::SGD>(state, optim::SGDOptions(1e-3).momentum(0.9));
}
// in:0 is deep_params().
BENCHMARK(BM_SGDMomentumStep)->ArgName("in")->Arg(64)->Arg(1024)->Arg(0);

void BM_AdamWStep(benchmark::State& state) {
  run_step<optim::AdamW>(state, optim::AdamWOptions(1e-3).weight_decay(1e-2));
}
BENCHMARK(BM_AdamWStep)->ArgName("in")->Arg(64)->Arg(1024)->Arg(0);

}  // namespace
}  // namespace mutagrad
