// The device build (--config=cuda) on a machine without a usable GPU: is_available() is false
// and creating a CUDA tensor is a DeviceError naming the CUDA error and `nvidia-smi`. CI runs
// this binary from the device build on the (GPU-less) build machines. On a GPU machine it
// checks the opposite: a tensor round-trips through the device. In the host-run build there
// is nothing to check (the host-run device is always there).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "distributed/nccl_process_group.h"
#include "mutagrad.h"

namespace mutagrad {
namespace {

TEST(DeviceBuild, WithoutAGpuCudaIsUnavailableAndSaysWhy) {
  // A manual target, run by name under --config=cuda (tests/cuda/BUILD.bazel): anywhere else
  // it is run by mistake, and says so by failing.
  ASSERT_EQ(cuda::build_name().rfind("device", 0), 0u)
      << "not the device build (" << cuda::build_name() << "): build with --config=cuda";
  const char* expect_no_gpu = std::getenv("MUTAGRAD_EXPECT_NO_GPU");
  if (cuda::is_available() && expect_no_gpu == nullptr) {
    // A GPU machine: the same binary must compute there.
    Tensor x = arange(6, kFloat32).cuda();
    EXPECT_EQ((x * x).cpu().select(0, 5).item<float>(), 25.0f);
    return;
  }
  EXPECT_FALSE(cuda::is_available());
  EXPECT_EQ(cuda::device_count(), 0);
  const std::string reason = cuda::unavailable_reason();
  EXPECT_NE(reason.find("cudaGetDeviceCount"), std::string::npos) << reason;
  try {
    ones({2}).cuda();
    ADD_FAILURE() << "creating a CUDA tensor without a GPU did not throw";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CUDA is not available: cudaGetDeviceCount failed: "), std::string::npos)
        << what;
    EXPECT_NE(what.find("nvidia-smi"), std::string::npos) << what;
    std::cout << "DeviceError: " << what << "\n";
  }
  // The CPU keeps working.
  EXPECT_EQ((ones({2}) + ones({2})).sum().item<float>(), 4.0f);
}

// The "nccl" process group is linked into the device build and registered itself (Note [The
// NCCL group registers itself] in distributed/nccl_process_group.h).
TEST(DeviceBuild, TheNcclGroupIsLinkedAndRegistered) {
  EXPECT_NE(distributed::nccl_group_factory(), nullptr);
}

}  // namespace
}  // namespace mutagrad
