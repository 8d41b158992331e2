// Backward passes on several threads that share a leaf, and concurrent in-place bumps of one
// version counter (issue 20 item 9). Each test starts its threads behind one barrier so that
// they really overlap; a lost update, a torn write or a double-created accumulator shows up as
// a wrong number, and a use-after-free as a crash ("pure virtual method called").
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "autograd/autograd_meta.h"
#include "autograd/history.h"
#include "concurrency_util.h"
#include "mutagrad.h"

namespace mutagrad {
namespace {

using testing_util::run_together;

constexpr int kThreads = 4;

std::vector<double> values(const Tensor& t) {
  Tensor c = t.contiguous().to(kFloat64);
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

TEST(ConcurrentBackward, SharedLeafGetsEveryGradientExactlyOnce) {
  constexpr int kPasses = 200;
  for (int round = 0; round < 5; ++round) {
    Tensor w = ones({3}).requires_grad_();
    run_together(kThreads, [&](int) {
      for (int i = 0; i < kPasses; ++i) (w * 2.0).sum().backward();
    });
    ASSERT_TRUE(w.grad().defined());
    // 2 per pass; every value is an exact small integer in float32.
    EXPECT_EQ(values(w.grad()), std::vector<double>(3, 2.0 * kThreads * kPasses))
        << "round " << round << ": an accumulation was lost";
  }
}

TEST(ConcurrentBackward, FirstGradientIsNotLostWhenThreadsRaceToCreateIt) {
  // Every pass is the first one for a fresh leaf: the threads race on creating .grad.
  for (int round = 0; round < 300; ++round) {
    Tensor w = ones({2}).requires_grad_();
    run_together(kThreads, [&](int t) { (w * static_cast<double>(t + 1)).sum().backward(); });
    ASSERT_TRUE(w.grad().defined()) << "round " << round;
    EXPECT_EQ(values(w.grad()), std::vector<double>(2, 10.0)) << "round " << round;  // 1+2+3+4
  }
}

TEST(ConcurrentBackward, SharedLeafThroughSavedTensors) {
  // w * w saves w twice; the unpacked leaf accumulates through the original AccumulateGrad.
  constexpr int kPasses = 100;
  Tensor w = full({4}, 3.0, kFloat64).requires_grad_();
  run_together(kThreads, [&](int) {
    for (int i = 0; i < kPasses; ++i) (w * w).sum().backward();
  });
  EXPECT_EQ(values(w.grad()), std::vector<double>(4, 6.0 * kThreads * kPasses));
}

TEST(ConcurrentBackward, AccumulatorIsCreatedOnce) {
  for (int round = 0; round < 500; ++round) {
    Tensor w = zeros({1}).requires_grad_();
    std::vector<std::shared_ptr<autograd::Node>> got(kThreads);
    run_together(kThreads,
                 [&](int t) { got[static_cast<size_t>(t)] = autograd::grad_accumulator(w); });
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_NE(got[static_cast<size_t>(t)], nullptr);
      EXPECT_EQ(got[static_cast<size_t>(t)].get(), got[0].get())
          << "round " << round << ": thread " << t << " got a second AccumulateGrad";
    }
    EXPECT_EQ(autograd::grad_accumulator(w).get(), got[0].get());
  }
}

TEST(ConcurrentBackward, GradCanBeReadWhileOtherThreadsAccumulate) {
  constexpr int kPasses = 200;
  Tensor w = ones({8}).requires_grad_();
  std::atomic<bool> done{false};
  std::atomic<int> writers_left{kThreads - 1};
  run_together(kThreads, [&](int t) {
    if (t == 0) {
      // The reader: the handle is always either undefined or a [8] float32 tensor.
      int reads = 0;
      while (!done.load(std::memory_order_acquire) || reads < 100) {
        Tensor g = w.grad();
        if (g.defined()) {
          ASSERT_EQ(g.numel(), 8);
          ASSERT_EQ(g.dtype(), kFloat32);
        }
        ++reads;
      }
      return;
    }
    for (int i = 0; i < kPasses; ++i) (w * 1.0).sum().backward();
    if (writers_left.fetch_sub(1) == 1) done.store(true, std::memory_order_release);
  });
  EXPECT_EQ(values(w.grad()), std::vector<double>(8, 1.0 * (kThreads - 1) * kPasses));
}

// ---- VersionCounter ----------------------------------------------------------------------------

// Thread t bumps with op kOps[t], file kFiles[t] and line t * kLineStride + i (i = its i-th
// bump): a site mixing two bumps has an op, file and line that disagree.
constexpr const char* kOps[kThreads] = {"op0_", "op1_", "op2_", "op3_"};
constexpr const char* kFiles[kThreads] = {"file0.cc", "file1.cc", "file2.cc", "file3.cc"};
constexpr int kLineStride = 1000000;

// Whether `site` is one that thread t wrote for one of its first `bumps` bumps.
bool is_written_site(const MutationSite& site, int bumps) {
  const int t = site.line / kLineStride;
  const int i = site.line % kLineStride;
  return t >= 0 && t < kThreads && i >= 0 && i < bumps && site.op == kOps[t] &&
         site.file == kFiles[t];
}

// One round: kThreads - 1 bumpers, one reader; returns how many sites the reader saw torn.
int bump_concurrently(VersionCounter& vc, int bumps, int* seen) {
  std::atomic<int> bumpers_left{kThreads - 1};
  std::atomic<int> torn{0};
  run_together(kThreads, [&](int t) {
    if (t == 0) {
      // The reader: every site it can see is one some bumper wrote, whole.
      while (bumpers_left.load(std::memory_order_acquire) > 0) {
        const uint32_t now = vc.current();
        for (uint32_t back = 1; back <= VersionCounter::kSiteHistory && back <= now; ++back) {
          const auto site = vc.site_of_bump(now - back);  // empty while being written
          if (!site) continue;
          ++*seen;
          if (!is_written_site(*site, bumps)) torn.fetch_add(1, std::memory_order_relaxed);
        }
      }
      return;
    }
    for (int i = 0; i < bumps; ++i) vc.bump({kOps[t], kFiles[t], t * kLineStride + i});
    bumpers_left.fetch_sub(1, std::memory_order_acq_rel);
  });
  return torn.load();
}

TEST(ConcurrentVersionCounter, EveryBumpCountsOnceAndNoSiteIsTorn) {
  constexpr int kBumps = 20000;
  for (int round = 0; round < 20; ++round) {
    VersionCounter vc;
    int seen = 0;
    const int torn = bump_concurrently(vc, kBumps, &seen);
    ASSERT_EQ(vc.current(), static_cast<uint32_t>((kThreads - 1) * kBumps)) << "round " << round;
    ASSERT_EQ(torn, 0) << "round " << round << ": of " << seen << " sites read during the bumps";
    // Once quiet, the last kSiteHistory bumps are all remembered, each once.
    std::set<int> lines;
    for (uint32_t back = 1; back <= VersionCounter::kSiteHistory; ++back) {
      const auto site = vc.site_of_bump(vc.current() - back);
      ASSERT_TRUE(site) << "bump " << vc.current() - back << " has no site";
      EXPECT_TRUE(is_written_site(*site, kBumps)) << site->op << " line " << site->line;
      lines.insert(site->line);
    }
    EXPECT_EQ(lines.size(), VersionCounter::kSiteHistory);
    EXPECT_FALSE(vc.site_of_bump(vc.current() - VersionCounter::kSiteHistory - 1));
    EXPECT_FALSE(vc.site_of_bump(vc.current()));
  }
}

TEST(ConcurrentVersionCounter, ViewsBumpTheSharedCounterExactlyOncePerWrite) {
  // In-place writes on disjoint views of one tensor (no autograd): one bump each.
  constexpr int kWrites = 2000;
  Tensor x = zeros({kThreads, 4});
  run_together(kThreads, [&](int t) {
    Tensor row = x.select(0, t);
    for (int i = 0; i < kWrites; ++i) row.add_(1.0);
  });
  EXPECT_EQ(x.version(), static_cast<uint32_t>(kThreads * kWrites));
  EXPECT_EQ(values(x), std::vector<double>(kThreads * 4, static_cast<double>(kWrites)));
}

}  // namespace
}  // namespace mutagrad
