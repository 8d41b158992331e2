// The cost of the mutation engine (docs/mutation-semantics.md): the version bump of a tiny
// in-place write, with and without a live graph that saved the tensor; an in-place write into
// a view of a tensor that requires grad (the op's node, CopySlices, the view's regenerated
// grad_fn), with view replay on and off, and with the backward pass; and what a kSnapshot
// snapshot adds to a small forward + backward.
//
//   bazel run -c opt //benchmarks:mutation_benchmark
//
// //benchmarks:mutation_vs_libtorch links these cases with libtorch's counterparts
// (libtorch_mutation_cases.cc) to time both in one run. Figures:
// docs/performance/autograd-training.md.
#include <benchmark/benchmark.h>

#include "mutagrad.h"

namespace mutagrad {
namespace {

// x.add_(1.0) on 4 float32 elements that do not require grad. plain: nothing saved x.
// saved: a live graph (y = w * x, MulBackward0 saves x) holds x, and the write runs under
// NoGradGuard, as an optimizer step would; under kError the safety bookkeeping is the bump
// itself, so both should take the same time.
void BM_InplaceTiny(benchmark::State& state) {
  const bool saved = state.range(0) != 0;
  Generator gen(0);
  Tensor x = randn({4}, gen, kFloat32);
  Tensor w = randn({4}, gen, kFloat32).requires_grad_();
  Tensor y;  // keeps the graph that saved x alive
  if (saved) y = w * x;
  autograd::AutoGradMode grad_mode(!saved);  // saved: the write runs under no_grad
  for (auto _ : state) {
    x.add_(1.0);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(x.version());
  benchmark::DoNotOptimize(y.defined());
  state.SetLabel(saved ? "saved" : "plain");
}
BENCHMARK(BM_InplaceTiny)->ArgName("saved")->Arg(0)->Arg(1);

// Sets view replay for one benchmark run and restores the previous setting.
class ViewReplayScope {
 public:
  explicit ViewReplayScope(bool enabled) : prev_(autograd::is_view_replay_enabled()) {
    autograd::set_view_replay_enabled(enabled);
  }
  ~ViewReplayScope() { autograd::set_view_replay_enabled(prev_); }
  ViewReplayScope(const ViewReplayScope&) = delete;
  ViewReplayScope& operator=(const ViewReplayScope&) = delete;

 private:
  bool prev_;
};

// h = a * 2.0; h.narrow(0, 1, 2).mul_(3.0) with a (8 float32) requiring grad: records
// MulBackward0 for h and MulBackward1 for the write, makes h's grad_fn CopySlices and
// regenerates the view's grad_fn (SliceBackward0 by replay, AsStridedBackward0 without).
void BM_InplaceOnView(benchmark::State& state) {
  const bool replay = state.range(0) != 0;
  ViewReplayScope replay_scope(replay);
  Generator gen(0);
  Tensor a = randn({8}, gen, kFloat32).requires_grad_();
  for (auto _ : state) {
    Tensor h = a * 2.0;
    Tensor v = h.narrow(0, 1, 2);
    v.mul_(3.0);
    benchmark::DoNotOptimize(v.grad_fn().get());
    benchmark::DoNotOptimize(h.raw_data());
  }
  state.SetLabel(replay ? "replay" : "as_strided");
}
BENCHMARK(BM_InplaceOnView)->ArgName("replay")->Arg(1)->Arg(0);

// The same followed by h.sum().backward(): CopySlices copies the gradient into the base
// geometry and slices it by replaying the narrow (replay) or by as_strided (no replay).
void BM_InplaceOnViewBackward(benchmark::State& state) {
  const bool replay = state.range(0) != 0;
  ViewReplayScope replay_scope(replay);
  Generator gen(0);
  Tensor a = randn({8}, gen, kFloat32).requires_grad_();
  for (auto _ : state) {
    Tensor h = a * 2.0;
    h.narrow(0, 1, 2).mul_(3.0);
    h.sum().backward();
    benchmark::DoNotOptimize(a.grad().raw_data());
  }
  state.SetLabel(replay ? "replay" : "as_strided");
}
BENCHMARK(BM_InplaceOnViewBackward)->ArgName("replay")->Arg(1)->Arg(0);

// h = a * 2.0; loss = (h * h).sum(); [h[{0}] = 0.0;] loss.backward() with a (8 float32)
// requiring grad. mode 0: kError, no write (the baseline). mode 1: kSnapshot with the write
// (MulBackward0 saved h twice: the write clones it before bumping, and backward uses the
// clones). mode 2: kSnapshot without the write (registering the saved values only).
void BM_SetItemSavedSnapshot(benchmark::State& state) {
  const int mode = static_cast<int>(state.range(0));
  const bool write = mode == 1;
  MutationPolicyGuard policy(mode == 0 ? MutationPolicy::kError : MutationPolicy::kSnapshot);
  Generator gen(0);
  Tensor a = randn({8}, gen, kFloat32).requires_grad_();
  for (auto _ : state) {
    Tensor h = a * 2.0;
    Tensor loss = (h * h).sum();
    if (write) h[{0}] = 0.0;
    loss.backward();
    benchmark::DoNotOptimize(a.grad().raw_data());
  }
  static const char* const kLabels[] = {"kError, no write", "kSnapshot, write",
                                        "kSnapshot, no write"};
  state.SetLabel(kLabels[mode]);
}
BENCHMARK(BM_SetItemSavedSnapshot)->ArgName("mode")->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace mutagrad
