// Writes racing backward passes, kSnapshot's registry, the mutation log and the CPU backend's
// worker, each on several threads at once and checked against the sequential result (issue 18;
// the contract is docs/thread-safety.md). Also run under --config=tsan: a race shows up there
// even when the numbers come out right.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "autograd/mutation_log.h"
#include "autograd/mutation_policy.h"
#include "concurrency_util.h"
#include "grad_test_util.h"
#include "tensor/cpu/indexing.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;
using autograd::VariableList;
using indexing::Slice;
using testing_util::run_together;
using testing_util::values;

constexpr int kThreads = 4;

// What one backward pass that raced a write of its saved tensor's storage gave.
struct RaceOutcomes {
  int exact = 0;                 // the gradient of the values saved
  int stale = 0;                 // the stale-tensor error, naming the racing write whole
  std::vector<std::string> bad;  // anything else: a wrong number or a torn message
};

// The stale error for a write made by `op` in this file: the site, when remembered, is whole.
bool is_clean_stale(const std::string& message, const std::string& op) {
  if (message.find("modified by an inplace operation") == std::string::npos) return false;
  if (message.find("too old to be remembered") != std::string::npos) return true;
  return message.find("The first in-place write after it was saved is " + op + " at " + __FILE__) !=
         std::string::npos;
}

// Sorts the outcome of one backward pass of (w * 3).sum() that raced writes of "add_".
void classify(const std::function<VariableList()>& backward, RaceOutcomes& out) {
  try {
    VariableList g = backward();
    if (values(g[0]) == std::vector<double>(4, 3.0)) {
      ++out.exact;
    } else {
      out.bad.push_back("gradient " + std::to_string(values(g[0])[0]));
    }
  } catch (const AutogradError& e) {
    if (is_clean_stale(e.what(), "add_")) {
      ++out.stale;
    } else {
      out.bad.push_back(e.what());
    }
  }
}

constexpr int kPasses = 150;

TEST(ConcurrentMutation, BackwardRacingAWriteIsExactOrACleanStaleError) {
  // Thread 0 runs forward + backward of (w * base[0]).sum() (MulBackward0 saves base[0]);
  // thread 1 keeps adding to base[1], a disjoint row of the same storage: the two never touch
  // the same bytes, but every write moves the version backward checks.
  Tensor base = full({2, 4}, 3.0, kFloat64);
  Tensor w = ones({4}, kFloat64).requires_grad_();
  RaceOutcomes out;
  std::atomic<bool> done{false};
  run_together(2, [&](int t) {
    if (t == 1) {
      Tensor row = base.select(0, 1);
      while (!done.load(std::memory_order_acquire)) row.add_(1.0);
      return;
    }
    for (int i = 0; i < kPasses; ++i) {
      Tensor loss = (w * base.select(0, 0)).sum();
      classify([&] { return autograd::grad({loss}, {w}); }, out);
    }
    done.store(true, std::memory_order_release);
  });
  EXPECT_EQ(out.exact + out.stale, kPasses);
  EXPECT_TRUE(out.bad.empty()) << out.bad.size() << " bad outcomes, first: " << out.bad[0];
}

TEST(ConcurrentMutation, BackwardRacingASnapshotIsAlwaysExact) {
  // Under kSnapshot, thread 1 writes base[1] once per pass, after the forward returned and while
  // backward unpacks base[0]: the write first swaps a copy of base[0] into the saved slot, and
  // backward must get the original or the copy with its own version, never a torn pair.
  Tensor base = full({2, 4}, 3.0, kFloat64);
  Tensor w = ones({4}, kFloat64).requires_grad_();
  RaceOutcomes out;
  std::atomic<int> saved{0}, written{0};
  run_together(2, [&](int t) {
    if (t == 1) {
      Tensor row = base.select(0, 1);
      for (int i = 1; i <= kPasses; ++i) {
        while (saved.load(std::memory_order_acquire) < i) std::this_thread::yield();
        row.add_(1.0);
        written.store(i, std::memory_order_release);
      }
      return;
    }
    MutationPolicyGuard guard(MutationPolicy::kSnapshot);
    for (int i = 1; i <= kPasses; ++i) {
      Tensor loss = (w * base.select(0, 0)).sum();
      saved.store(i, std::memory_order_release);
      classify([&] { return autograd::grad({loss}, {w}); }, out);
      while (written.load(std::memory_order_acquire) < i) std::this_thread::yield();
    }
  });
  EXPECT_EQ(out.exact, kPasses);
  EXPECT_TRUE(out.bad.empty()) << out.bad.size() << " bad outcomes, first: " << out.bad[0];
  EXPECT_EQ(autograd::num_snapshot_slots(), 0) << "a slot outlived its graph";
}

TEST(ConcurrentMutation, SnapshotRegistryUnderConcurrentWriters) {
  // Each thread saves its own row of one shared storage under kSnapshot, overwrites it, then
  // runs backward: the gradient is the row's value at save time. Every write (any thread's)
  // snapshots every registered row of the storage, so the threads register, copy and release
  // one another's slots all the time.
  constexpr int kRegistryPasses = 60;
  Tensor shared = zeros({kThreads, 4}, kFloat64);
  std::vector<RaceOutcomes> out(kThreads);
  run_together(kThreads, [&](int t) {
    Tensor w = ones({4}, kFloat64).requires_grad_();
    Tensor row = shared.select(0, t);
    RaceOutcomes& mine = out[static_cast<size_t>(t)];
    for (int i = 0; i < kRegistryPasses; ++i) {
      const double value = t * 1000 + i;
      row.fill_(value);
      Tensor loss;
      {
        MutationPolicyGuard guard(MutationPolicy::kSnapshot);
        loss = (w * row).sum();
      }
      row.fill_(-1.0);  // snapshots the saved row first
      try {
        VariableList g = autograd::grad({loss}, {w});
        if (values(g[0]) == std::vector<double>(4, value)) {
          ++mine.exact;
        } else {
          mine.bad.push_back("gradient " + std::to_string(values(g[0])[0]));
        }
      } catch (const AutogradError& e) {
        // Only another thread's write racing the forward op itself (Note [Snapshot slots and
        // threads] in autograd/mutation_policy.cc): never this thread's own later fill_.
        if (is_clean_stale(e.what(), "fill_")) {
          ++mine.stale;
        } else {
          mine.bad.push_back(e.what());
        }
      }
    }
  });
  int exact = 0;
  for (const RaceOutcomes& o : out) {
    EXPECT_EQ(o.exact + o.stale, kRegistryPasses);
    EXPECT_TRUE(o.bad.empty()) << o.bad.size() << " bad outcomes, first: " << o.bad[0];
    exact += o.exact;
  }
  EXPECT_GT(exact, 0) << "no pass got its snapshot";
  EXPECT_EQ(autograd::num_snapshot_slots(), 0);
  EXPECT_EQ(shared.version(), static_cast<uint32_t>(kThreads * kRegistryPasses * 2));
}

TEST(ConcurrentMutation, MutationLogRecordsEveryThreadsWrites) {
  constexpr int kWrites = 200;
  Tensor x = zeros({kThreads, 4});
  autograd::MutationLog log;
  run_together(kThreads, [&](int t) {
    Tensor row = x.select(0, t);
    for (int i = 0; i < kWrites; ++i) row.add_(1.0);
  });
  log.stop();
  const std::vector<autograd::MutationRecord> records = log.records();
  ASSERT_EQ(records.size(), static_cast<size_t>(kThreads * kWrites));
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(records[i].op, "add_");
    EXPECT_EQ(records[i].file, __FILE__);
    EXPECT_EQ(records[i].storage, 0);
    EXPECT_EQ(records[i].shape, (std::vector<int64_t>{4}));
  }
  EXPECT_EQ(x.version(), static_cast<uint32_t>(kThreads * kWrites));
  EXPECT_EQ(values(x), std::vector<double>(kThreads * 4, kWrites));
}

// ---- The CPU backend's worker ---------------------------------------------------------------

// Above kParallelThreshold (tensor/cpu/parallel.h): element-wise ops split between the caller
// and the backend's one worker thread, which every thread here competes for.
constexpr int64_t kCols = 70000;

// The writes one thread makes to its row, also run sequentially for the oracle.
void write_row(Tensor row, const Tensor& every_other) {
  row.add_(1.0);
  row.mul_(2.0);
  row.set_item_({Slice(0, 10)}, 5.0);
  row.index_put_({every_other}, ones({kCols / 2}, kFloat64), /*accumulate=*/true);
  row.copy_(row * 3.0);
}

TEST(ConcurrentMutation, DisjointViewsWrittenByEveryKindOfWrite) {
  const int saved_threads = cpu::indexing_num_threads();
  cpu::set_indexing_num_threads(3);  // index_put_ starts threads of its own too
  const Tensor every_other = arange(0, kCols, 2, kInt64);
  Tensor x = zeros({kThreads, kCols}, kFloat64);
  run_together(kThreads, [&](int t) {
    for (int i = 0; i < 2; ++i) write_row(x.select(0, t), every_other);
  });
  cpu::set_indexing_num_threads(saved_threads);
  Tensor expected = zeros({kThreads, kCols}, kFloat64);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < 2; ++i) write_row(expected.select(0, t), every_other);
  }
  EXPECT_EQ(values(x), values(expected));
  EXPECT_EQ(x.version(), static_cast<uint32_t>(kThreads * 2 * 5));
}

TEST(ConcurrentMutation, OutOfPlaceOpsShareTheWorker) {
  // Whether a call got the worker or ran inline, its result is the same bits (the split depends
  // only on the size): each thread's results equal the ones computed alone beforehand.
  const Tensor a = arange(0, kCols, 1, kFloat64) * 0.001;
  auto compute = [&](int t) {
    Tensor r = (a * static_cast<double>(t + 1) + 0.5).sin();
    return std::vector<double>{values(r.sum())[0], values(r.mean())[0], values(r)[kCols - 1]};
  };
  std::vector<std::vector<double>> alone(kThreads), together(kThreads);
  for (int t = 0; t < kThreads; ++t) alone[static_cast<size_t>(t)] = compute(t);
  run_together(kThreads, [&](int t) {
    for (int i = 0; i < 3; ++i) together[static_cast<size_t>(t)] = compute(t);
  });
  EXPECT_EQ(together, alone);
}

}  // namespace
}  // namespace mutagrad
