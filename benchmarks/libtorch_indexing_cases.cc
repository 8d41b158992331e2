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
constexpr int64_t k64K = int64_t{1} << 16;
constexpr int64_t k100K = 100000;

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

// x.scatter_add_(0, idx, src): 1M float32 values into 64K segments (ours:
// BM_ScatterAdd1MInto64K).
void BM_Libtorch_ScatterAdd1MInto64K(benchmark::State& state) {
  use_two_threads();
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(45);
  at::Tensor x = at::zeros({k64K}, at::kFloat);
  at::Tensor idx = at::randint(0, k64K, {k1M}, gen, at::kLong);
  at::Tensor src = at::rand({k1M}, gen, at::kFloat);
  for (auto _ : state) {
    x.scatter_add_(0, idx, src);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_Libtorch_ScatterAdd1MInto64K)->Unit(benchmark::kMicrosecond);

// x.index_add_(0, idx, src): 1M rows of 64 float32 into a 100000 x 64 table (ours:
// BM_IndexAdd1MRowsInto100K).
void BM_Libtorch_IndexAdd1MRowsInto100K(benchmark::State& state) {
  use_two_threads();
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(46);
  at::Tensor x = at::zeros({k100K, 64}, at::kFloat);
  at::Tensor idx = at::randint(0, k100K, {k1M}, gen, at::kLong);
  at::Tensor src = at::rand({k1M, 64}, gen, at::kFloat);
  for (auto _ : state) {
    x.index_add_(0, idx, src);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M * 64);
}
BENCHMARK(BM_Libtorch_IndexAdd1MRowsInto100K)->Unit(benchmark::kMicrosecond);

// x.gather(dim, idx): 1M elements of 4M float32, 1-D or [1024, 4096] along dim 1 (ours:
// BM_Gather1MFrom4M).
void BM_Libtorch_Gather1MFrom4M(benchmark::State& state) {
  use_two_threads();
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(47);
  const bool two_d = state.range(0) == 2;
  at::Tensor x = two_d ? at::rand({1024, 4096}, gen, at::kFloat) : at::rand({k4M}, gen, at::kFloat);
  at::Tensor idx = two_d ? at::randint(0, 4096, {1024, 1024}, gen, at::kLong)
                         : at::randint(0, k4M, {k1M}, gen, at::kLong);
  const int64_t dim = two_d ? 1 : 0;
  for (auto _ : state) {
    at::Tensor y = x.gather(dim, idx);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_Libtorch_Gather1MFrom4M)
    ->ArgName("dims")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond);

// x.scatter_(1, idx, src) or x.scatter_add_(1, idx, src) on [1024, 4096] (ours:
// BM_Scatter2DAlongDim1).
void BM_Libtorch_Scatter2DAlongDim1(benchmark::State& state) {
  use_two_threads();
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(53);
  at::Tensor x = at::rand({1024, 4096}, gen, at::kFloat);
  at::Tensor idx = at::randint(0, 4096, {1024, 1024}, gen, at::kLong);
  at::Tensor src = at::rand({1024, 1024}, gen, at::kFloat);
  const bool add = state.range(0) != 0;
  for (auto _ : state) {
    if (add) {
      x.scatter_add_(1, idx, src);
    } else {
      x.scatter_(1, idx, src);
    }
    benchmark::DoNotOptimize(x.data_ptr());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_Libtorch_Scatter2DAlongDim1)
    ->ArgName("add")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mutagrad_vs_libtorch
