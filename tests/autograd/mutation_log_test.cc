// MutationLog: records exactly the bumps made inside its scope (count = the version deltas), in
// order, with their op and file:line, the saved tensors of watched graphs they make stale and
// the bytes kSnapshot copied; JSON Lines and the summary.
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::MutationLog;
using autograd::MutationRecord;
using testing_util::leaf;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(MutationLog, RecordsExactlyTheBumpsInsideItsScope) {
  Tensor x = zeros({4}, kFloat64);
  Tensor y = zeros({2, 3}, kFloat64);
  x.add_(1.0);  // before the log: not recorded
  std::vector<int> lines;
  std::vector<uint32_t> x0{x.version()}, y0{y.version()};
  {
    MutationLog log;
    EXPECT_TRUE(log.active());
    EXPECT_EQ(autograd::detail::num_active_mutation_logs(), 1);
    lines.push_back(__LINE__ + 1);
    x.mul_(2.0);
    lines.push_back(__LINE__ + 1);
    y.select(0, 1).fill_(3.0);
    lines.push_back(__LINE__ + 1);
    x.narrow(0, 1, 2).zero_();
    lines.push_back(__LINE__ + 1);
    y.copy_(ones({2, 3}, kFloat64));
    Tensor unrelated = x * 2.0;  // not a write
    const std::vector<MutationRecord> records = log.records();
    const uint32_t deltas = (x.version() - x0[0]) + (y.version() - y0[0]);
    ASSERT_EQ(records.size(), static_cast<size_t>(deltas));
    ASSERT_EQ(records.size(), 4u);
    const char* ops[] = {"mul_", "fill_", "zero_", "copy_"};
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(records[i].index, static_cast<int64_t>(i));
      EXPECT_EQ(records[i].op, ops[i]);
      EXPECT_TRUE(ends_with(records[i].file, "mutation_log_test.cc")) << records[i].file;
      EXPECT_EQ(records[i].line, lines[i]) << records[i].op;
      EXPECT_EQ(records[i].version_after, records[i].version_before + 1);
      EXPECT_TRUE(records[i].saved_by.empty());
    }
    // Storages numbered by first appearance; a view writes its base's.
    EXPECT_EQ(records[0].storage, 0);
    EXPECT_EQ(records[1].storage, 1);
    EXPECT_EQ(records[2].storage, 0);
    EXPECT_EQ(records[3].storage, 1);
    EXPECT_EQ(records[0].version_before, 1u);  // x was written once before the log
    EXPECT_EQ(records[2].version_before, 2u);
    log.stop();
    EXPECT_FALSE(log.active());
    x.add_(1.0);  // after stop: not recorded
    EXPECT_EQ(log.num_writes(), 4);
    EXPECT_EQ(log.summary(), "4 writes, 0 hit saved tensors, 0 bytes snapshotted");
  }
  EXPECT_EQ(autograd::detail::num_active_mutation_logs(), 0);
}

TEST(MutationLog, NamesTheSavedTensorsAWriteMakesStale) {
  Tensor a = leaf({3}, 1);
  Tensor h = a * 2.0;
  Tensor e = h.exp();
  Tensor loss = (h * h).sum() + e.sum();
  MutationLog log;
  log.watch({loss});
  h.add_(1.0);             // stales MulBackward0's self and other
  h.add_(1.0);             // already stale: hits nothing new
  e.select(0, 0).zero_();  // stales ExpBackward0's result
  const std::vector<MutationRecord> r = log.records();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].saved_by, (std::vector<std::string>{"MulBackward0.self", "MulBackward0.other"}));
  EXPECT_TRUE(r[1].saved_by.empty());
  EXPECT_EQ(r[2].saved_by, (std::vector<std::string>{"ExpBackward0.result"}));
  EXPECT_EQ(log.num_hits(), 2);
  EXPECT_EQ(log.summary(), "3 writes, 2 hit saved tensors, 0 bytes snapshotted");
}

TEST(MutationLog, CountsTheBytesSnapshotted) {
  Tensor a = leaf({5}, 2);
  Tensor h = a * 1.0;
  Tensor loss;
  MutationLog log;
  {
    MutationPolicyGuard guard(MutationPolicy::kSnapshot);
    loss = (h * h).sum();  // h saved twice, snapshotted once
  }
  log.watch({loss});
  h.mul_(3.0);
  h.mul_(3.0);  // already a private copy: nothing to snapshot
  const std::vector<MutationRecord> r = log.records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].snapshot_bytes, 5 * 8);
  EXPECT_EQ(r[0].saved_by, (std::vector<std::string>{"MulBackward0.self", "MulBackward0.other"}));
  EXPECT_EQ(r[1].snapshot_bytes, 0);
  EXPECT_TRUE(r[1].saved_by.empty());  // the graph now holds the copy
  EXPECT_EQ(log.summary(), "2 writes, 1 hit saved tensors, 40 bytes snapshotted");
  loss.backward();  // the snapshot keeps backward correct
}

TEST(MutationLog, JsonLines) {
  Tensor x = zeros({2}, kFloat64);
  MutationLog log;
  const int line = __LINE__ + 1;
  x.add_(1.0);
  x.index_put_({tensor({int64_t{0}})}, tensor({2.0}, kFloat64));
  const std::string jsonl = log.to_jsonl();
  std::istringstream in(jsonl);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 2u) << jsonl;
  EXPECT_EQ(lines[0].rfind("{\"index\": 0, \"op\": \"add_\", \"file\": \"", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("mutation_log_test.cc\", \"line\": " + std::to_string(line) +
                          ", \"shape\": [2], \"dtype\": \"float64\", \"index_expression\": null, "
                          "\"storage\": 0, \"version_before\": 0, \"version_after\": 1, "
                          "\"saved_by\": [], \"snapshot_bytes\": 0}"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("\"op\": \"index_put_\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("\"index_expression\": \"[tensor(shape=[1], dtype=int64)]\""),
            std::string::npos)
      << lines[1];
  const std::string path = ::testing::TempDir() + "/mutations.jsonl";
  log.write_jsonl(path);
  std::ifstream f(path);
  std::stringstream back;
  back << f.rdbuf();
  EXPECT_EQ(back.str(), jsonl);
  EXPECT_THROW(log.write_jsonl("/nonexistent-dir/x.jsonl"), ValueError);
}

TEST(MutationLog, NestedLogsAndOtherThreads) {
  Tensor x = zeros({8}, kFloat64);
  MutationLog outer;
  x.add_(1.0);
  {
    MutationLog inner;
    std::thread t([&] { x.narrow(0, 0, 4).add_(1.0); });
    t.join();
    x.add_(1.0);
    EXPECT_EQ(inner.num_writes(), 2);
  }
  x.add_(1.0);
  EXPECT_EQ(outer.num_writes(), 4);
  EXPECT_EQ(static_cast<uint32_t>(outer.num_writes()), x.version());
}

// The class test for what a record shows: every in-place write of the library, run alone
// inside a log, is one record naming its op, the shape and dtype of the tensor written and, for
// the indexed writes, the index expression. A write path that bumps without passing its tensor
// shows up here as an empty shape.
TEST(MutationLog, EveryWriteRecordsItsShapeAndIndex) {
  using indexing::Ellipsis;
  using indexing::None;
  using indexing::Slice;
  struct Case {
    const char* op;
    std::function<void(Tensor&)> write;
    std::vector<int64_t> shape;  // of the tensor written (x[idx] = v: x)
    std::string index;           // "" for writes that are not indexed
    bool differentiable;         // also run with x a non-leaf that requires grad
  };
  const Tensor idx = tensor({int64_t{0}, int64_t{2}});
  const Tensor mask = tensor({true, false, true, false});
  const std::vector<Case> cases = {
      {"add_", [](Tensor& x) { x.add_(1.0); }, {4, 3}, "", true},
      {"mul_", [](Tensor& x) { x.mul_(2.0); }, {4, 3}, "", true},
      {"add_", [](Tensor& x) { x.add_(ones({3}, kFloat64)); }, {4, 3}, "", true},
      {"zero_", [](Tensor& x) { x.narrow(0, 1, 2).zero_(); }, {2, 3}, "", true},
      {"fill_", [](Tensor& x) { x.select(1, 0).fill_(2.0); }, {4}, "", true},
      {"copy_",
       [](Tensor& x) {
         x.copy_(ones({4, 3}, kFloat64));
       },
       {4, 3},
       "",
       true},
      {"relu_", [](Tensor& x) { x.relu_(); }, {4, 3}, "", true},
      {"clamp_", [](Tensor& x) { x.clamp_(0.0, 1.0); }, {4, 3}, "", true},
      {"addcmul_",
       [](Tensor& x) {
         x.addcmul_(ones({4, 3}, kFloat64), ones({3}, kFloat64), 0.5);
       },
       {4, 3},
       "",
       true},
      {"masked_fill_",
       [&](Tensor& x) { x.masked_fill_(mask.unsqueeze(1), 0.0); },
       {4, 3},
       "",
       true},
      {"index_add_",
       [&](Tensor& x) {
         x.index_add_(0, idx, ones({2, 3}, kFloat64));
       },
       {4, 3},
       "",
       true},
      {"index_copy_",
       [&](Tensor& x) {
         x.index_copy_(0, idx, ones({2, 3}, kFloat64));
       },
       {4, 3},
       "",
       true},
      {"index_fill_", [&](Tensor& x) { x.index_fill_(1, idx, 5.0); }, {4, 3}, "", true},
      {"scatter_",
       [&](Tensor& x) {
         x.scatter_(0, zeros({1, 3}, kInt64), ones({1, 3}, kFloat64));
       },
       {4, 3},
       "",
       true},
      {"scatter_add_",
       [&](Tensor& x) {
         x.scatter_add_(0, zeros({1, 3}, kInt64), ones({1, 3}, kFloat64));
       },
       {4, 3},
       "",
       true},
      {"put_", [&](Tensor& x) { x.put_(idx, ones({2}, kFloat64)); }, {4, 3}, "", true},
      {"masked_scatter_",
       [&](Tensor& x) {
         x.masked_scatter_(mask.unsqueeze(1), ones({4, 3}, kFloat64));
       },
       {4, 3},
       "",
       true},
      {"set_item_",
       [](Tensor& x) {
         x.set_item_({1, 2}, 7.0);
       },
       {4, 3},
       "[1, 2]",
       true},
      {"set_item_",
       [](Tensor& x) {
         x.set_item_({Slice(0, 2), None}, 7.0);
       },
       {4, 3},
       "[0:2, None]",
       true},
      {"set_item_",
       [](Tensor& x) {
         x.set_item_({Ellipsis, Slice(None, None, 2)}, ones({2}, kFloat64));
       },
       {4, 3},
       "[..., ::2]",
       true},
      {"set_item_",
       [&](Tensor& x) { x.set_item_({mask}, 0.0); },
       {4, 3},
       "[tensor(shape=[4], dtype=bool)]",
       true},
      {"index_put_",
       [&](Tensor& x) {
         x.index_put_({idx, Tensor()}, ones({3}, kFloat64), true);
       },
       {4, 3},
       "[tensor(shape=[2], dtype=int64), None]",
       true},
      {"t_", [](Tensor& x) { x.t_(); }, {4, 3}, "", false},  // the shape before the write
  };
  for (bool differentiable : {false, true}) {
    for (const Case& c : cases) {
      if (differentiable && !c.differentiable) continue;
      SCOPED_TRACE(std::string(c.op) + (differentiable ? " (requires grad)" : "") + " " + c.index);
      Tensor a = leaf({4, 3}, 5);
      Tensor x = differentiable ? a * 1.0 : arange(12, kFloat64).reshape({4, 3});
      const uint32_t before = x.version();
      MutationLog log;
      c.write(x);
      log.stop();
      const std::vector<MutationRecord> r = log.records();
      ASSERT_EQ(r.size(), 1u);
      EXPECT_EQ(x.version(), before + 1);
      EXPECT_EQ(r[0].op, c.op);
      EXPECT_TRUE(ends_with(r[0].file, "mutation_log_test.cc")) << r[0].file;
      EXPECT_EQ(r[0].shape, c.shape);
      EXPECT_EQ(r[0].dtype, "float64");
      EXPECT_EQ(r[0].index_expression, c.index);
    }
  }
}

}  // namespace
}  // namespace mutagrad
