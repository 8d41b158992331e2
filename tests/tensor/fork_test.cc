// Large ops in a fork() child (Note [parallel_for after fork] in tensor/cpu/parallel.cc): after
// the parent ran parallel work (its OpenMP team, oneDNN's regions), a child runs the same ops on
// one thread and gets the parent's bits instead of waiting forever for threads fork() did not
// copy. (Not a TSan target: TSan refuses a multi-threaded fork.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "tensor/cpu/parallel.h"
#include "tensor/native/convolution.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/tensor.h"

namespace mutagrad {
namespace {

// Above every parallel threshold: an element-wise op, a reduction, a convolution of 12M
// multiply-adds (oneDNN's threaded path).
std::vector<Tensor> large_ops() {
  Generator gen(7);
  const Tensor x = randn({1 << 20}, gen);
  const Tensor image = randn({32, 3, 32, 32}, gen);
  const Tensor filters = randn({16, 3, 3, 3}, gen);
  const ConvParams p{{1, 1}, {0, 0}, {0, 0}, {1, 1}, 1};
  return {native::unary(UnaryOp::kExp, x), native::reduce(ReduceOp::kSum, x, {}, false),
          native::conv_forward(image, filters, p)};
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor &ca = a[i], &cb = b[i];  // new results: contiguous
    const auto bytes = static_cast<size_t>(ca.numel() * ca.element_size());
    if (!ca.sizes().equals(cb.sizes()) || std::memcmp(ca.raw_data(), cb.raw_data(), bytes) != 0) {
      return false;
    }
  }
  return true;
}

TEST(Fork, AChildRunsLargeOpsWithTheParentsBits) {
  const std::vector<Tensor> parent = large_ops();  // the parent's threads exist from here
  EXPECT_FALSE(cpu::in_forked_child());
  const pid_t pid = fork();
  ASSERT_NE(pid, -1) << std::strerror(errno);
  if (pid == 0) {
    if (!same_bits(large_ops(), parent)) _exit(1);
    _exit(cpu::in_forked_child() ? 0 : 2);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL() << "the forked child did not finish its large ops within 30 s (a hang on the "
                "parent's thread team)";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the child died, status " << status;
  ASSERT_NE(WEXITSTATUS(status), 1) << "the child's results differ from the parent's";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child does not know it is one (in_forked_child)";
}

}  // namespace
}  // namespace mutagrad
