// Element-wise transcendental kernels on 64Ki contiguous elements: exp, log, tanh, sigmoid in
// float32 and float64, on ordinary inputs and on inputs where one in ten is -inf (a masked
// softmax's logits), which take the scalar std:: path of Note [Vectorized transcendental
// edges] in tensor/cpu/pointwise.cc.
//
//   ./bazelw run //benchmarks:pointwise_benchmark
//
// //benchmarks:pointwise_vs_libtorch links these cases with libtorch's counterparts
// (libtorch_pointwise_cases.cc) to time both in one run.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "mutagrad.h"

namespace mutagrad {
namespace {

constexpr int64_t kN = int64_t{1} << 16;

// Inputs in [-8, 8) (log: in (0, 8)); with `masked`, every tenth is -inf (log: 0).
Tensor inputs(ScalarType dtype, bool for_log, bool masked) {
  std::vector<double> v(static_cast<size_t>(kN));
  for (int64_t i = 0; i < kN; ++i) {
    const double u = static_cast<double>((i * 2654435761LL) % 1000003) / 1000003.0;
    double x = for_log ? 8.0 * u + 1e-3 : 16.0 * u - 8.0;
    if (masked && i % 10 == 0) x = for_log ? 0.0 : -INFINITY;
    v[static_cast<size_t>(i)] = x;
  }
  return from_vector(v, {kN}).to(dtype);
}

template <typename Op>
void run(benchmark::State& state, ScalarType dtype, bool for_log, Op op) {
  Tensor x = inputs(dtype, for_log, state.range(0) != 0);
  for (auto _ : state) {
    Tensor y = op(x);
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}

void BM_Exp_F32(benchmark::State& s) {
  run(s, kFloat32, false, [](const Tensor& x) { return x.exp(); });
}
void BM_Exp_F64(benchmark::State& s) {
  run(s, kFloat64, false, [](const Tensor& x) { return x.exp(); });
}
void BM_Log_F32(benchmark::State& s) {
  run(s, kFloat32, true, [](const Tensor& x) { return x.log(); });
}
void BM_Log_F64(benchmark::State& s) {
  run(s, kFloat64, true, [](const Tensor& x) { return x.log(); });
}
void BM_Tanh_F32(benchmark::State& s) {
  run(s, kFloat32, false, [](const Tensor& x) { return x.tanh(); });
}
void BM_Sigmoid_F32(benchmark::State& s) {
  run(s, kFloat32, false, [](const Tensor& x) { return x.sigmoid(); });
}

// Binary ops and reductions (Note [Pointwise kernels per capability] in
// tensor/cpu/vec_pointwise_impl.h) on 256 x 256 float32: a + b, a + row (broadcast), a < b,
// maximum(a, b), and sum / amax along the contiguous dim (1), the strided dim (0) and all.
Tensor grid(int64_t salt) {
  std::vector<double> v(static_cast<size_t>(kN));
  for (int64_t i = 0; i < kN; ++i)
    v[static_cast<size_t>(i)] = static_cast<double>((i * 2654435761LL + salt) % 1000003) / 1e5;
  return from_vector(v, {256, 256}).to(kFloat32);
}

template <typename Op>
void run_grid(benchmark::State& state, Op op) {
  Tensor a = grid(1), b = grid(7);
  for (auto _ : state) {
    Tensor y = op(a, b);
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}

void BM_Add_F32(benchmark::State& s) {
  run_grid(s, [](const Tensor& a, const Tensor& b) { return a + b; });
}
void BM_AddRow_F32(benchmark::State& s) {
  Tensor row = grid(3).select(0, 0);
  run_grid(s, [&row](const Tensor& a, const Tensor&) { return a + row; });
}
void BM_Lt_F32(benchmark::State& s) {
  run_grid(s, [](const Tensor& a, const Tensor& b) { return a.lt(b); });
}
void BM_Maximum_F32(benchmark::State& s) {
  run_grid(s, [](const Tensor& a, const Tensor& b) { return a.maximum(b); });
}
void BM_Sum_F32(benchmark::State& s) {
  const int64_t dim = s.range(0);
  run_grid(s, [dim](const Tensor& a, const Tensor&) {
    return dim < 0 ? a.sum() : a.sum(std::vector<int64_t>{dim});
  });
}
void BM_Amax_F32(benchmark::State& s) {
  const int64_t dim = s.range(0);
  run_grid(s, [dim](const Tensor& a, const Tensor&) { return a.max(std::vector<int64_t>{dim}); });
}

BENCHMARK(BM_Add_F32);
BENCHMARK(BM_AddRow_F32);
BENCHMARK(BM_Lt_F32);
BENCHMARK(BM_Maximum_F32);
BENCHMARK(BM_Sum_F32)->ArgName("dim")->Arg(1)->Arg(0)->Arg(-1);
BENCHMARK(BM_Amax_F32)->ArgName("dim")->Arg(1)->Arg(0);

// Arg 0: ordinary inputs; 1: one in ten is -inf (log: 0).
BENCHMARK(BM_Exp_F32)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Exp_F64)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Log_F32)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Log_F64)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Tanh_F32)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Sigmoid_F32)->ArgName("masked")->Arg(0)->Arg(1);

}  // namespace
}  // namespace mutagrad
