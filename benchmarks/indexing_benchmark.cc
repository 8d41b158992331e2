// Indexing benchmarks (Google Benchmark), with memcpy baselines for ratios. Run:
//   bazel run -c opt //benchmarks:indexing_benchmark
// Figures are recorded in docs/performance.md. A benchmark, never a timed test.
// //benchmarks:indexing_vs_libtorch links these cases with libtorch's counterparts
// (libtorch_indexing_cases.cc) to time both in one run.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "mutagrad.h"

namespace mutagrad {
namespace {

using indexing::Slice;

constexpr int64_t k4M = int64_t{4} << 20;
constexpr int64_t k1M = int64_t{1} << 20;

// Baseline: copying `bytes` with memcpy.
void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Memcpy)->Arg(4 * k4M)->Arg(4 * 4096 * 4094)->Unit(benchmark::kMicrosecond);

// x[{1, 2}] = 3.0 on a 3x3 float32 tensor: the single-element fast path.
void BM_SetItemTiny(benchmark::State& state) {
  Tensor x = zeros({3, 3}, kFloat32);
  for (auto _ : state) {
    x[{1, 2}] = 3.0;
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(x.version());
}
BENCHMARK(BM_SetItemTiny);

// x[{Slice(), Slice(1, -1)}] = y on 4096x4096 float32 (Path A: a view and a strided copy).
void BM_SetItemSlice4096(benchmark::State& state) {
  Tensor x = zeros({4096, 4096}, kFloat32);
  Tensor y = ones({4096, 4094}, kFloat32);
  for (auto _ : state) {
    x[{Slice(), Slice(1, -1)}] = y;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 4096 * 4094 * 4);
}
BENCHMARK(BM_SetItemSlice4096)->Unit(benchmark::kMicrosecond);

// x.index_put_({idx}, v, acc): 1M random int64 indices into 4M float32.
void BM_IndexPut1MInto4M(benchmark::State& state) {
  const bool accumulate = state.range(0) != 0;
  Generator gen(42);
  Tensor x = zeros({k4M}, kFloat32);
  Tensor idx = randint(0, k4M, {k1M}, gen);
  Tensor v = rand({k1M}, gen, kFloat32);
  for (auto _ : state) {
    x.index_put_({idx}, v, accumulate);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_IndexPut1MInto4M)
    ->ArgName("accumulate")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

// x.index_put_({idx}, v, acc) where all 1M indices are the same element (skewed duplicates).
void BM_IndexPutSkewed1M(benchmark::State& state) {
  const bool accumulate = state.range(0) != 0;
  Generator gen(44);
  Tensor x = zeros({k4M}, kFloat32);
  Tensor idx = zeros({k1M}, kInt64);
  Tensor v = rand({k1M}, gen, kFloat32);
  for (auto _ : state) {
    x.index_put_({idx}, v, accumulate);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_IndexPutSkewed1M)
    ->ArgName("accumulate")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

// x[{mask}] = 1.0 with a 25%-true mask over 4M float32 elements (the masked-fill path).
void BM_SetItemMask4M(benchmark::State& state) {
  Generator gen(7);
  Tensor x = zeros({k4M}, kFloat32);
  Tensor mask = native::binary(BinaryOp::kLt, rand({k4M}, gen), Scalar(0.25));
  for (auto _ : state) {
    x[{mask}] = 1.0;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k4M);
}
BENCHMARK(BM_SetItemMask4M)->Unit(benchmark::kMicrosecond);

// x.index({idx}): gathering 1M random elements of 4M float32 (for reference).
void BM_Index1MFrom4M(benchmark::State& state) {
  Generator gen(43);
  Tensor x = rand({k4M}, gen, kFloat32);
  Tensor idx = randint(0, k4M, {k1M}, gen);
  for (auto _ : state) {
    Tensor y = x.index({idx});
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_Index1MFrom4M)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mutagrad
