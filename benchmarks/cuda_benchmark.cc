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
// system: those figures are CPU figures (docs/performance.md labels them so). Without a CUDA
// device every case reports the reason and is skipped.
#include <benchmark/benchmark.h>

#include <string>

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

}  // namespace
}  // namespace mutagrad
