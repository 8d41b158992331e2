// Collectives under mpirun (2 and 3 ranks, see BUILD.bazel): every op and dtype against a
// hand-computed result, non-contiguous tensors and views, one version bump with the call site,
// errors raised on every rank, the stale-graph error naming the all_reduce_ line, and pending
// async writes refusing access.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "distributed/distributed.h"
#include "distributed/mpi_process_group.h"

using namespace mutagrad;
using RO = distributed::ReduceOp;

namespace {

distributed::ProcessGroup& pg() { return distributed::default_group(); }
int rank() { return pg().rank(); }
int world() { return pg().size(); }

const std::vector<ScalarType> kAllDtypes = {kBool,
                                            ScalarType::UInt8,
                                            ScalarType::Int8,
                                            ScalarType::Int16,
                                            ScalarType::Int32,
                                            ScalarType::Int64,
                                            ScalarType::Float16,
                                            ScalarType::BFloat16,
                                            ScalarType::Float32,
                                            ScalarType::Float64};

// Rank r's element i: small integers (exact in every dtype, products of 3 ranks fit int8).
double value(int r, int64_t i, ScalarType dtype) {
  if (dtype == kBool) return ((r + i) % 3) == 0 ? 1 : 0;
  return static_cast<double>((r + 2 * i) % 4) + 1;  // in [1, 4]
}

Tensor rank_tensor(int r, int64_t n, ScalarType dtype) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(value(r, i, dtype));
  return from_vector(v, {n}).to(dtype);
}

double expected(RO op, int64_t i, ScalarType dtype) {
  double acc = value(0, i, dtype);
  for (int r = 1; r < world(); ++r) {
    const double v = value(r, i, dtype);
    switch (op) {
      case RO::kSum:
      case RO::kAvg:
        acc += v;
        break;
      case RO::kProduct:
        acc *= v;
        break;
      case RO::kMin:
        acc = std::min(acc, v);
        break;
      case RO::kMax:
        acc = std::max(acc, v);
        break;
    }
  }
  if (op == RO::kAvg) acc /= world();
  if (dtype == kBool) acc = acc != 0 ? 1 : 0;
  return acc;
}

// `got` (any dtype) equals the float64 values `want` rounded to got's dtype.
void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  const Tensor w = from_vector(want, {static_cast<int64_t>(want.size())}).to(got.dtype());
  Tensor g64 = got.reshape({-1}).to(kFloat64), w64 = w.to(kFloat64);
  for (int64_t i = 0; i < got.numel(); ++i) {
    EXPECT_EQ(g64.index({i}).item<double>(), w64.index({i}).item<double>())
        << what << " element " << i << " on rank " << rank();
  }
}

TEST(AllReduce, EveryOpAndDtypeMatchesTheHandComputedResult) {
  const int64_t n = 5;
  for (ScalarType dtype : kAllDtypes) {
    for (RO op : {RO::kSum, RO::kAvg, RO::kProduct, RO::kMin, RO::kMax}) {
      if (op == RO::kAvg && !is_floating_point(dtype)) continue;
      Tensor t = rank_tensor(rank(), n, dtype);
      pg().all_reduce_(t, op);
      std::vector<double> want;
      for (int64_t i = 0; i < n; ++i) want.push_back(expected(op, i, dtype));
      expect_values(t, want, str(dtype_name(dtype), " ", distributed::reduce_op_name(op)));
      EXPECT_EQ(t.version(), 1u);
    }
  }
}

TEST(AllReduce, AvgOfAnIntegerTensorRaisesOnEveryRank) {
  Tensor t = rank_tensor(rank(), 3, kInt64);
  try {
    pg().all_reduce_(t, RO::kAvg);
    FAIL() << "expected DTypeError";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("AVG needs a floating dtype, got int64"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(t.version(), 0u);
}

TEST(AllReduce, BumpsOnceWithTheCallSite) {
  Tensor t = ones({4}, kFloat32);
  const int line = __LINE__ + 1;
  pg().all_reduce_(t);
  EXPECT_EQ(t.version(), 1u);
  const auto site = t.version_counter().site_of_bump(0);
  ASSERT_TRUE(site.has_value());
  EXPECT_STREQ(site->op, "all_reduce_");
  EXPECT_EQ(site->line, line);
  EXPECT_NE(std::string(site->file).find("collectives_test.cc"), std::string::npos);
  expect_values(t, std::vector<double>(4, world()), "sum of ones");
}

TEST(AllReduce, NonContiguousViewWritesTheBaseAndBumpsOnce) {
  // base [3, 4]; the written view is column 1 (stride 4) and a transposed block.
  Tensor base = arange(12, kFloat64).view({3, 4}) + 100.0 * rank();
  Tensor column = base.select(1, 1);
  ASSERT_FALSE(column.is_contiguous());
  pg().all_reduce_(column);
  EXPECT_EQ(base.version(), 1u);
  EXPECT_EQ(column.version(), 1u);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      const double own = static_cast<double>(4 * i + j) + 100.0 * rank();
      const double sum =
          world() * static_cast<double>(4 * i + j) + 100.0 * world() * (world() - 1) / 2;
      EXPECT_EQ((base.index({i, j}).item<double>()), j == 1 ? sum : own) << i << "," << j;
    }
  }
  Tensor m = arange(6, kFloat32).view({2, 3}) * static_cast<float>(rank() + 1);
  Tensor mt = m.t();
  pg().all_reduce_(mt, RO::kMax);
  for (int64_t k = 0; k < 6; ++k) {
    EXPECT_EQ((m.view({6}).index({k}).item<double>()), static_cast<double>(k * world()));
  }
}

TEST(Broadcast, EveryDtypeFromEveryRoot) {
  for (int root = 0; root < world(); ++root) {
    for (ScalarType dtype : kAllDtypes) {
      Tensor t = rank_tensor(rank(), 6, dtype);
      pg().broadcast_(t, root);
      std::vector<double> want;
      for (int64_t i = 0; i < 6; ++i) want.push_back(value(root, i, dtype));
      expect_values(t, want, str("broadcast ", dtype_name(dtype), " from ", root));
      EXPECT_EQ(t.version(), 1u);  // a write on every rank, the root's included
    }
  }
}

TEST(Broadcast, NonContiguousAndRootOutOfRange) {
  Tensor base = full({4, 2}, static_cast<double>(rank()), kFloat64);
  Tensor col = base.select(1, 0);
  pg().broadcast_(col, world() - 1);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ((base.index({i, 0}).item<double>()), world() - 1);
    EXPECT_EQ((base.index({i, 1}).item<double>()), rank());
  }
  EXPECT_THROW(pg().broadcast_(base, world()), ValueError);
}

TEST(AllGather, EveryDtypeIntoNonContiguousOutputs) {
  for (ScalarType dtype : kAllDtypes) {
    Tensor t = rank_tensor(rank(), 4, dtype);
    Tensor out_base = zeros({4, world()}, dtype);
    std::vector<Tensor> out;
    for (int r = 0; r < world(); ++r) out.push_back(out_base.select(1, r));  // columns
    pg().all_gather(out, t);
    for (int r = 0; r < world(); ++r) {
      std::vector<double> want;
      for (int64_t i = 0; i < 4; ++i) want.push_back(value(r, i, dtype));
      expect_values(out[static_cast<size_t>(r)], want, str("all_gather ", dtype_name(dtype)));
    }
    EXPECT_EQ(out_base.version(), static_cast<uint32_t>(world()));  // one bump per output
    EXPECT_EQ(t.version(), 0u);                                     // the input is only read
  }
}

TEST(AllGather, WrongNumberOfOutputsRaisesOnEveryRank) {
  std::vector<Tensor> out(static_cast<size_t>(world()) + 1, zeros({2}));
  EXPECT_THROW(pg().all_gather(out, ones({2})), ValueError);
}

TEST(ReduceScatter, SumAndAvgOfEveryRanksSlice) {
  for (ScalarType dtype :
       {ScalarType::Int32, ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16}) {
    for (RO op : {RO::kSum, RO::kAvg, RO::kMax}) {
      if (op == RO::kAvg && !is_floating_point(dtype)) continue;
      // inputs[q] on rank r: (r + 1) * (q + 1) + i.
      std::vector<Tensor> inputs;
      for (int q = 0; q < world(); ++q) {
        inputs.push_back((arange(3, kFloat64) + (rank() + 1.0) * (q + 1.0)).to(dtype));
      }
      Tensor out = zeros({6}, dtype).slice(0, 0, 6, 2);  // non-contiguous output
      pg().reduce_scatter_(out, inputs, op);
      std::vector<double> want;
      for (int64_t i = 0; i < 3; ++i) {
        double acc = op == RO::kMax ? -1e300 : 0;
        for (int r = 0; r < world(); ++r) {
          const double v = (r + 1.0) * (rank() + 1.0) + static_cast<double>(i);
          acc = op == RO::kMax ? std::max(acc, v) : acc + v;
        }
        want.push_back(op == RO::kAvg ? acc / world() : acc);
      }
      expect_values(out, want, str("reduce_scatter_ ", dtype_name(dtype)));
      EXPECT_EQ(out.version(), 1u);
    }
  }
}

TEST(Errors, MismatchedShapesRaiseOnEveryRank) {
  Tensor t = zeros({2 + rank()});
  try {
    pg().all_reduce_(t);
    FAIL() << "expected DistributedError";
  } catch (const distributed::DistributedError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 0: all_reduce_(float32 [2], op=SUM)"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1: all_reduce_(float32 [3], op=SUM)"), std::string::npos) << m;
    EXPECT_NE(m.find("collectives_test.cc"), std::string::npos) << m;
  }
  EXPECT_EQ(t.version(), 0u);  // nothing was written
  // The group still works.
  Tensor u = ones({2});
  pg().all_reduce_(u);
  expect_values(u, {1.0 * world(), 1.0 * world()}, "after the error");
}

TEST(Errors, DifferentCollectivesRaiseOnEveryRank) {
  Tensor t = zeros({2});
  try {
    if (rank() == 0) {
      pg().broadcast_(t, 0);
    } else {
      pg().all_reduce_(t);
    }
    FAIL() << "expected DistributedError";
  } catch (const distributed::DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0: broadcast_(float32 [2], root=0)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Errors, OneRanksRefusalIsAnErrorOnEveryRank) {
  // Rank 0 passes a leaf that requires grad (refused by check_inplace); the others are fine.
  Tensor t = ones({2});
  if (rank() == 0) t.requires_grad_();
  try {
    pg().all_reduce_(t);
    FAIL() << "expected an error";
  } catch (const autograd::AutogradError& e) {
    EXPECT_EQ(rank(), 0);
    EXPECT_NE(std::string(e.what()).find("a leaf Variable that requires grad"), std::string::npos);
  } catch (const distributed::DistributedError& e) {
    EXPECT_NE(rank(), 0);
    EXPECT_NE(std::string(e.what()).find("rank 0 refused its arguments"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(t.version(), 0u);
}

TEST(Errors, CpuGroupRefusesOtherDevicesAndHistory) {
  Tensor w = ones({2}).requires_grad_();
  Tensor h = w * 2;  // has history
  EXPECT_THROW(pg().all_reduce_(h), autograd::AutogradError);
  {
    NoGradGuard no_grad;  // the documented way: no history is recorded
    Tensor d = h.detach();
    pg().all_reduce_(d);
    EXPECT_EQ((h.index({0}).item<double>()), 2.0 * world());
  }
}

TEST(MutationSafety, AllReduceOfASavedTensorMakesBackwardNameTheLine) {
  Tensor w = ones({3}, kFloat64).requires_grad_();
  Tensor x = full({3}, 2.0, kFloat64);
  Tensor loss = (w * x).sum();  // MulBackward0 saved x
  const int line = __LINE__ + 1;
  pg().all_reduce_(x);
  try {
    loss.backward();
    FAIL() << "expected the stale-tensor error";
  } catch (const autograd::AutogradError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("all_reduce_"), std::string::npos) << m;
    EXPECT_NE(m.find(str("collectives_test.cc:", line)), std::string::npos) << m;
  }
}

TEST(Async, PendingTensorRefusesReadsAndWritesUntilWait) {
  Tensor base = full({2, 3}, rank() + 1.0, kFloat32);
  Tensor t = base.select(0, 1);  // non-contiguous? no: a row; use the base's row view
  const int line = __LINE__ + 1;
  std::shared_ptr<distributed::Work> work = pg().all_reduce_async_(t, RO::kSum);
  EXPECT_EQ(t.version(), 1u);  // bumped when the write started
  try {
    (void)t.sum();
    FAIL() << "expected PendingWriteError";
  } catch (const PendingWriteError& e) {
    EXPECT_NE(std::string(e.what()).find(str("all_reduce_ started at ")), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(str("collectives_test.cc:", line)), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(base.add_(1.0), PendingWriteError);  // an alias of the written storage
  EXPECT_THROW((void)base.data_ptr<float>(), PendingWriteError);
  EXPECT_EQ(t.version(), 1u);  // the refused write did not bump
  work->wait();
  EXPECT_TRUE(work->is_completed());
  const double sum = world() * (world() + 1) / 2.0;
  expect_values(t, {sum, sum, sum}, "async sum");
  EXPECT_EQ((base.index({0, 0}).item<double>()), rank() + 1.0);  // the other row is untouched
}

// Issue 34 item 4: x.data (variable_data(), a fresh version counter) and a tensor made over the
// same bytes (from_blob, as Python's from_numpy) reach the memory without the written tensor's
// version counter; the pending mark is on the memory, so they are refused too, and no write is
// lost when the all_reduce lands.
TEST(Async, EveryAliasOfThePendingMemoryIsRefused) {
  Tensor t = full({4}, rank() + 1.0, kFloat64);
  Tensor data = t.variable_data();
  Tensor blob = from_blob(t.data_ptr<double>(), {4}, {1}, kFloat64, nullptr);
  Tensor views[] = {t.detach(), t.narrow(0, 1, 2), data, data.narrow(0, 2, 2), blob};
  auto work = pg().all_reduce_async_(t, RO::kSum);
  for (Tensor& v : views) {
    const uint32_t version = v.version();
    EXPECT_THROW(v.add_(1000.0), PendingWriteError);
    EXPECT_THROW((void)v.sum(), PendingWriteError);
    EXPECT_EQ(v.version(), version);
  }
  work->wait();
  const double sum = world() * (world() + 1) / 2.0;
  expect_values(t, {sum, sum, sum, sum}, "no write lost");
  data.add_(1.0);  // free again
  expect_values(t, {sum + 1, sum + 1, sum + 1, sum + 1}, "after wait");
}

// all_gather_async reads its input until wait(): writes through any alias are refused, reads
// are not; the gathered values are the input's at the call.
TEST(Async, AllGatherInputRefusesWritesUntilWait) {
  Tensor input = full({3}, 10.0 * rank(), kFloat32);
  Tensor data = input.variable_data();
  std::vector<Tensor> out;
  for (int r = 0; r < world(); ++r) out.push_back(zeros({3}, kFloat32));
  const int line = __LINE__ + 1;
  auto work = pg().all_gather_async(out, input);
  try {
    data.add_(1.0);
    FAIL() << "expected PendingWriteError";
  } catch (const PendingWriteError& e) {
    EXPECT_NE(std::string(e.what()).find(str("still being read by all_gather started at ")),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(str("collectives_test.cc:", line)), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(input.narrow(0, 0, 1).fill_(5.0), PendingWriteError);
  EXPECT_THROW(input.copy_(ones({3}, kFloat32)), PendingWriteError);
  EXPECT_EQ(input.version(), 0u);
  EXPECT_NEAR((input.sum().item<double>()), 30.0 * rank(), 1e-6);  // reads are allowed
  work->wait();
  for (int r = 0; r < world(); ++r) {
    expect_values(out[static_cast<size_t>(r)], {10.0 * r, 10.0 * r, 10.0 * r}, "gathered");
  }
  data.add_(1.0);
  expect_values(input, {10.0 * rank() + 1, 10.0 * rank() + 1, 10.0 * rank() + 1}, "after wait");
}

TEST(Async, EveryCollectiveAndNonContiguousCopyBack) {
  Tensor m = zeros({3, 2}, kFloat64) + rank();
  Tensor col = m.select(1, 0);
  auto w1 = pg().all_reduce_async_(col, RO::kMax);
  Tensor b = full({2}, rank() * 1.0, kInt64);
  auto w2 = pg().broadcast_async_(b, world() - 1);
  std::vector<Tensor> out;
  for (int r = 0; r < world(); ++r) out.push_back(zeros({2}, kInt32));
  auto w3 = pg().all_gather_async(out, full({2}, rank() * 10.0, kInt32));
  w3->wait();
  w2->wait();
  w1->wait();
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ((m.index({i, 0}).item<double>()), world() - 1.0);
    EXPECT_EQ((m.index({i, 1}).item<double>()), rank());
  }
  expect_values(b, {world() - 1.0, world() - 1.0}, "async broadcast");
  for (int r = 0; r < world(); ++r) {
    expect_values(out[static_cast<size_t>(r)], {10.0 * r, 10.0 * r}, "async all_gather");
  }
}

TEST(Barrier, AllRanksPass) {
  pg().barrier();
  pg().barrier();
  SUCCEED();
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  distributed::ProcessGroup& group = distributed::init_process_group("mpi");
  group.set_timeout_seconds(60);
  const int failed = RUN_ALL_TESTS();
  // Every rank's verdict, so that the job fails if any rank failed.
  Tensor any = full({1}, failed != 0 ? 1 : 0, kInt32);
  group.all_reduce_(any, RO::kMax);
  if (group.rank() == 0) {
    std::printf("collectives_test: %d ranks, %s\n", group.size(),
                any.item<int64_t>() ? "a rank failed" : "every rank passed");
  }
  return any.item<int64_t>() != 0 ? 1 : 0;
}
