// Graphs free everything when the last handle goes (issue 18): saved tensors and outputs, tensor
// and node hooks, kSnapshot slots, view replay chains (CopySlices), custom Functions, saved-tensor
// hooks and create_graph gradients hold no reference cycle. The oracle is a CPU allocator that
// counts live buffers (back to zero once the handles are dropped) and weak pointers to every node
// of the graph (all expired). Also run under --config=asan, whose LeakSanitizer
// (detect_leaks=1 in .bazelrc) reports any cycle this missed at exit.
// Also the CPU caching allocator beneath every buffer (Note [CPU caching allocator] in
// tensor/cpu/cpu_allocator.cc): reuse, its bounds, statistics, empty_cache and blocks freed on
// another thread (this test runs under --config=tsan in CI).
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_set>
#include <vector>

#include "autograd/custom_function.h"
#include "autograd/mutation_policy.h"
#include "autograd/saved_tensor_hooks.h"
#include "grad_test_util.h"
#include "tensor/backend.h"
#include "tensor/cpu/cpu_allocator.h"
#include "tensor/cpu/cpu_backend.h"
#include "tensor/sanitizers.h"

namespace mutagrad {
namespace {

using autograd::AutogradContext;
using autograd::Function;
using autograd::Node;
using autograd::VariableList;
using indexing::Slice;

// A CPU allocator whose buffers decrement `live` when freed.
class LiveCountingAllocator : public Allocator {
 public:
  std::shared_ptr<void> allocate(size_t nbytes) override {
    // Counts itself: constructed once, in place (a temporary would decrement on its way out).
    struct Buffer {
      Buffer(std::shared_ptr<void> m, std::atomic<int64_t>* l) : memory(std::move(m)), live(l) {
        live->fetch_add(1, std::memory_order_relaxed);
      }
      ~Buffer() { live->fetch_sub(1, std::memory_order_relaxed); }
      Buffer(const Buffer&) = delete;
      Buffer& operator=(const Buffer&) = delete;
      std::shared_ptr<void> memory;
      std::atomic<int64_t>* live;
    };
    std::shared_ptr<void> memory = inner_.allocate(nbytes);
    void* data = memory.get();
    // Aliasing constructor: the buffer's address, owned by the Buffer that counts it.
    return std::shared_ptr<void>(std::make_shared<Buffer>(std::move(memory), &live), data);
  }
  std::atomic<int64_t> live{0};

 private:
  cpu::CpuAllocator inner_;
};

class LiveCountingCpuBackend : public cpu::CpuBackend {
 public:
  Allocator& allocator() override { return counting; }
  LiveCountingAllocator counting;
};

// Weak pointers to every node reachable from `roots` (an explicit stack, no recursion).
std::vector<std::weak_ptr<Node>> graph_of(const std::vector<Tensor>& roots) {
  std::vector<std::weak_ptr<Node>> out;
  std::unordered_set<const Node*> seen;
  std::vector<std::shared_ptr<Node>> stack;
  for (const Tensor& r : roots) {
    if (r.grad_fn()) stack.push_back(r.grad_fn());
  }
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    out.push_back(n);
    for (const autograd::Edge& e : n->next_edges()) {
      if (e.function) stack.push_back(e.function);
    }
  }
  return out;
}

class Leaks : public ::testing::Test {
 protected:
  void SetUp() override { register_backend(DeviceType::CPU, &backend_); }
  void TearDown() override { register_backend(DeviceType::CPU, &cpu::cpu_backend()); }

  int64_t live() const { return backend_.counting.live.load(); }

  // Runs build(), which returns the roots of the graphs it made; when they (and everything
  // build() held) are gone, every buffer and every node must be freed.
  template <typename Build>
  void expect_freed(Build build) {
    ASSERT_EQ(live(), 0);
    std::vector<std::weak_ptr<Node>> nodes;
    {
      std::vector<Tensor> roots = build();
      nodes = graph_of(roots);
      ASSERT_GT(live(), 0) << "the graph allocated nothing: not a test";
    }
    EXPECT_EQ(live(), 0) << "buffers still alive after the last handle went";
    size_t alive = 0;
    for (const auto& n : nodes) alive += n.expired() ? 0 : 1;
    EXPECT_EQ(alive, 0u) << "of " << nodes.size() << " nodes";
    EXPECT_EQ(autograd::num_snapshot_slots(), 0);
  }

  LiveCountingCpuBackend backend_;
};

Tensor leaf_of(IntArrayRef sizes, double value) {
  return full(sizes, value, kFloat64).requires_grad_();
}

TEST_F(Leaks, TheOracleSeesACycle) {
  // A hook that captures its own tensor is a cycle (in PyTorch too): the counts must show it,
  // and removing the hook must free everything.
  autograd::RemovableHandle handle;
  std::weak_ptr<Node> node;
  {
    Tensor a = leaf_of({4}, 1.0);
    Tensor h = a * 2.0;
    handle = h.register_hook([h](const Tensor& g) { return g; });
    node = h.grad_fn();
  }
  EXPECT_GT(live(), 0);
  EXPECT_FALSE(node.expired());
  handle.remove();
  EXPECT_EQ(live(), 0);
  EXPECT_TRUE(node.expired());
}

TEST_F(Leaks, SavedInputsAndOutputs) {
  // exp and sigmoid save their output, mul both inputs; unused, after backward, after a
  // retained backward.
  for (int mode = 0; mode < 3; ++mode) {
    expect_freed([&] {
      Tensor a = leaf_of({3, 4}, 0.5);
      Tensor h = a.exp();
      Tensor loss = (h * h).sum() + h.sigmoid().sum() + (a * h).mean();
      if (mode == 1) loss.backward();
      if (mode == 2) loss.backward(Tensor(), /*retain_graph=*/true);
      return std::vector<Tensor>{loss, a};
    });
  }
}

TEST_F(Leaks, TensorAndNodeHooks) {
  expect_freed([&] {
    Tensor a = leaf_of({4}, 2.0);
    Tensor scale = full({4}, 3.0, kFloat64);
    Tensor h = a * a;
    h.retain_grad();
    h.register_hook([scale](const Tensor& g) { return g * scale; });  // owns a tensor
    a.register_hook([](const Tensor& g) { return g + 1.0; });
    Tensor loss = h.sum();
    loss.grad_fn()->register_hook(
        [scale](const VariableList& in, const VariableList&) { return in; });
    loss.backward(Tensor(), /*retain_graph=*/true);
    return std::vector<Tensor>{loss, h, a};
  });
}

TEST_F(Leaks, SnapshotSlots) {
  expect_freed([&] {
    Tensor a = leaf_of({5}, 1.5);
    MutationPolicyGuard guard(MutationPolicy::kSnapshot);
    Tensor h = a * 2.0;
    Tensor written = (h * h).sum();  // its saved h is snapshotted by the write below
    Tensor kept = (h.exp()).sum();   // its saved output is not written
    h.add_(1.0);
    EXPECT_GT(autograd::num_snapshot_slots(), 0);
    written.backward();
    return std::vector<Tensor>{written, kept, h, a};
  });
}

TEST_F(Leaks, ViewReplayChains) {
  // In-place writes through views of views of a non-leaf: CopySlices on the base, the views'
  // grad_fn regenerated by replaying the view functions, saved outputs of in-place ops on views.
  expect_freed([&] {
    Tensor a = leaf_of({4, 3}, 0.25);
    Tensor base = a * 1.0;
    Tensor rows = base.narrow(0, 1, 2);
    Tensor col = rows.select(1, 0);
    col.mul_(2.0);
    rows.set_item_({Slice(), 2}, 5.0);
    Tensor v = base.index({Slice(0, 2)}).t();
    v.exp_();  // saves its output, a view
    EXPECT_TRUE(col.grad_fn()) << "replayed after the writes";
    Tensor loss = (base * base).sum() + rows.sum() + col.sum();
    loss.backward(Tensor(), /*retain_graph=*/true);
    return std::vector<Tensor>{loss, base, rows, col, v, a};
  });
}

// y = x * k with x and y saved; and an in-place twin that marks its input dirty.
struct Scale : Function<Scale> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double k) {
    Tensor y = x * k;
    ctx->save_for_backward({x, y});
    ctx->saved_data["k"] = k;
    return y;
  }
  static VariableList backward(AutogradContext* ctx, VariableList grads) {
    VariableList s = ctx->get_saved_variables();
    return {grads[0] * ctx->saved_data["k"].to_double() + s[1] * 0.0, Tensor()};
  }
};

struct ScaleInPlace : Function<ScaleInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double k) {
    ctx->mark_dirty({x});
    x.mul_(k);
    ctx->save_for_backward({x});
    ctx->saved_data["k"] = k;
    return x;
  }
  static VariableList backward(AutogradContext* ctx, VariableList grads) {
    return {grads[0] * ctx->saved_data["k"].to_double(), Tensor()};
  }
};

TEST_F(Leaks, CustomFunctionsSavingInputsAndOutputs) {
  expect_freed([&] {
    Tensor a = leaf_of({3}, 1.0);
    Tensor y = Scale::apply(a, 2.0);
    Tensor z = ScaleInPlace::apply(y * 1.0, 3.0);
    Tensor loss = (z * y).sum();
    loss.backward(Tensor(), /*retain_graph=*/true);
    EXPECT_EQ(testing_util::values(a.grad()), std::vector<double>(3, 24.0));  // d(6a * 2a)/da
    return std::vector<Tensor>{loss, z, y, a};
  });
}

TEST_F(Leaks, SavedTensorHooksAndCreateGraph) {
  expect_freed([&] {
    Tensor a = leaf_of({3}, 2.0);
    Tensor loss;
    {
      autograd::SavedTensorHooksGuard hooks(
          [](const Tensor& t) -> std::any { return t.clone(); },
          [](const std::any& p) { return std::any_cast<Tensor>(p); });
      loss = (a * a * a).sum();
    }
    // .grad with a graph (create_graph): AccumulateGrad holds its leaf weakly, so no cycle.
    loss.backward(Tensor(), /*retain_graph=*/true, /*create_graph=*/true);
    Tensor g = a.grad();
    VariableList gg = autograd::grad({g.sum()}, {a}, {}, /*retain_graph=*/true,
                                     /*create_graph=*/true);
    EXPECT_EQ(testing_util::values(gg[0]), std::vector<double>(3, 12.0));  // 6a
    return std::vector<Tensor>{loss, g, gg[0], a};
  });
}

// The caching mode, whatever the build's default (an ASan build's is malloc), on fresh limits.
class CpuCache : public ::testing::Test {
 protected:
  void SetUp() override {
    mode_ = cpu::cpu_allocator_mode();
    limits_ = cpu::cpu_cache_limits();
    cpu::set_cpu_allocator_mode(cpu::CpuAllocatorMode::kCaching);
    cpu::empty_cache();
    before_ = cpu::cpu_memory_stats();
  }
  void TearDown() override {
    cpu::set_cpu_cache_limits(limits_);
    cpu::empty_cache();
    // Every block of the test is freed and the cache emptied: back to where it started (other,
    // idle threads keep what their caches held).
    const cpu::CpuMemoryStats after = cpu::cpu_memory_stats();
    EXPECT_EQ(after.allocated, before_.allocated);
    EXPECT_EQ(after.cached, before_.cached);
    cpu::set_cpu_allocator_mode(mode_);
  }
  // Changes since SetUp.
  int64_t allocated() const { return cpu::cpu_memory_stats().allocated - before_.allocated; }
  int64_t cached() const { return cpu::cpu_memory_stats().cached - before_.cached; }
  int64_t system_allocs() const {
    return cpu::cpu_memory_stats().system_allocs - before_.system_allocs;
  }
  int64_t system_frees() const {
    return cpu::cpu_memory_stats().system_frees - before_.system_frees;
  }

  cpu::CpuAllocatorMode mode_;
  cpu::CpuCacheLimits limits_;
  cpu::CpuMemoryStats before_;
};

constexpr size_t kMiB = size_t{1} << 20;

TEST_F(CpuCache, DefaultMode) {
  if (std::getenv("MUTAGRAD_CPU_ALLOCATOR") != nullptr) GTEST_SKIP() << "mode set by the env";
#ifdef MUTAGRAD_ASAN
  EXPECT_EQ(mode_, cpu::CpuAllocatorMode::kMalloc);  // ASan sees every buffer's lifetime
#else
  EXPECT_EQ(mode_, cpu::CpuAllocatorMode::kCaching);
#endif
}

TEST_F(CpuCache, SizeClasses) {
  // 64-byte steps to 1 KiB, then four classes per power of two.
  const std::vector<std::pair<size_t, size_t>> cases = {{0, 64},
                                                        {1, 64},
                                                        {64, 64},
                                                        {65, 128},
                                                        {1000, 1024},
                                                        {1024, 1024},
                                                        {1025, 1280},
                                                        {1536, 1536},
                                                        {1537, 1792},
                                                        {2049, 2560},
                                                        {3 * kMiB, 3 * kMiB},
                                                        {kMiB + 1, kMiB + kMiB / 4},
                                                        {16 * kMiB, 16 * kMiB},
                                                        {16 * kMiB + 1, 20 * kMiB}};
  for (const auto& [n, want] : cases) EXPECT_EQ(cpu::cpu_block_size(n), want) << n;
  cpu::set_cpu_allocator_mode(cpu::CpuAllocatorMode::kMalloc);
  EXPECT_EQ(cpu::cpu_block_size(1025), 1088u);  // the malloc mode rounds to the alignment only
}

TEST_F(CpuCache, ReusesFreedBlocksSmallAndLarge) {
  for (const size_t n : {size_t{1000}, 100 * size_t{1024}, 16 * kMiB}) {
    void* first = nullptr;
    {
      std::shared_ptr<void> a = cpu::cpu_allocate(n);
      first = a.get();
      EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kCpuAlignment, 0u);
      EXPECT_EQ(allocated(), static_cast<int64_t>(cpu::cpu_block_size(n)));
      std::memset(first, 1, n);
    }
    EXPECT_EQ(allocated(), 0);
    EXPECT_EQ(cached(), static_cast<int64_t>(cpu::cpu_block_size(n)));
#ifdef MUTAGRAD_ASAN
    EXPECT_TRUE(__asan_address_is_poisoned(first)) << "a cached block must stay poisoned";
#endif
    const int64_t allocs = system_allocs();
    std::shared_ptr<void> b = cpu::cpu_allocate(n - 1);  // the same class
    EXPECT_EQ(b.get(), first) << n;
    EXPECT_EQ(system_allocs(), allocs);
    EXPECT_EQ(cached(), 0);
    b.reset();
    cpu::empty_cache();
  }
}

TEST_F(CpuCache, TinyStepsTakeNothingFromTheSystem) {
  // A forward + backward of tiny ops, repeated: after the first steps every buffer comes from
  // the cache. The malloc mode, the oracle that this counts, takes one per buffer.
  auto step = [] {
    Tensor a = leaf_of({16}, 0.5);
    Tensor loss = ((a * 2.0).exp() * a + a.sigmoid()).sum();
    loss.backward();
    return a.grad();
  };
  for (int i = 0; i < 3; ++i) step();
  const int64_t allocs = system_allocs();
  for (int i = 0; i < 50; ++i) step();
  EXPECT_EQ(system_allocs(), allocs);
  cpu::set_cpu_allocator_mode(cpu::CpuAllocatorMode::kMalloc);
  for (int i = 0; i < 50; ++i) step();
  EXPECT_GE(system_allocs(), allocs + 50 * 5);
  EXPECT_EQ(allocated(), 0);
}

TEST_F(CpuCache, StatsAndEmptyCache) {
  std::shared_ptr<void> small = cpu::cpu_allocate(1000);
  std::shared_ptr<void> large = cpu::cpu_allocate(3 * kMiB);
  EXPECT_EQ(allocated(), 1024 + 3 * static_cast<int64_t>(kMiB));
  small.reset();
  EXPECT_EQ(allocated(), 3 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(cached(), 1024);
  large.reset();
  EXPECT_EQ(allocated(), 0);
  EXPECT_EQ(cached(), 1024 + 3 * static_cast<int64_t>(kMiB));
  const cpu::CpuMemoryStats s = cpu::cpu_memory_stats();
  EXPECT_EQ(s.reserved, s.allocated + s.cached);
  EXPECT_EQ(cpu::memory_reserved() - cpu::memory_allocated(), s.cached);
  const int64_t frees = system_frees();
  cpu::empty_cache();
  EXPECT_EQ(cached(), 0);
  EXPECT_EQ(system_frees(), frees + 2);
}

TEST_F(CpuCache, BoundsAreRespected) {
  cpu::set_cpu_cache_limits({64 * 1024, 128 * 1024, 4 * kMiB});
  // 200 blocks of 4 KiB: 16 stay in this thread's cache (64 KiB), 32 in the pool (128 KiB),
  // the other 152 go back to the system.
  std::vector<std::shared_ptr<void>> blocks;
  for (int i = 0; i < 200; ++i) blocks.push_back(cpu::cpu_allocate(4096));
  int64_t frees = system_frees();
  blocks.clear();
  EXPECT_EQ(cached(), 192 * 1024);
  EXPECT_EQ(system_frees(), frees + 152);
  // Three of 2 MiB under a 4 MiB bound: the third makes room by releasing an older one; 8 MiB
  // could never fit and goes straight back, leaving the pool as it was.
  cpu::empty_cache();
  for (int i = 0; i < 3; ++i) blocks.push_back(cpu::cpu_allocate(2 * kMiB));
  blocks.push_back(cpu::cpu_allocate(8 * kMiB));
  frees = system_frees();
  blocks.clear();
  EXPECT_EQ(cached(), 4 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(system_frees(), frees + 2);
}

TEST_F(CpuCache, BlocksFreedOnAnotherThread) {
  // A thread allocates and fills tensors of every kind of size; this one checks and frees them,
  // then reuses their blocks.
  const std::vector<size_t> sizes = {64, 1000, 5000, 300 * 1024, 3 * kMiB};
  std::vector<std::shared_ptr<void>> made;
  std::thread producer([&] {
    for (int i = 0; i < 40; ++i) {
      const size_t n = sizes[i % sizes.size()];
      made.push_back(cpu::cpu_allocate(n));
      std::memset(made.back().get(), i, n);
    }
  });
  producer.join();
  std::set<void*> theirs;
  for (size_t i = 0; i < made.size(); ++i) {
    const auto* bytes = static_cast<const unsigned char*>(made[i].get());
    const size_t n = sizes[i % sizes.size()];
    EXPECT_EQ(bytes[0], static_cast<unsigned char>(i));
    EXPECT_EQ(bytes[n - 1], static_cast<unsigned char>(i));
    theirs.insert(made[i].get());
  }
  EXPECT_EQ(allocated(), [&] {
    int64_t total = 0;
    for (size_t i = 0; i < made.size(); ++i) {
      total += static_cast<int64_t>(cpu::cpu_block_size(sizes[i % sizes.size()]));
    }
    return total;
  }());
  made.clear();
  EXPECT_EQ(allocated(), 0);
  const int64_t allocs = system_allocs();
  std::shared_ptr<void> again = cpu::cpu_allocate(5000);
  EXPECT_EQ(theirs.count(again.get()), 1u);
  EXPECT_EQ(system_allocs(), allocs);
  again.reset();

  // Two threads handing tensors to each other through a queue, each freeing the other's, while
  // writing and checking their contents; then both exit, flushing their caches to the pool.
  std::mutex m;
  std::vector<Tensor> queue[2];
  std::atomic<int> wrong{0};
  auto worker = [&](int me) {
    for (int i = 0; i < 300; ++i) {
      Tensor t = full({1 + (i % 7) * 50}, static_cast<double>(me * 1000 + i), kFloat64);
      Tensor got;
      {
        std::lock_guard<std::mutex> lock(m);
        queue[1 - me].push_back(t);
        if (!queue[me].empty()) {
          got = queue[me].front();
          queue[me].erase(queue[me].begin());
        }
      }
      if (got.defined()) {
        const double v = got.data_ptr<double>()[got.numel() - 1];
        if (v != got.data_ptr<double>()[0] || v < (1 - me) * 1000 || v >= (1 - me) * 1000 + 300) {
          wrong.fetch_add(1);
        }
      }
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(allocated(), 0);  // the queues' leftovers
  queue[0].clear();
  queue[1].clear();
  EXPECT_EQ(allocated(), 0);
}

TEST_F(CpuCache, EmptyCacheAsksOtherThreadsToFlush) {
  // A thread caches a block, then waits; empty_cache here cannot touch its cache, but its next
  // call returns the block.
  std::mutex m;
  std::condition_variable cv;
  int stage = 0;
  std::thread t([&] {
    cpu::cpu_allocate(1000).reset();  // cached in this thread
    std::unique_lock<std::mutex> lock(m);
    stage = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return stage == 2; });
    cpu::cpu_allocate(64).reset();  // its next call: the flush, then a 64-byte block cached
    stage = 3;
    cv.notify_all();
    cv.wait(lock, [&] { return stage == 4; });
  });
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return stage == 1; });
  cpu::empty_cache();
  EXPECT_EQ(cached(), 1024);
  stage = 2;
  cv.notify_all();
  cv.wait(lock, [&] { return stage == 3; });
  EXPECT_EQ(cached(), 64 + 1024);  // the thread's 64 bytes, its 1024 now in the pool
  cpu::empty_cache();
  EXPECT_EQ(cached(), 64);
  stage = 4;
  cv.notify_all();
  lock.unlock();
  t.join();  // its exit flushes the 64 bytes to the pool; TearDown's empty_cache frees them
}

}  // namespace
}  // namespace mutagrad
