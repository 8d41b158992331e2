// wait_or_abort (Note [NCCL failures raise] in distributed/watchdog.h) over a fake transport:
// the NCCL group's poll loop, which only a GPU can run for real, checked on the host.
#include "distributed/watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "cuda/cuda.h"
#include "distributed/nccl_process_group.h"
#include "distributed/process_group.h"

namespace mutagrad::distributed {
namespace {

// Finishes after `finish_after` polls (never when < 0); fails with `error` after
// `fail_after` polls (never when < 0).
struct FakeOperation : PolledOperation {
  int finish_after = -1, fail_after = -1;
  std::string error = "unhandled system error";
  int finished_polls = 0, error_polls = 0, aborts = 0;
  bool finished() override {
    EXPECT_EQ(aborts, 0) << "polled after the abort";
    ++finished_polls;
    return finish_after >= 0 && finished_polls > finish_after;
  }
  std::string async_error() override {
    ++error_polls;
    return fail_after >= 0 && error_polls > fail_after ? error : "";
  }
  void abort() override { ++aborts; }
};

std::string raised(FakeOperation& op, double timeout) {
  try {
    wait_or_abort(op, timeout, "all_reduce_", 1);
  } catch (const DistributedError& e) {
    return e.what();
  }
  return "";
}

TEST(WaitOrAbort, ReturnsWhenTheOperationFinishesAndAbortsNothing) {
  FakeOperation op;
  op.finish_after = 5000;  // past the spinning and yielding phases
  wait_or_abort(op, 60.0, "all_reduce_", 0);
  EXPECT_EQ(op.finished_polls, 5001);
  EXPECT_EQ(op.aborts, 0);
}

TEST(WaitOrAbort, AnAsyncErrorAbortsTheCommunicatorAndRaises) {
  FakeOperation op;  // never finishes: a peer died mid-collective
  op.fail_after = 3;
  op.error = "remote process exited or there was a network error";
  const std::string message = raised(op, 60.0);
  EXPECT_EQ(op.aborts, 1);
  EXPECT_NE(message.find("all_reduce_ (rank 1): the transport failed: remote process exited"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("unusable"), std::string::npos) << message;
}

TEST(WaitOrAbort, AnErrorWinsOverAFinishedFlag) {
  // A failed collective's event may still complete: its results are garbage, not a success.
  FakeOperation op;
  op.finish_after = 0;
  op.fail_after = 0;
  EXPECT_NE(raised(op, 60.0).find("the transport failed: unhandled system error"),
            std::string::npos);
  EXPECT_EQ(op.aborts, 1);
}

TEST(WaitOrAbort, ATimeoutAbortsTheCommunicatorAndRaises) {
  FakeOperation op;  // never finishes, never reports: a peer skipped the collective
  const auto start = std::chrono::steady_clock::now();
  const std::string message = raised(op, 0.2);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(op.aborts, 1);
  EXPECT_NE(message.find("all_reduce_ (rank 1): waited 0.2 s"), std::string::npos) << message;
  EXPECT_NE(message.find("MUTAGRAD_DISTRIBUTED_TIMEOUT"), std::string::npos) << message;
  EXPECT_GE(took, 0.2);
  EXPECT_LT(took, 10.0);
  // It slept between polls rather than spinning the whole time.
  EXPECT_LT(op.finished_polls, 1000000);
}

// Note [The NCCL group registers itself]: linked, and so registered, in the device build only
// (device_build_test checks the device build's side, where this binary is built but not run).
TEST(NcclGroup, RegisteredExactlyInTheDeviceBuild) {
  const bool device_build = cuda::build_name().rfind("device", 0) == 0;
  EXPECT_EQ(nccl_group_factory() != nullptr, device_build) << cuda::build_name();
}

}  // namespace
}  // namespace mutagrad::distributed
