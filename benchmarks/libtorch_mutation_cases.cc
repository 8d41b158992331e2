// libtorch (PyTorch's C++ API) counterparts of the cases in mutation_benchmark.cc: the tiny
// in-place write (plain, and into a tensor a live graph saved, under a no-grad guard), the
// in-place write into a view of a tensor that requires grad (libtorch 1.13 regenerates the
// view's grad_fn as AsStridedBackward0 for strided tensors: there is no replay switch), the
// same with backward, and the baseline of BM_SetItemSavedSnapshot (libtorch has no snapshot
// policy). Same shapes and dtypes. Linked next to those cases into
// //benchmarks:mutation_vs_libtorch so that both are timed in one run (tags = ["manual"]:
// needs `sudo apt-get install libtorch-dev`). libtorch runs with at::set_num_threads(2), like
// ours.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

namespace mutagrad_vs_libtorch {
namespace {

void BM_Libtorch_InplaceTiny(benchmark::State& state) {
  at::set_num_threads(2);
  const bool saved = state.range(0) != 0;
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({4});
  torch::Tensor w = torch::randn({4}).requires_grad_();
  torch::Tensor y;  // keeps the graph that saved x alive
  if (saved) y = w * x;
  torch::AutoGradMode grad_mode(!saved);
  for (auto _ : state) {
    x.add_(1.0);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(x._version());
  benchmark::DoNotOptimize(y.defined());
  state.SetLabel(saved ? "saved" : "plain");
}
BENCHMARK(BM_Libtorch_InplaceTiny)->ArgName("saved")->Arg(0)->Arg(1);

void BM_Libtorch_InplaceOnView(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  torch::Tensor a = torch::randn({8}).requires_grad_();
  for (auto _ : state) {
    torch::Tensor h = a * 2.0;
    torch::Tensor v = h.narrow(0, 1, 2);
    v.mul_(3.0);
    benchmark::DoNotOptimize(v.grad_fn().get());
    benchmark::DoNotOptimize(h.data_ptr());
  }
  state.SetLabel("as_strided");
}
BENCHMARK(BM_Libtorch_InplaceOnView);

void BM_Libtorch_InplaceOnViewBackward(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  torch::Tensor a = torch::randn({8}).requires_grad_();
  for (auto _ : state) {
    torch::Tensor h = a * 2.0;
    h.narrow(0, 1, 2).mul_(3.0);
    h.sum().backward();
    benchmark::DoNotOptimize(a.grad().data_ptr());
  }
  state.SetLabel("as_strided");
}
BENCHMARK(BM_Libtorch_InplaceOnViewBackward);

// The baseline of BM_SetItemSavedSnapshot (mode 0): no write.
void BM_Libtorch_SetItemSavedSnapshot(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  torch::Tensor a = torch::randn({8}).requires_grad_();
  for (auto _ : state) {
    torch::Tensor h = a * 2.0;
    torch::Tensor loss = (h * h).sum();
    loss.backward();
    benchmark::DoNotOptimize(a.grad().data_ptr());
  }
  state.SetLabel("no write");
}
BENCHMARK(BM_Libtorch_SetItemSavedSnapshot)->ArgName("mode")->Arg(0);

}  // namespace
}  // namespace mutagrad_vs_libtorch
