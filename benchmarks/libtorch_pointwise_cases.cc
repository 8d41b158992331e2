// libtorch counterparts of the cases in pointwise_benchmark.cc: the same inputs (64Ki
// elements, one in ten -inf / 0 when masked), the same ops and dtypes. Linked next to those
// cases into //benchmarks:pointwise_vs_libtorch (tags = ["manual"]: needs libtorch-dev).
// libtorch runs with at::set_num_threads(2), like ours.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

namespace mutagrad_vs_libtorch {
namespace {

constexpr int64_t kN = int64_t{1} << 16;

torch::Tensor inputs(torch::ScalarType dtype, bool for_log, bool masked) {
  std::vector<double> v(static_cast<size_t>(kN));
  for (int64_t i = 0; i < kN; ++i) {
    const double u = static_cast<double>((i * 2654435761LL) % 1000003) / 1000003.0;
    double x = for_log ? 8.0 * u + 1e-3 : 16.0 * u - 8.0;
    if (masked && i % 10 == 0) x = for_log ? 0.0 : -INFINITY;
    v[static_cast<size_t>(i)] = x;
  }
  return torch::tensor(v, torch::kFloat64).to(dtype);
}

template <typename Op>
void run(benchmark::State& state, torch::ScalarType dtype, bool for_log, Op op) {
  at::set_num_threads(2);
  torch::NoGradGuard no_grad;
  torch::Tensor x = inputs(dtype, for_log, state.range(0) != 0);
  for (auto _ : state) {
    torch::Tensor y = op(x);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}

void BM_Libtorch_Exp_F32(benchmark::State& s) {
  run(s, torch::kFloat32, false, [](const torch::Tensor& x) { return x.exp(); });
}
void BM_Libtorch_Exp_F64(benchmark::State& s) {
  run(s, torch::kFloat64, false, [](const torch::Tensor& x) { return x.exp(); });
}
void BM_Libtorch_Log_F32(benchmark::State& s) {
  run(s, torch::kFloat32, true, [](const torch::Tensor& x) { return x.log(); });
}
void BM_Libtorch_Log_F64(benchmark::State& s) {
  run(s, torch::kFloat64, true, [](const torch::Tensor& x) { return x.log(); });
}
void BM_Libtorch_Tanh_F32(benchmark::State& s) {
  run(s, torch::kFloat32, false, [](const torch::Tensor& x) { return x.tanh(); });
}
void BM_Libtorch_Sigmoid_F32(benchmark::State& s) {
  run(s, torch::kFloat32, false, [](const torch::Tensor& x) { return x.sigmoid(); });
}

torch::Tensor grid(int64_t salt) {
  std::vector<double> v(static_cast<size_t>(kN));
  for (int64_t i = 0; i < kN; ++i)
    v[static_cast<size_t>(i)] = static_cast<double>((i * 2654435761LL + salt) % 1000003) / 1e5;
  return torch::tensor(v, torch::kFloat64).reshape({256, 256}).to(torch::kFloat32);
}

template <typename Op>
void run_grid(benchmark::State& state, Op op) {
  at::set_num_threads(2);
  torch::NoGradGuard no_grad;
  torch::Tensor a = grid(1), b = grid(7);
  for (auto _ : state) {
    torch::Tensor y = op(a, b);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}

void BM_Libtorch_Add_F32(benchmark::State& s) {
  run_grid(s, [](const torch::Tensor& a, const torch::Tensor& b) { return a + b; });
}
void BM_Libtorch_AddRow_F32(benchmark::State& s) {
  torch::Tensor row = grid(3).select(0, 0);
  run_grid(s, [&row](const torch::Tensor& a, const torch::Tensor&) { return a + row; });
}
void BM_Libtorch_Lt_F32(benchmark::State& s) {
  run_grid(s, [](const torch::Tensor& a, const torch::Tensor& b) { return a.lt(b); });
}
void BM_Libtorch_Maximum_F32(benchmark::State& s) {
  run_grid(s, [](const torch::Tensor& a, const torch::Tensor& b) { return torch::maximum(a, b); });
}
void BM_Libtorch_Sum_F32(benchmark::State& s) {
  const int64_t dim = s.range(0);
  run_grid(s, [dim](const torch::Tensor& a, const torch::Tensor&) {
    return dim < 0 ? a.sum() : a.sum(dim);
  });
}
void BM_Libtorch_Amax_F32(benchmark::State& s) {
  const int64_t dim = s.range(0);
  run_grid(s, [dim](const torch::Tensor& a, const torch::Tensor&) { return a.amax({dim}); });
}

BENCHMARK(BM_Libtorch_Add_F32);
BENCHMARK(BM_Libtorch_AddRow_F32);
BENCHMARK(BM_Libtorch_Lt_F32);
BENCHMARK(BM_Libtorch_Maximum_F32);
BENCHMARK(BM_Libtorch_Sum_F32)->ArgName("dim")->Arg(1)->Arg(0)->Arg(-1);
BENCHMARK(BM_Libtorch_Amax_F32)->ArgName("dim")->Arg(1)->Arg(0);

BENCHMARK(BM_Libtorch_Exp_F32)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Libtorch_Exp_F64)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Libtorch_Log_F32)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Libtorch_Log_F64)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Libtorch_Tanh_F32)->ArgName("masked")->Arg(0)->Arg(1);
BENCHMARK(BM_Libtorch_Sigmoid_F32)->ArgName("masked")->Arg(0)->Arg(1);

}  // namespace
}  // namespace mutagrad_vs_libtorch
