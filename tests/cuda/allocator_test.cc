// The caching allocator's bookkeeping (Note [Caching allocator] in cuda/allocator.h) over a
// simulated device: rounding, the two pools, splitting, deferred merging, empty_cache, the retry
// after an out-of-memory, and the exact stats. Every expected number is derived by hand in the
// comments; the pinned host allocator's event rule over a simulated host; and pin_memory and
// non_blocking transfers on the CUDA device. Part of cuda_test.
#include "cuda/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cuda/cuda.h"
#include "cuda/host_allocator.h"
#include "cuda/runtime.h"
#include "mutagrad.h"

namespace mutagrad::cuda {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

// Addresses from a counter (never dereferenced), a capacity, and every call recorded.
class SimulatedDevice final : public SegmentSource {
 public:
  explicit SimulatedDevice(size_t capacity) : capacity_(capacity) {}
  void* malloc(size_t nbytes) override {
    requests.push_back(nbytes);
    if (nbytes > capacity_ - used()) return nullptr;
    const uintptr_t p = next_;
    next_ += nbytes + 4096;  // a gap: segments are never adjacent
    live[p] = nbytes;
    return reinterpret_cast<void*>(p);
  }
  void free(void* ptr, size_t nbytes) override {
    auto it = live.find(reinterpret_cast<uintptr_t>(ptr));
    ASSERT_NE(it, live.end()) << "freed a segment that is not live";
    EXPECT_EQ(it->second, nbytes) << "freed with another size";
    live.erase(it);
    ++frees;
  }
  std::string device_text() override { return "the simulated device"; }
  size_t used() const {
    size_t n = 0;
    for (const auto& [p, size] : live) n += size;
    return n;
  }

  std::vector<size_t> requests;  // every malloc, failed ones too
  std::map<uintptr_t, size_t> live;
  int frees = 0;

 private:
  size_t capacity_;
  uintptr_t next_ = uintptr_t{1} << 40;
};

using Blocks = std::vector<std::tuple<size_t, size_t, bool>>;  // offset, size, allocated

Blocks blocks_of(const CachingAllocator::SegmentInfo& s) {
  Blocks out;
  for (const auto& b : s.blocks) out.emplace_back(b.offset, b.size, b.allocated);
  return out;
}

TEST(CachingAllocatorRules, RoundsTo512AndPicksSegments) {
  EXPECT_EQ(CachingAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(1000), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(MiB + 1), MiB + 512);
  EXPECT_EQ(CachingAllocator::round_size(100 * MiB + 3), 100 * MiB + 512);
  // <= 1 MiB: a 2 MiB segment; below 10 MiB: 20 MiB; else the size rounded up to 2 MiB.
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB + 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB), 10 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB + 512), 12 * MiB);
}

// The offsets of the deferred blocks (Note [Deferred merging]).
std::vector<size_t> deferred_of(const CachingAllocator::SegmentInfo& s) {
  std::vector<size_t> out;
  for (const auto& b : s.blocks) {
    if (b.deferred) out.push_back(b.offset);
  }
  return out;
}

TEST(CachingAllocatorRules, SplitsBestFitAndMergesNeighbours) {
  SimulatedDevice device(64 * MiB);
  CachingAllocator a(&device);
  void* p = a.allocate_raw(1000);  // 1024 of a new 2 MiB segment; the rest stays free
  ASSERT_EQ(a.snapshot().size(), 1u);
  EXPECT_EQ(blocks_of(a.snapshot()[0]), (Blocks{{0, 1024, true}, {1024, 2 * MiB - 1024, false}}));
  EXPECT_EQ(a.stats().allocated, 1024);
  EXPECT_EQ(a.stats().reserved, int64_t{2 * MiB});
  void* q = a.allocate_raw(3000);  // 3072, cut from the rest
  void* r = a.allocate_raw(1);     // 512
  EXPECT_EQ(static_cast<char*>(q) - static_cast<char*>(p), 1024);
  EXPECT_EQ(static_cast<char*>(r) - static_cast<char*>(p), 4096);
  EXPECT_EQ(a.stats().allocated, 1024 + 3072 + 512);
  a.free_raw(q);  // deferred, between two live blocks
  EXPECT_EQ(
      blocks_of(a.snapshot()[0]),
      (Blocks{
          {0, 1024, true}, {1024, 3072, false}, {4096, 512, true}, {4608, 2 * MiB - 4608, false}}));
  EXPECT_EQ(deferred_of(a.snapshot()[0]), (std::vector<size_t>{1024}));
  // The same size again: the deferred block as it is.
  EXPECT_EQ(a.allocate_raw(2561), q);
  EXPECT_TRUE(deferred_of(a.snapshot()[0]).empty());
  a.free_raw(q);
  // 2048: no deferred block of that size, so the best fit among the merged free blocks: the
  // rest, split (the deferred 3072 is only looked at when no merged block fits).
  void* s = a.allocate_raw(2000);
  EXPECT_EQ(static_cast<char*>(s) - static_cast<char*>(p), 4608);
  a.free_raw(r);  // deferred too: not merged with the deferred 3072 before it
  EXPECT_EQ(blocks_of(a.snapshot()[0]), (Blocks{{0, 1024, true},
                                                {1024, 3072, false},
                                                {4096, 512, false},
                                                {4608, 2048, true},
                                                {6656, 2 * MiB - 6656, false}}));
  EXPECT_EQ(deferred_of(a.snapshot()[0]), (std::vector<size_t>{1024, 4096}));
  EXPECT_EQ(a.stats().allocated, 1024 + 2048);
  EXPECT_EQ(a.stats().max_allocated, 1024 + 3072 + 512);  // the peak before q was freed
  a.empty_cache();  // merges the deferred blocks; the segment has live blocks: it stays
  EXPECT_EQ(blocks_of(a.snapshot()[0]), (Blocks{{0, 1024, true},
                                                {1024, 3584, false},
                                                {4608, 2048, true},
                                                {6656, 2 * MiB - 6656, false}}));
  EXPECT_EQ(a.stats().reserved, int64_t{2 * MiB});
  EXPECT_EQ(device.frees, 0);
  // 3072: the best fit is the 3584-byte hole (not the large rest), split again (512 >= 512).
  void* t = a.allocate_raw(3000);
  EXPECT_EQ(t, q);
  EXPECT_EQ(blocks_of(a.snapshot()[0]), (Blocks{{0, 1024, true},
                                                {1024, 3072, true},
                                                {4096, 512, false},
                                                {4608, 2048, true},
                                                {6656, 2 * MiB - 6656, false}}));
  EXPECT_TRUE(deferred_of(a.snapshot()[0]).empty());
  for (void* v : {p, s, t}) a.free_raw(v);
  EXPECT_EQ(deferred_of(a.snapshot()[0]), (std::vector<size_t>{0, 1024, 4608}));
  EXPECT_EQ(device.requests, (std::vector<size_t>{2 * MiB}));  // one segment served all
  a.empty_cache();  // merged into one free block: the whole segment goes back
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(a.stats().allocated, 0);
  EXPECT_EQ(a.stats().segments, 0);
  EXPECT_EQ(device.frees, 1);
  EXPECT_TRUE(device.live.empty());
}

TEST(CachingAllocatorRules, LargePoolSplitsOnlyRestsAboveOneMiB) {
  SimulatedDevice device(256 * MiB);
  CachingAllocator a(&device);
  const size_t x_size = 3 * MiB + 512;  // 3 MiB + 1 rounded
  void* x = a.allocate_raw(3 * MiB + 1);
  ASSERT_EQ(a.snapshot().size(), 1u);
  EXPECT_FALSE(a.snapshot()[0].small);
  EXPECT_EQ(blocks_of(a.snapshot()[0]),
            (Blocks{{0, x_size, true}, {x_size, 20 * MiB - x_size, false}}));
  // 16 MiB from the 17 MiB - 512 rest: the 1 MiB - 512 left is not over 1 MiB, so the block
  // is not split and the whole rest counts as allocated.
  void* y = a.allocate_raw(16 * MiB);
  EXPECT_EQ(blocks_of(a.snapshot()[0]),
            (Blocks{{0, x_size, true}, {x_size, 20 * MiB - x_size, true}}));
  EXPECT_EQ(a.stats().allocated, int64_t{20 * MiB});
  // Nothing free in the large pool: a second 20 MiB segment, split (18 MiB rest).
  void* z = a.allocate_raw(2 * MiB);
  // The small pool does not take from the large one: a 2 MiB segment for 100 bytes.
  void* t = a.allocate_raw(100);
  EXPECT_EQ(device.requests, (std::vector<size_t>{20 * MiB, 20 * MiB, 2 * MiB}));
  EXPECT_EQ(a.stats().reserved, int64_t{42 * MiB});
  EXPECT_EQ(a.stats().allocated, int64_t{20 * MiB + 2 * MiB + 512});
  a.free_raw(x);  // deferred
  // 3 MiB: no deferred block of exactly that size, and the merged free blocks come first: the
  // 18 MiB rest of the second segment, split (15 MiB left), not x's deferred block.
  void* w = a.allocate_raw(3 * MiB);
  EXPECT_EQ(static_cast<char*>(w) - static_cast<char*>(z), std::ptrdiff_t{2 * MiB});
  EXPECT_EQ(a.stats().allocated, int64_t{22 * MiB});
  // 3 MiB + 100: x's size, so x's deferred block.
  EXPECT_EQ(a.allocate_raw(3 * MiB + 100), x);
  EXPECT_EQ(a.stats().allocated, int64_t{22 * MiB + x_size});
  a.free_raw(x);
  // 14 MiB: the 15 MiB rest (merged) fits; its 1 MiB left is not split.
  void* v = a.allocate_raw(14 * MiB);
  EXPECT_EQ(static_cast<char*>(v) - static_cast<char*>(w), std::ptrdiff_t{3 * MiB});
  EXPECT_EQ(a.stats().allocated, int64_t{22 * MiB + 15 * MiB});
  // 3 MiB again: no merged block fits, x's deferred block does (the best fit among the
  // deferred); 512 left: not split.
  EXPECT_EQ(a.allocate_raw(3 * MiB), x);
  EXPECT_EQ(a.stats().allocated, int64_t{37 * MiB + x_size});
  a.free_raw(x);
  // 21 MiB: nothing fits, merged or deferred; the deferred blocks are merged (x has no free
  // neighbour: nothing changes) and still nothing fits. 10 MiB and more get a segment of the
  // request rounded up to 2 MiB, here 22 MiB, whose 1 MiB rest is not split.
  void* big = a.allocate_raw(21 * MiB);
  EXPECT_EQ(device.requests.back(), 22 * MiB);
  EXPECT_EQ(a.stats().allocated, int64_t{37 * MiB + 22 * MiB});
  EXPECT_TRUE(deferred_of(a.snapshot()[0]).empty());
  EXPECT_EQ(blocks_of(a.snapshot()[0]),
            (Blocks{{0, x_size, false}, {x_size, 20 * MiB - x_size, true}}));
  for (void* u : {w, v, y, z, t, big}) a.free_raw(u);
  EXPECT_EQ(a.stats().allocated, 0);
  EXPECT_EQ(a.stats().reserved, int64_t{64 * MiB});
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(device.frees, 4);
}

// Note [Deferred merging]: frees of one size reuse each other's blocks with no merging; a
// request that only the merged blocks can serve merges them instead of asking for a segment.
TEST(CachingAllocatorRules, DeferredBlocksServeTheirSizeAndMergeUnderPressure) {
  SimulatedDevice device(64 * MiB);
  CachingAllocator a(&device);
  std::vector<void*> quarter;  // four 512 KiB blocks: the whole 2 MiB segment
  for (int i = 0; i < 4; ++i) quarter.push_back(a.allocate_raw(512 * KiB));
  EXPECT_EQ(blocks_of(a.snapshot()[0]), (Blocks{{0, 512 * KiB, true},
                                                {512 * KiB, 512 * KiB, true},
                                                {MiB, 512 * KiB, true},
                                                {MiB + 512 * KiB, 512 * KiB, true}}));
  a.free_raw(quarter[1]);
  a.free_raw(quarter[2]);
  EXPECT_EQ(deferred_of(a.snapshot()[0]), (std::vector<size_t>{512 * KiB, MiB}));
  EXPECT_EQ(a.stats().allocated, int64_t{MiB});
  // The same size: the most recently freed block of that size first.
  EXPECT_EQ(a.allocate_raw(512 * KiB - 100), quarter[2]);
  EXPECT_EQ(a.allocate_raw(512 * KiB), quarter[1]);
  EXPECT_EQ(a.stats().allocated, int64_t{2 * MiB});
  a.free_raw(quarter[2]);
  a.free_raw(quarter[1]);
  // 256 KiB: no merged free block, so the smallest deferred block that fits (the most recently
  // freed of that size), split; its rest is a merged free block.
  EXPECT_EQ(a.allocate_raw(256 * KiB), quarter[1]);
  EXPECT_EQ(blocks_of(a.snapshot()[0]), (Blocks{{0, 512 * KiB, true},
                                                {512 * KiB, 256 * KiB, true},
                                                {768 * KiB, 256 * KiB, false},
                                                {MiB, 512 * KiB, false},
                                                {MiB + 512 * KiB, 512 * KiB, true}}));
  EXPECT_EQ(deferred_of(a.snapshot()[0]), (std::vector<size_t>{MiB}));
  a.free_raw(quarter[1]);
  // 1 MiB: nothing fits unmerged; merged, blocks 1 and 2 are one free 1 MiB block again.
  void* m = a.allocate_raw(MiB);
  EXPECT_EQ(m, quarter[1]);
  EXPECT_EQ(
      blocks_of(a.snapshot()[0]),
      (Blocks{{0, 512 * KiB, true}, {512 * KiB, MiB, true}, {MiB + 512 * KiB, 512 * KiB, true}}));
  EXPECT_EQ(device.requests, (std::vector<size_t>{2 * MiB}));  // no second segment
  EXPECT_EQ(a.stats().allocated, int64_t{2 * MiB});
  EXPECT_EQ(a.stats().reserved, int64_t{2 * MiB});
  // Freeing a deferred block again is a bug, caught.
  a.free_raw(m);
  EXPECT_THROW(a.free_raw(m), InternalError);
  for (void* v : {quarter[0], quarter[3]}) a.free_raw(v);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_TRUE(device.live.empty());
}

TEST(CachingAllocatorRules, OutOfMemoryEmptiesTheCacheRetriesAndThenRaises) {
  SimulatedDevice device(17 * MiB);
  CachingAllocator a(&device);
  a.free_raw(a.allocate_raw(15 * MiB));  // a 16 MiB segment (15 MiB rounded up to 2 MiB), cached
  EXPECT_EQ(a.stats().reserved, int64_t{16 * MiB});
  EXPECT_EQ(deferred_of(a.snapshot()[0]), (std::vector<size_t>{0}));  // not merged yet
  // 2 MiB for a small block does not fit beside it: the cache is emptied (the deferred block
  // merged first, so the segment is whole and free), the retry succeeds.
  void* q = a.allocate_raw(KiB);
  EXPECT_EQ(device.requests, (std::vector<size_t>{16 * MiB, 2 * MiB, 2 * MiB}));
  EXPECT_EQ(a.stats().reserved, int64_t{2 * MiB});
  EXPECT_EQ(device.frees, 1);
  // 3 MiB: its 20 MiB segment does not fit in the 15 MiB left, a segment of exactly 3 MiB does.
  void* r = a.allocate_raw(3 * MiB);
  EXPECT_EQ(std::vector<size_t>(device.requests.begin() + 3, device.requests.end()),
            (std::vector<size_t>{20 * MiB, 20 * MiB, 3 * MiB}));
  EXPECT_EQ(a.stats().reserved, int64_t{5 * MiB});
  // 17 MiB: neither 18 MiB (the segment) nor 17 MiB fits in the 12 MiB left: OutOfMemoryError,
  // after an empty_cache that could free nothing (both segments have a live block).
  const size_t before = device.requests.size();
  try {
    a.allocate_raw(17 * MiB);
    ADD_FAILURE() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA out of memory: tried to allocate 17 MiB "
                                         "(17825792 bytes) on the simulated device; 3.00098 MiB "
                                         "allocated by tensors, 1.99902 MiB cached"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(std::vector<size_t>(device.requests.begin() + before, device.requests.end()),
            (std::vector<size_t>{18 * MiB, 18 * MiB, 17 * MiB}));
  EXPECT_EQ(a.stats().allocated, int64_t{KiB + 3 * MiB});
  EXPECT_EQ(a.stats().reserved, int64_t{5 * MiB});
  a.free_raw(q);
  a.free_raw(r);
  a.empty_cache();
  EXPECT_TRUE(device.live.empty());
}

// Churn of tensor-like sizes, freed in a shuffled order: after every call the stats equal a
// naive recount of the live blocks, and every segment's blocks tile it with no two merged free
// blocks side by side (a free block next to a free one is deferred: Note [Deferred merging]).
// Every allocation is the one the rules pick, found by scanning the snapshot: a deferred block
// of exactly the size (the most recently freed), else the smallest merged free block of its
// pool that fits (lowest address among equals), else the smallest deferred block that fits
// (small pool: the most recently freed of that size; large: the lowest address), else, after
// merging every deferred block, the best fit among the merged runs, else a new segment (sizes
// up to 70 MiB reach every bin of Note [Allocator bookkeeping cost], the last one too).
TEST(CachingAllocatorRules, ChurnKeepsTheStatsExact) {
  SimulatedDevice device(size_t{1} << 34);
  CachingAllocator a(&device);
  std::vector<std::pair<void*, size_t>> live;
  std::map<char*, int> freed_at;  // the step each block was last freed at
  uint64_t state = 12345;
  auto next = [&] { return state = state * 6364136223846793005ull + 1442695040888963407ull; };
  auto check = [&] {
    int64_t allocated = 0, reserved = 0;
    for (const auto& s : a.snapshot()) {
      size_t end = 0;
      for (size_t k = 0; k < s.blocks.size(); ++k) {
        const auto& b = s.blocks[k];
        ASSERT_EQ(b.offset, end);
        ASSERT_FALSE(b.allocated && b.deferred);
        end += b.size;
        if (b.allocated) allocated += static_cast<int64_t>(b.size);
        if (k > 0) {
          const auto& p = s.blocks[k - 1];
          ASSERT_TRUE(b.allocated || b.deferred || p.allocated || p.deferred) << "unmerged";
        }
      }
      ASSERT_EQ(end, s.size);
      reserved += static_cast<int64_t>(s.size);
    }
    ASSERT_EQ(a.stats().allocated, allocated);
    ASSERT_EQ(a.stats().reserved, reserved);
    ASSERT_EQ(static_cast<size_t>(reserved), device.used());
  };
  struct Free {
    char* ptr;
    size_t size;
    bool small, deferred;
  };
  // Free blocks, and runs of free blocks merged, in address order (segments are device.live in
  // address order, as the snapshot's are).
  auto free_blocks = [&](bool merged) {
    std::vector<Free> out;
    auto segment = device.live.begin();
    for (const auto& s : a.snapshot()) {
      char* base = reinterpret_cast<char*>((segment++)->first);
      bool run = false;
      for (const auto& b : s.blocks) {
        if (b.allocated) {
          run = false;
        } else if (merged && run) {
          out.back().size += b.size;
        } else {
          out.push_back({base + b.offset, b.size, s.small, b.deferred});
          run = true;
        }
      }
    }
    return out;
  };
  auto expected_for = [&](size_t n) -> void* {
    const size_t size = CachingAllocator::round_size(n);
    const bool small = size <= MiB;
    const std::vector<Free> blocks = free_blocks(false);
    // Among the blocks `take` accepts: the smallest, then the lowest address or, with
    // `latest`, the most recently freed.
    auto pick = [&](const std::vector<Free>& from, auto take, bool latest) -> char* {
      const Free* best = nullptr;
      for (const Free& f : from) {
        if (f.small != small || f.size < size || !take(f)) continue;
        if (best == nullptr || f.size < best->size ||
            (f.size == best->size && latest && freed_at[f.ptr] > freed_at[best->ptr])) {
          best = &f;  // address order: without `latest` the first of a size wins
        }
      }
      return best == nullptr ? nullptr : best->ptr;
    };
    if (char* p = pick(
            blocks, [&](const Free& f) { return f.deferred && f.size == size; }, true)) {
      return p;
    }
    if (char* p = pick(
            blocks, [](const Free& f) { return !f.deferred; }, false))
      return p;
    if (char* p = pick(
            blocks, [](const Free& f) { return f.deferred; }, small))
      return p;
    return pick(
        free_blocks(true), [](const Free&) { return true; }, false);
  };
  for (int step = 0; step < 3000; ++step) {
    if (live.size() < 40 && next() % 3 != 0) {
      const size_t sizes[] = {4, 1000, 4096, 100000, MiB, 3 * MiB, 12 * MiB, 40 * MiB, 70 * MiB};
      const size_t n = sizes[next() % 9] + next() % 2048;
      void* expected = expected_for(n);
      const size_t requests = device.requests.size();
      live.emplace_back(a.allocate_raw(n), n);
      if (expected != nullptr) {
        ASSERT_EQ(live.back().first, expected) << "not the block the rules pick for " << n;
        ASSERT_EQ(device.requests.size(), requests);
      } else {
        ASSERT_GT(device.requests.size(), requests) << "no free block fits: a new segment";
      }
    } else if (!live.empty()) {
      const size_t k = next() % live.size();
      a.free_raw(live[k].first);
      freed_at[static_cast<char*>(live[k].first)] = step;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (step % 500 == 0) a.empty_cache();
    check();
  }
  for (const auto& [p, n] : live) a.free_raw(p);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_TRUE(device.live.empty());
}

// ---- Pinned host memory (Note [Pinned host blocks] in cuda/host_allocator.h) ----------------

// Fake page-locked blocks with a capacity, and events the test completes by hand.
class SimulatedHost final : public HostMemorySource {
 public:
  explicit SimulatedHost(size_t capacity) : capacity_(capacity) {}
  void* host_alloc(size_t nbytes) override {
    if (nbytes > capacity_ - used_) return nullptr;
    used_ += nbytes;
    const uintptr_t p = next_;
    next_ += nbytes + 4096;
    sizes_[p] = nbytes;
    return reinterpret_cast<void*>(p);
  }
  void host_free(void* ptr) override {
    used_ -= sizes_.at(reinterpret_cast<uintptr_t>(ptr));
    sizes_.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  void* record_event() override {
    events.push_back(false);
    return reinterpret_cast<void*>(events.size());  // 1-based id
  }
  bool query_event(void* event) override {
    return events.at(reinterpret_cast<uintptr_t>(event) - 1);
  }
  void destroy_event(void* event) override { ++destroyed; }
  size_t used() const { return used_; }

  std::vector<bool> events;  // completed?
  int destroyed = 0;

 private:
  size_t capacity_, used_ = 0;
  uintptr_t next_ = uintptr_t{1} << 40;
  std::map<uintptr_t, size_t> sizes_;
};

TEST(PinnedHostBlocks, PowerOfTwoBlocksReusedOnlyAfterTheirTransfer) {
  EXPECT_EQ(CachingHostAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingHostAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingHostAllocator::round_size(5000), 8192u);
  SimulatedHost host(1 << 20);
  CachingHostAllocator h(&host);
  char* p = static_cast<char*>(h.allocate_raw(1000));  // 1024
  EXPECT_EQ(h.stats().allocated, 1024);
  h.free_raw(p);  // no transfer used it: cached at once
  char* q = static_cast<char*>(h.allocate_raw(600));
  EXPECT_EQ(q, p);
  EXPECT_EQ(h.stats().host_allocs, 1);
  h.record_use(q + 10);  // a queued copy reads it
  h.free_raw(q);
  ASSERT_EQ(host.events.size(), 1u);  // recorded when freed
  EXPECT_EQ(h.stats().pending, 1024);
  EXPECT_TRUE(h.contains(q, 1024));  // still pinned memory
  // The copy has not completed: a new block, not q's.
  char* r = static_cast<char*>(h.allocate_raw(1000));
  EXPECT_NE(r, q);
  EXPECT_EQ(h.stats().host_allocs, 2);
  h.empty_cache();  // a pending block is not freed either
  EXPECT_EQ(host.used(), 2048u);
  host.events[0] = true;  // the stream passed the event
  char* s = static_cast<char*>(h.allocate_raw(700));
  EXPECT_EQ(s, q);
  EXPECT_EQ(host.destroyed, 1);
  EXPECT_EQ(h.stats().pending, 0);
  // contains(): inside one block only; record_use of other memory changes nothing.
  EXPECT_TRUE(h.contains(r + 1023, 1));
  EXPECT_FALSE(h.contains(r + 1023, 2));
  EXPECT_FALSE(h.contains(r - 1, 1));
  int unpinned = 0;
  h.record_use(&unpinned);
  h.free_raw(r);
  h.free_raw(s);
  EXPECT_EQ(host.events.size(), 1u);  // neither was used since it was handed out again
  EXPECT_EQ(h.stats().allocated, 0);
  EXPECT_EQ(h.stats().reserved, 2048);
  h.empty_cache();
  EXPECT_EQ(h.stats().reserved, 0);
  EXPECT_EQ(host.used(), 0u);
}

TEST(PinnedHostBlocks, OutOfMemoryEmptiesTheCacheThenRaises) {
  SimulatedHost host(4096);
  CachingHostAllocator h(&host);
  h.free_raw(h.allocate_raw(2048));  // cached
  void* big = h.allocate_raw(4096);  // needs the cached 2048 back first
  EXPECT_EQ(h.stats().reserved, 4096);
  try {
    h.allocate_raw(1);
    ADD_FAILURE() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("pinned host memory: cannot page-lock 512 bytes (1 "
                                         "asked for); 4096 bytes are pinned"),
              std::string::npos)
        << e.what();
  }
  h.free_raw(big);
}

// ---- pin_memory and non_blocking transfers on the CUDA device -------------------------------

std::vector<double> as_doubles(const Tensor& t) {
  Tensor c = t.cpu().contiguous().to(kFloat64);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

TEST(NonBlockingTransfers, PinMemoryAsTorch) {
  ASSERT_TRUE(is_available()) << unavailable_reason();
  Tensor x = arange(6, kFloat32).reshape({2, 3}).t();  // not contiguous
  EXPECT_FALSE(is_pinned(x));
  Tensor p = pin_memory(x);
  EXPECT_TRUE(is_pinned(p));
  EXPECT_TRUE(p.device().is_cpu() && p.is_contiguous());
  EXPECT_EQ(as_doubles(p), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(pin_memory(p).unsafe_impl(), p.unsafe_impl());  // already pinned: itself
  EXPECT_TRUE(is_pinned(p.select(0, 1)));                   // a view of pinned memory
  EXPECT_TRUE(is_pinned(pin_memory(empty({0}))));
  Tensor g = x.cuda();
  EXPECT_FALSE(is_pinned(g));
  try {
    pin_memory(g);
    ADD_FAILURE() << "pinned a CUDA tensor";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("pin_memory(): cannot pin a tensor on cuda:0: only "
                                         "CPU tensors can be pinned"),
              std::string::npos)
        << e.what();
  }
  // Pinned memory is host memory: a kernel refuses it (Note [Host-run device arena]).
  try {
    runtime().check_device_pointer(p.unsafe_impl()->data(), 24, "a kernel");
    if (build_name().find("host-run") != std::string::npos) ADD_FAILURE() << "accepted";
  } catch (const DeviceError&) {
  }
}

// Which path a transfer took shows in the pinned allocator: a block that a queued copy used is
// parked until its event (host-run: complete, but only looked at by the next allocation).
TEST(NonBlockingTransfers, QueuedFromAndIntoPinnedMemoryOnly) {
  ASSERT_TRUE(is_available()) << unavailable_reason();
  CachingHostAllocator& h = host_allocator();
  const Tensor x = arange(300, kFloat64) * 0.5;  // 2400 bytes: a 4096-byte pinned block
  const std::vector<double> want = as_doubles(x);
  h.empty_cache();
  // Blocking: no pinned memory involved.
  Tensor g = x.to(kCUDA);
  EXPECT_EQ(h.stats().pending + h.stats().allocated, 0);
  {
    Tensor p = pin_memory(x);
    g = p.to(kCUDA, std::nullopt, /*non_blocking=*/true);  // queued straight from p
    EXPECT_EQ(h.stats().pending, 0);                       // p lives
  }
  EXPECT_EQ(h.stats().pending, 4096);  // p died while its block was in use: parked
  EXPECT_EQ(as_doubles(g), want);
  h.empty_cache();
  // Pageable source: staged through a pinned block, parked when the staging copy dies.
  Tensor f = x.t().to(kCUDA, kFloat32, /*non_blocking=*/true);
  EXPECT_EQ(h.stats().pending, 4096);
  EXPECT_EQ(h.stats().allocated, 0);
  EXPECT_EQ(as_doubles(f), as_doubles(x.to(kFloat32)));
  h.empty_cache();
  // Device -> pinned: queued; the caller synchronizes before reading (torch's rule).
  Tensor d = pin_memory(zeros({300}, kFloat64));
  d.copy_(g, /*non_blocking=*/true);
  synchronize();
  EXPECT_EQ(as_doubles(d), want);
  EXPECT_EQ(d.version(), 1u);
  d = Tensor();
  EXPECT_EQ(h.stats().pending, 4096);
  h.empty_cache();
  // Device -> pageable, or a conversion on the CPU: synchronous, no pinned block used.
  Tensor e = zeros({300}, kFloat64);
  e.copy_(g, true);
  EXPECT_EQ(as_doubles(e), want);
  Tensor e32 = pin_memory(zeros({300}, kFloat32));
  e32.copy_(g, true);  // float64 -> float32 on the CPU after a synchronous download
  EXPECT_EQ(as_doubles(e32), as_doubles(x.to(kFloat32)));
  e32 = Tensor();
  EXPECT_EQ(h.stats().pending, 0);
  EXPECT_EQ(as_doubles(g.to(kCPU, std::nullopt, true)), want);  // pageable result: synchronous
  EXPECT_EQ(h.stats().pending, 0);
}

}  // namespace
}  // namespace mutagrad::cuda
