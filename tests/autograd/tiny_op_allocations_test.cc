// Heap allocations of tiny ops in the steady state (Note [Small-object pool] in
// tensor/small_object_pool.h, Note [CPU caching allocator] in tensor/cpu/cpu_allocator.cc): a
// tiny op without history takes nothing from operator new once its thread has warmed up, and
// one with history (forward and backward) takes a bounded number. The pool itself: blocks are
// reused per size class, freed across threads, drained at thread exit, and bypassed when off.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tensor/cpu/cpu_allocator.h"
#include "tensor/small_object_pool.h"
#include "tests/autograd/count_heap.h"
#include "tests/autograd/grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::heap_deletes;
using testing_util::heap_news;
using testing_util::values;

// The pool and the CPU allocator's cache on, as in a default build (the sanitizer builds
// default to both off: Note [Small-object pool]); restored after each test.
class TinyOpAllocations : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = cpu::cpu_allocator_mode();
    cpu::set_cpu_allocator_mode(cpu::CpuAllocatorMode::kCaching);
  }
  void TearDown() override { cpu::set_cpu_allocator_mode(saved_); }

  // operator new calls of `step` per call, after `warm` calls that fill this thread's lists.
  static double news_per_call(const std::function<void()>& step, int warm = 20, int calls = 100) {
    for (int i = 0; i < warm; ++i) step();
    const int64_t before = heap_news();
    for (int i = 0; i < calls; ++i) step();
    return static_cast<double>(heap_news() - before) / calls;
  }

 private:
  cpu::CpuAllocatorMode saved_ = cpu::CpuAllocatorMode::kCaching;
};

struct NamedStep {
  std::string name;
  std::function<void()> step;
};

TEST_F(TinyOpAllocations, OpsWithoutHistoryTakeNothingFromTheHeap) {
  Tensor a = ones({4}, TensorOptions(kFloat32));
  Tensor b = full({4}, 2.0, kFloat32);
  Tensor m = ones({3, 4}, TensorOptions(kFloat64));
  Tensor out;
  const std::vector<NamedStep> steps = {
      {"a + b", [&] { out = a + b; }},
      {"a * 2.0", [&] { out = a * 2.0; }},
      {"a.exp()", [&] { out = a.exp(); }},
      {"a.relu()", [&] { out = a.relu(); }},
      {"m + a.to(kFloat64) (broadcast)", [&] { out = m + a.to(kFloat64); }},
      {"m.sum()", [&] { out = m.sum(); }},
      {"m.select(0, 1)", [&] { out = m.select(0, 1); }},
      {"m.view({12})", [&] { out = m.view({12}); }},
      {"a.expand({3, 4})",
       [&] {
         out = a.expand({3, 4});
       }},
      {"a.mul_(1.0)", [&] { a.mul_(1.0); }},
      {"a.add_(b)", [&] { a.add_(b); }},
  };
  for (const NamedStep& s : steps) EXPECT_EQ(news_per_call(s.step), 0.0) << s.name;
}

TEST_F(TinyOpAllocations, ForwardAndBackwardTakeABoundedNumber) {
  Tensor x = ones({4}, TensorOptions(kFloat32)).requires_grad_();
  Tensor w = full({4}, 0.5, kFloat32).requires_grad_();
  // One multiply, one sum, the backward through both and the two leaves' accumulation.
  const double per_step = news_per_call([&] {
    Tensor loss = (x * w).sum();
    loss.backward();
  });
  // 14 here (49 with the small-object pool alone, before the engine kept its bookkeeping per
  // thread): the root and output edge lists of run_backward, Boost's sort (its CSR copy of the
  // graph and its DFS stack), each node's list of results.
  EXPECT_LE(per_step, 16.0);
  // The forward alone records the history (two nodes, their edges, saved tensors and metadata):
  // nothing from the heap.
  const double forward = news_per_call([&] { Tensor loss = (x * w).sum(); });
  EXPECT_EQ(forward, 0.0);
}

TEST_F(TinyOpAllocations, TheCounterSeesAllocationsWhenThePoolIsOff) {
  // The check above would pass with a counter that never counted: it does count.
  Tensor a = ones({4}, TensorOptions(kFloat32));
  cpu::set_cpu_allocator_mode(cpu::CpuAllocatorMode::kMalloc);
  EXPECT_FALSE(small_object_pool_enabled());
  EXPECT_GE(news_per_call([&] { Tensor c = a + a; }), 3.0);  // TensorImpl, storage, counter
}

TEST_F(TinyOpAllocations, PoolReusesBlocksPerSizeClass) {
  void* p = small_object_allocate(40);  // the 48-byte class
  small_object_free(p, 40);
  const int64_t news = heap_news();
  void* q = small_object_allocate(48);  // the same class: the same block, from the list
  const int64_t news_same_class = heap_news() - news;
  // Past kSmallObjectMax: operator new and delete each time.
  const int64_t deletes = heap_deletes();
  void* big = small_object_allocate(kSmallObjectMax + 1);
  small_object_free(big, kSmallObjectMax + 1);
  const int64_t news_big = heap_news() - news - news_same_class;
  const int64_t deletes_big = heap_deletes() - deletes;
  // Off: a fresh block from operator new, though the list holds one of its class.
  small_object_free(q, 48);
  set_small_object_pool_enabled(false);
  const int64_t news_off = heap_news();
  void* r = small_object_allocate(48);
  const int64_t news_when_off = heap_news() - news_off;
  set_small_object_pool_enabled(true);
  small_object_free(r, 48);
  // Asserted after the calls: a failed expectation allocates its message.
  EXPECT_EQ(q, p);
  EXPECT_EQ(news_same_class, 0);
  EXPECT_EQ(news_big, 1);
  EXPECT_EQ(deletes_big, 1);
  EXPECT_NE(r, q);
  EXPECT_EQ(news_when_off, 1);
}

TEST_F(TinyOpAllocations, PoolKeepsABoundedNumberOfBlocks) {
  constexpr size_t kSize = 512;
  const size_t keep = kSmallObjectThreadBytes / kSize;
  std::vector<void*> blocks;
  for (size_t i = 0; i < keep + 10; ++i) blocks.push_back(small_object_allocate(kSize));
  const int64_t deletes = heap_deletes();
  for (void* p : blocks) small_object_free(p, kSize);
  // At most `keep` stay in this thread's list (fewer if the list already held some).
  EXPECT_GE(heap_deletes() - deletes, 10);
}

TEST_F(TinyOpAllocations, BlocksFreedOnAnotherThreadAndAtThreadExit) {
  // A tensor made on one thread and dropped on another; the other thread's list is freed when it
  // exits (every block it held goes to operator delete).
  Tensor made = ones({4}, TensorOptions(kFloat32)) + 1.0;
  const int64_t deletes = heap_deletes();
  std::thread([t = std::move(made)]() mutable {
    Tensor local = t * 2.0;  // this thread's own blocks
    EXPECT_EQ(values(local), std::vector<double>(4, 4.0));
    t = Tensor();
    local = Tensor();
  }).join();
  EXPECT_GE(heap_deletes() - deletes, 6);  // both tensors' TensorImpl, storage and counter
}

TEST_F(TinyOpAllocations, OverAlignedTypesBypassThePool) {
  struct alignas(64) Wide {
    double v[8];
  };
  SmallObjectAllocator<Wide> alloc;
  Wide* w = alloc.allocate(1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w) % 64, 0u);
  alloc.deallocate(w, 1);
  std::shared_ptr<Wide> s = make_pooled<Wide>();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.get()) % 64, 0u);
}

}  // namespace
}  // namespace mutagrad
