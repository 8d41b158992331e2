// Indexing benchmarks (Google Benchmark), with memcpy baselines for ratios. Run:
//   bazel run -c opt //benchmarks:indexing_benchmark
// Figures are recorded in docs/performance/indexing.md. A benchmark, never a timed test.
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
constexpr int64_t k64K = int64_t{1} << 16;
constexpr int64_t k100K = 100000;

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

// The scatter family (issue 12). None resets self between calls (as the index_put_ cases): an
// accumulating write costs the same whatever self holds.

// x.scatter_add_(0, idx, src): 1M float32 values summed into 64K segments (x 1-D of 65536, idx
// 1M random int64 in [0, 65536)). Duplicates are summed in index order.
void BM_ScatterAdd1MInto64K(benchmark::State& state) {
  Generator gen(45);
  Tensor x = zeros({k64K}, kFloat32);
  Tensor idx = randint(0, k64K, {k1M}, gen);
  Tensor src = rand({k1M}, gen, kFloat32);
  for (auto _ : state) {
    x.scatter_add_(0, idx, src);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_ScatterAdd1MInto64K)->Unit(benchmark::kMicrosecond);

// x.index_add_(0, idx, src): 1M rows of 64 float32 (src 1M x 64, 256 MiB) added into a
// 100000 x 64 float32 table at 1M random row indices in [0, 100000).
void BM_IndexAdd1MRowsInto100K(benchmark::State& state) {
  Generator gen(46);
  Tensor x = zeros({k100K, 64}, kFloat32);
  Tensor idx = randint(0, k100K, {k1M}, gen);
  Tensor src = rand({k1M, 64}, gen, kFloat32);
  for (auto _ : state) {
    x.index_add_(0, idx, src);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M * 64);
}
BENCHMARK(BM_IndexAdd1MRowsInto100K)->Unit(benchmark::kMicrosecond);

// x.gather(dim, idx): 1M elements of 4M float32. dims:1 is x 1-D of 4M, idx 1M random in
// [0, 4M) (the same elements as BM_Index1MFrom4M); dims:2 is x [1024, 4096] gathered along
// dim 1 with idx [1024, 1024] random in [0, 4096) (a row coordinate per element as well).
void BM_Gather1MFrom4M(benchmark::State& state) {
  Generator gen(47);
  const bool two_d = state.range(0) == 2;
  Tensor x = two_d ? rand({1024, 4096}, gen, kFloat32) : rand({k4M}, gen, kFloat32);
  Tensor idx = two_d ? randint(0, 4096, {1024, 1024}, gen) : randint(0, k4M, {k1M}, gen);
  const int64_t dim = two_d ? 1 : 0;
  for (auto _ : state) {
    Tensor y = x.gather(dim, idx);
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_Gather1MFrom4M)->ArgName("dims")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// x.scatter_(1, idx, src) (add:0) or x.scatter_add_(1, idx, src) (add:1): 1024 random values
// into each 16 KiB row of a [1024, 4096] float32 x (the writes of BM_Gather1MFrom4M/dims:2).
void BM_Scatter2DAlongDim1(benchmark::State& state) {
  Generator gen(53);
  Tensor x = rand({1024, 4096}, gen, kFloat32);
  Tensor idx = randint(0, 4096, {1024, 1024}, gen);
  Tensor src = rand({1024, 1024}, gen, kFloat32);
  const bool add = state.range(0) != 0;
  for (auto _ : state) {
    if (add) {
      x.scatter_add_(1, idx, src);
    } else {
      x.scatter_(1, idx, src);
    }
    benchmark::DoNotOptimize(x.raw_data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_Scatter2DAlongDim1)->ArgName("add")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mutagrad
