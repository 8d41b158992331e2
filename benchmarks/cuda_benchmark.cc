// CUDA benchmarks: the indexing cases of indexing_benchmark.cc on the CUDA device, plus a
// device-to-device copy baseline (the ratio's denominator, as memcpy is on the CPU), a full
// reduction, a matmul, an element-wise exp and a conv2d forward + backward. Every iteration waits
// for the device (cuda::synchronize), so a figure is the kernels' time, not the launch's.
//
//   ./bazelw run --config=cuda //benchmarks:cuda_benchmark        # a GPU: device figures
//   ./bazelw run --config=cuda_host //benchmarks:cuda_benchmark   # host-run: CPU figures
//   python3 benchmarks/torch_cuda_cases.py                        # PyTorch, same cases
//
// In the host-run build the "device" is the CPU running the kernels through Thrust's OpenMP
// system: those figures are CPU figures (docs/performance/cuda.md labels them so). Without a CUDA
// device every case reports the reason and is skipped.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/allocator.h"
#include "mutagrad.h"

namespace mutagrad {
namespace {

using indexing::Slice;

constexpr int64_t k4M = int64_t{4} << 20;
constexpr int64_t k1M = int64_t{1} << 20;
const Device kGpu(DeviceType::CUDA, 0);

// False (and the benchmark skipped with the reason) when there is no CUDA device.
bool have_device(benchmark::State& state) {
  if (cuda::is_available()) {
    state.SetLabel(cuda::device_name());
    return true;
  }
  state.SkipWithError(("no CUDA device: " + cuda::unavailable_reason()).c_str());
  return false;
}

// Baseline: a device-to-device copy of `bytes` (contiguous, one dtype: a cudaMemcpyAsync).
void BM_CudaCopy(benchmark::State& state) {
  if (!have_device(state)) return;
  const int64_t n = state.range(0) / 4;
  Tensor src = ones({n}, TensorOptions(kFloat32).device(kGpu));
  Tensor dst = zeros({n}, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    dst.copy_(src);
    cuda::synchronize();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_CudaCopy)->Arg(4 * k4M)->Arg(4 * 4096 * 4094)->Unit(benchmark::kMicrosecond);

// x[{1, 2}] = 3.0 on a 3x3 float32 tensor: one element, so the launch and sync dominate.
void BM_CudaSetItemTiny(benchmark::State& state) {
  if (!have_device(state)) return;
  Tensor x = zeros({3, 3}, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    x[{1, 2}] = 3.0;
    cuda::synchronize();
  }
}
BENCHMARK(BM_CudaSetItemTiny)->Unit(benchmark::kMicrosecond);

// x[{Slice(), Slice(1, -1)}] = y on 4096x4096 float32: a strided copy kernel.
void BM_CudaSetItemSlice4096(benchmark::State& state) {
  if (!have_device(state)) return;
  Tensor x = zeros({4096, 4096}, TensorOptions(kFloat32).device(kGpu));
  Tensor y = ones({4096, 4094}, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    x[{Slice(), Slice(1, -1)}] = y;
    cuda::synchronize();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 4096 * 4094 * 4);
}
BENCHMARK(BM_CudaSetItemSlice4096)->Unit(benchmark::kMicrosecond);

// x.index_put_({idx}, v, acc): 1M random int64 indices into 4M float32, deterministic (Note
// [index_put_ without a sort] and Note [Deterministic index_put_ on the device]).
void BM_CudaIndexPut1MInto4M(benchmark::State& state) {
  if (!have_device(state)) return;
  const bool accumulate = state.range(0) != 0;
  Generator gen(42, kGpu);
  Tensor x = zeros({k4M}, TensorOptions(kFloat32).device(kGpu));
  Tensor idx = randint(0, k4M, {k1M}, gen, TensorOptions(kInt64).device(kGpu));
  Tensor v = rand({k1M}, gen, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    x.index_put_({idx}, v, accumulate);
    cuda::synchronize();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_CudaIndexPut1MInto4M)
    ->ArgName("accumulate")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

// x.index_put_({idx}, v, acc) where all 1M indices are the same element: the skewed worst
// case of the sort-based kernel (one thread adds the 1M values in index order).
void BM_CudaIndexPutSkewed1M(benchmark::State& state) {
  if (!have_device(state)) return;
  const bool accumulate = state.range(0) != 0;
  Generator gen(44, kGpu);
  Tensor x = zeros({k4M}, TensorOptions(kFloat32).device(kGpu));
  Tensor idx = zeros({k1M}, TensorOptions(kInt64).device(kGpu));
  Tensor v = rand({k1M}, gen, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    x.index_put_({idx}, v, accumulate);
    cuda::synchronize();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_CudaIndexPutSkewed1M)
    ->ArgName("accumulate")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

// x[{mask}] = 1.0 with a 25%-true mask over 4M float32 elements (masked fill).
void BM_CudaSetItemMask4M(benchmark::State& state) {
  if (!have_device(state)) return;
  Generator gen(7, kGpu);
  Tensor x = zeros({k4M}, TensorOptions(kFloat32).device(kGpu));
  Tensor mask = rand({k4M}, gen, TensorOptions(kFloat32).device(kGpu)) < 0.25;
  for (auto _ : state) {
    x[{mask}] = 1.0;
    cuda::synchronize();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k4M);
}
BENCHMARK(BM_CudaSetItemMask4M)->Unit(benchmark::kMicrosecond);

// x.index({idx}): gathering 1M random elements of 4M float32.
void BM_CudaIndex1MFrom4M(benchmark::State& state) {
  if (!have_device(state)) return;
  Generator gen(43, kGpu);
  Tensor x = rand({k4M}, gen, TensorOptions(kFloat32).device(kGpu));
  Tensor idx = randint(0, k4M, {k1M}, gen, TensorOptions(kInt64).device(kGpu));
  for (auto _ : state) {
    Tensor y = x.index({idx});
    cuda::synchronize();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_CudaIndex1MFrom4M)->Unit(benchmark::kMicrosecond);

// x.sort() of one line of 1M float32 (the radix sort of Note [Long lines: a radix sort] in
// cuda/sort.cu).
void BM_CudaSort1M(benchmark::State& state) {
  if (!have_device(state)) return;
  Generator gen(45, kGpu);
  Tensor x = rand({k1M}, gen, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    auto sorted = sort(x);
    cuda::synchronize();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_CudaSort1M)->Unit(benchmark::kMicrosecond);

// x.cumsum(0) of one line of 1M float32.
void BM_CudaCumsum1M(benchmark::State& state) {
  if (!have_device(state)) return;
  Generator gen(46, kGpu);
  Tensor x = rand({k1M}, gen, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    Tensor y = x.cumsum(0);
    cuda::synchronize();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_CudaCumsum1M)->Unit(benchmark::kMicrosecond);

// The same line on the CPU backend (Note [Blocked association order] in tensor/blocked_order.h),
// and, as the baseline of the same run, the loop the CPU ran before that order: one thread
// folding the line in order in double. CPU figures in every build.
void BM_CpuCumsum1M(benchmark::State& state) {
  Generator gen(46);
  Tensor x = rand({k1M}, gen, kFloat32);
  for (auto _ : state) {
    Tensor y = x.cumsum(0);
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_CpuCumsum1M)->Unit(benchmark::kMicrosecond);

void BM_CpuCumsum1MInOrder(benchmark::State& state) {
  Generator gen(46);
  Tensor x = rand({k1M}, gen, kFloat32);
  for (auto _ : state) {
    Tensor y = empty({k1M}, kFloat32);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    double acc = 0;
    for (int64_t i = 0; i < k1M; ++i) {
      acc += static_cast<double>(in[i]);
      out[i] = static_cast<float>(acc);
    }
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * k1M);
}
BENCHMARK(BM_CpuCumsum1MInOrder)->Unit(benchmark::kMicrosecond);

// x.sum() over 4M float32 (the chunked deterministic reduction).
void BM_CudaSum4M(benchmark::State& state) {
  if (!have_device(state)) return;
  Generator gen(1, kGpu);
  Tensor x = rand({k4M}, gen, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    Tensor s = x.sum();
    cuda::synchronize();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k4M * 4);
}
BENCHMARK(BM_CudaSum4M)->Unit(benchmark::kMicrosecond);

// a.matmul(b), n x n float32 (cuBLAS on a GPU; the Thrust kernel in the host-run build).
void BM_CudaMatmul(benchmark::State& state) {
  if (!have_device(state)) return;
  const int64_t n = state.range(0);
  Generator gen(2, kGpu);
  Tensor a = rand({n, n}, gen, TensorOptions(kFloat32).device(kGpu));
  Tensor b = rand({n, n}, gen, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    Tensor c = a.matmul(b);
    cuda::synchronize();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 2 * n * n * n);
}
BENCHMARK(BM_CudaMatmul)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// x.exp() over 4M float32.
void BM_CudaExp4M(benchmark::State& state) {
  if (!have_device(state)) return;
  Generator gen(3, kGpu);
  Tensor x = rand({k4M}, gen, TensorOptions(kFloat32).device(kGpu));
  for (auto _ : state) {
    Tensor y = x.exp();
    cuda::synchronize();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k4M * 8);
}
BENCHMARK(BM_CudaExp4M)->Unit(benchmark::kMicrosecond);

// conv2d forward + backward, float32: x [64, 3, 32, 32], w [64, 3, 3, 3], bias, padding 1;
// y.sum().backward() gives the input, weight and bias gradients (cuDNN's forward, backward data
// and backward filter on a GPU, deterministic algorithms: Note [Deterministic cuDNN
// convolutions] in cuda/cudnn.cc). The gradients are reset every iteration, so none accumulate.
void BM_CudaConv2dForwardBackward(benchmark::State& state) {
  if (!have_device(state)) return;
  Generator gen(4, kGpu);
  const TensorOptions opts = TensorOptions(kFloat32).device(kGpu);
  Tensor x = randn({64, 3, 32, 32}, gen, opts).requires_grad_();
  Tensor w = randn({64, 3, 3, 3}, gen, opts).requires_grad_();
  Tensor b = randn({64}, gen, opts).requires_grad_();
  for (auto _ : state) {
    Tensor y = conv2d(x, w, b, {1}, {1});
    y.sum().backward();
    cuda::synchronize();
    x.set_grad(Tensor());
    w.set_grad(Tensor());
    b.set_grad(Tensor());
  }
  // Multiply-adds of the three maps: 3 x (64 * 64 * 32 * 32 outputs x 27 terms).
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 3 * 64 * 64 * 32 * 32 * 27);
}
BENCHMARK(BM_CudaConv2dForwardBackward)->Unit(benchmark::kMicrosecond);

// The caching allocator's bookkeeping alone (no device: a simulated one hands out addresses),
// allocate/free churn of a training step's sizes: 64 live tensors, each iteration frees one
// and allocates one of sizes from 4 B to 12 MiB. Arg 0: the allocator (Note [Caching
// allocator]: rounding to 512, two pools, split and merge, freed blocks merged lazily: Note
// [Deferred merging]); arg 1: the exact-bin free lists it replaced (issue 39, item 9), kept
// here as the baseline. Counters: segments asked of the
// device per 1,000 iterations, and the peak reserved bytes / peak live bytes.
class ChurnDevice final : public cuda::SegmentSource {
 public:
  void* malloc(size_t nbytes) override {
    ++mallocs;
    used += nbytes;
    peak = std::max(peak, used);
    const uintptr_t p = next;
    next += nbytes + 4096;
    return reinterpret_cast<void*>(p);
  }
  void free(void*, size_t nbytes) override { used -= nbytes; }
  std::string device_text() override { return "churn"; }
  int64_t mallocs = 0;
  size_t used = 0, peak = 0;
  uintptr_t next = uintptr_t{1} << 40;
};

// The previous allocator: bins of 512 bytes below 1 MiB, four per power of two above, one free
// list per bin, no splitting or merging.
class BinAllocator {
 public:
  explicit BinAllocator(ChurnDevice& device) : device_(device) {}
  static size_t round(size_t n) {
    n = std::max<size_t>(n, 1);
    if (n < (size_t{1} << 20)) return (n + 511) / 512 * 512;
    size_t pow2 = size_t{1} << 20;
    while (pow2 * 2 <= n) pow2 *= 2;
    return (n + pow2 / 4 - 1) / (pow2 / 4) * (pow2 / 4);
  }
  void* allocate(size_t n) {
    const size_t size = round(n);
    std::lock_guard<std::mutex> lock(mutex_);
    auto& list = free_[size];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      return p;
    }
    return device_.malloc(size);
  }
  void free(void* p, size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_[round(n)].push_back(p);
  }

 private:
  ChurnDevice& device_;
  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;
};

void BM_AllocatorChurn(benchmark::State& state) {
  const bool bins = state.range(0) == 1;
  ChurnDevice device;
  cuda::CachingAllocator caching(&device);
  BinAllocator old(device);
  uint64_t rng = 42;
  auto next = [&] { return rng = rng * 6364136223846793005ull + 1442695040888963407ull; };
  const size_t kinds[] = {4, 1000, 4096, 50000, 300000, size_t{3} << 20, size_t{12} << 20};
  std::vector<std::pair<void*, size_t>> live(64);
  size_t live_bytes = 0, peak_live = 0;
  auto alloc = [&](size_t n) {
    live_bytes += n;
    peak_live = std::max(peak_live, live_bytes);
    return bins ? old.allocate(n) : caching.allocate_raw(n);
  };
  for (auto& [p, n] : live) p = alloc(n = kinds[(next() >> 33) % 7] + (next() >> 33) % 4096);
  for (auto _ : state) {
    auto& [p, n] = live[(next() >> 33) % live.size()];
    if (bins) {
      old.free(p, n);
    } else {
      caching.free_raw(p);
    }
    live_bytes -= n;
    n = kinds[(next() >> 33) % 7] + (next() >> 33) % 4096;
    p = alloc(n);
  }
  state.counters["mallocs_per_1k"] =
      1000.0 * static_cast<double>(device.mallocs) / static_cast<double>(state.iterations());
  state.counters["peak_reserved_over_live"] =
      static_cast<double>(device.peak) / static_cast<double>(peak_live);
  state.SetLabel(bins ? "exact bins (before)" : "split/merge (now)");
}
BENCHMARK(BM_AllocatorChurn)->Arg(0)->Arg(1)->Iterations(200000)->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace mutagrad
