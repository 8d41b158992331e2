// A rank that never enters a collective: the others raise DistributedError after the group's
// timeout instead of hanging (Note [Every rank raises]). Under mpirun with 2 and 3 ranks.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "distributed/distributed.h"
#include "distributed/mpi_process_group.h"

using namespace mutagrad;

namespace {

TEST(Timeout, ARankThatNeverComesIsAnErrorNotAHang) {
  distributed::ProcessGroup& world = distributed::default_group();
  // A group of its own: after a timeout a group is unusable (MPI cannot cancel a collective).
  distributed::MpiProcessGroup group(MPI_COMM_WORLD);
  group.set_timeout_seconds(1);
  Tensor t = ones({4});
  const auto start = std::chrono::steady_clock::now();
  if (group.rank() != 0) {
    try {
      group.all_reduce_(t);
      FAIL() << "expected DistributedError";
    } catch (const distributed::DistributedError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("waited 1 s for the other ranks to enter the same collective"),
                std::string::npos)
          << m;
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(waited, 1.0);
    EXPECT_LT(waited, 10.0);
    EXPECT_EQ(t.version(), 0u);  // nothing was written
    // The group refuses further work rather than mixing it with the stranded exchange.
    EXPECT_THROW(group.barrier(), distributed::DistributedError);
  }
  // Rank 0 "skipped" the collective; everyone meets again on the world group.
  world.barrier();
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  distributed::ProcessGroup& group = distributed::init_process_group("mpi");
  group.set_timeout_seconds(30);
  const int failed = RUN_ALL_TESTS();
  Tensor any = full({1}, failed != 0 ? 1 : 0, kInt32);
  group.all_reduce_(any, distributed::ReduceOp::kMax);
  return any.item<int64_t>() != 0 ? 1 : 0;
}
