// libtorch (PyTorch's C++ API) counterparts of the cases in indexing_benchmark.cc: same shapes,
// dtypes and index distributions. Linked next to those cases into //benchmarks:indexing_vs_libtorch
// so that both are timed in one run (tags = ["manual"]: needs `sudo apt-get install libtorch-dev`).
// libtorch runs with at::set_num_threads(2), the thread count of our kernels.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cstdint>

namespace mutagrad_vs_libtorch {
namespace {

using at::indexing::Slice;

constexpr int64_t k4M = int64_t{4} << 20;
constexpr int64_t k1M = int64_t{1} << 20;

void use_two_threads() { at::set_num_threads(2); }

// x.index_put_({1, 2}, 3.0) on a 3x3 float32 tensor (ours: BM_SetItemTiny).
void BM_Libtorch_SetItemTiny(benchmark::State& state) {
  use_two_threads();
  at::Tensor x = at::zeros({3, 3}, at::kFloat);
  for (auto _ : state) {
    x.index_put_({1, 2}, 3.0);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(x.data_ptr());
}
BENCHMARK(BM_Libtorch_SetItemTiny);

// x.index_put_({Slice(), Slice(1, -1)}, y) on 4096x4096 float32 (ours: BM_SetItemSlice4096).
void BM_Libtorch_SetItemSlice4096(benchmark::State& state) {
  use_two_threads();
  at::Tensor x = at::zeros({4096, 4096}, at::kFloat);
  at::Tensor y = at::ones({4096, 4094}, at::kFloat);
  for (auto _ : state) {
    x.index_put_({Slice(), Slice(1, -1)}, y);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 4096 * 4094 * 4);
}
BENCHMARK(BM_Libtorch_SetItemSlice4096)->Unit(benchmark::kMicrosecond);

// x.index_put_({idx}, v, acc): 1M random int64 indices into 4M float32 (ours: BM_IndexPut1MInto4M).
void BM_Libtorch_IndexPut1MInto4M(benchmark::State& state) {
  use_two_threads();
  const bool accumulate = state.range(0) != 0;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(42);
  at::Tensor x = at::zeros({k4M}, at::kFloat);
  at::Tensor idx = at::randint(0, k4M, {k1M}, gen, at::kLong);
  at::Tensor v = at::rand({k1M}, gen, at::kFloat);
  for (auto _ : state) {
    x.index_put_({idx}, v, accumulate);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_Libtorch_IndexPut1MInto4M)
    ->ArgName("accumulate")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

// x.index_put_({mask}, 1.0) with a 25%-true mask over 4M float32 (ours: BM_SetItemMask4M).
void BM_Libtorch_SetItemMask4M(benchmark::State& state) {
  use_two_threads();
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(7);
  at::Tensor x = at::zeros({k4M}, at::kFloat);
  at::Tensor mask = at::rand({k4M}, gen, at::kFloat) < 0.25;
  for (auto _ : state) {
    x.index_put_({mask}, 1.0);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k4M);
}
BENCHMARK(BM_Libtorch_SetItemMask4M)->Unit(benchmark::kMicrosecond);

// x.index({idx}): gathering 1M random elements of 4M float32 (ours: BM_Index1MFrom4M).
void BM_Libtorch_Index1MFrom4M(benchmark::State& state) {
  use_two_threads();
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(43);
  at::Tensor x = at::rand({k4M}, gen, at::kFloat);
  at::Tensor idx = at::randint(0, k4M, {k1M}, gen, at::kLong);
  for (auto _ : state) {
    at::Tensor y = x.index({idx});
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_Libtorch_Index1MFrom4M)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mutagrad_vs_libtorch
