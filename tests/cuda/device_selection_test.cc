// Note [One device per process] (cuda/runtime.h): choose_device() as a pure function, and the
// host-run runtime simulating several devices (MUTAGRAD_HOST_RUN_DEVICE_COUNT), one process per
// configuration (tests/cuda/BUILD.bazel runs this binary with each environment and filter).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "cuda/runtime.h"
#include "mutagrad.h"
#include "tensor/native/pointwise.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using tensor_testing::error_of;
using tensor_testing::values;

int choose(int count, const std::map<std::string, std::string>& env, std::string* source) {
  return cuda::choose_device(
      count,
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      source);
}

TEST(ChooseDevice, LocalRankFirstThenTheLaunchersThenTheRank) {
  std::string source;
  EXPECT_EQ(choose(4, {}, &source), 0);
  EXPECT_EQ(source, "default");
  EXPECT_EQ(choose(4, {{"LOCAL_RANK", "3"}}, &source), 3);
  EXPECT_EQ(source, "LOCAL_RANK=3");
  EXPECT_EQ(choose(4, {{"LOCAL_RANK", "5"}}, &source), 1);  // more local ranks than GPUs
  // LOCAL_RANK wins over Open MPI's, which wins over the global rank.
  EXPECT_EQ(
      choose(8, {{"LOCAL_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "6"}, {"RANK", "7"}}, &source),
      2);
  EXPECT_EQ(
      choose(8, {{"OMPI_COMM_WORLD_LOCAL_RANK", "6"}, {"OMPI_COMM_WORLD_RANK", "14"}}, &source), 6);
  EXPECT_EQ(source, "OMPI_COMM_WORLD_LOCAL_RANK=6");
  EXPECT_EQ(choose(2, {{"SLURM_LOCALID", "1"}}, nullptr), 1);
  EXPECT_EQ(choose(3, {{"OMPI_COMM_WORLD_RANK", "7"}}, &source), 1);  // rank % count
  EXPECT_EQ(source, "OMPI_COMM_WORLD_RANK=7");
  EXPECT_EQ(choose(3, {{"RANK", "4"}, {"PMI_RANK", "2"}}, nullptr), 1);
  EXPECT_EQ(choose(1, {{"LOCAL_RANK", "9"}}, nullptr), 0);
}

TEST(ChooseDevice, ABadRankIsADeviceErrorNamingIt) {
  for (const char* bad : {"", "-1", "one", "1.5", "12345678901"}) {
    const std::string message = error_of<DeviceError>([&] {
      choose(2, {{"LOCAL_RANK", bad}}, nullptr);
    });
    EXPECT_NE(message.find(str("LOCAL_RANK='", bad, "' is not a non-negative integer")),
              std::string::npos)
        << message;
  }
}

// MUTAGRAD_HOST_RUN_DEVICE_COUNT=3 LOCAL_RANK=5: this process drives cuda:2.
TEST(LocalRank, EverythingUsesTheChosenDevice) {
  ASSERT_EQ(cuda::device_count(), 3);
  EXPECT_EQ(cuda::current_device(), 2);
  const Device mine(DeviceType::CUDA, 2);
  EXPECT_EQ(Device(DeviceType::CUDA), mine);
  EXPECT_EQ(parse_device("cuda"), mine);
  Tensor a = ones({3}).cuda();
  Tensor b = zeros({3}, TensorOptions().device(parse_device("cuda")));
  Tensor c = arange(3, kFloat32).to(mine);
  for (const Tensor& t :
       std::vector<Tensor>{a, b, c, a + c, (a * 2).sum(), native::nonzero(c), sort(c).first}) {
    EXPECT_EQ(t.device(), mine);
    EXPECT_EQ(str(t.device()), "cuda:2");
  }
  EXPECT_EQ(values(a + c), (std::vector<double>{1, 2, 3}));
  EXPECT_GT(cuda::memory_allocated(), 0);
  // The device is in use: set_device may name it again, not another one.
  cuda::set_device(2);
  EXPECT_NE(error_of<DeviceError>([] { cuda::set_device(0); })
                .find("set_device(0): this process already works on cuda:2 (chosen by "
                      "LOCAL_RANK=5"),
            std::string::npos);
  EXPECT_NE(error_of<DeviceError>([] {
              cuda::set_device(3);
            }).find("CUDA device 3 does not exist; there are 3 CUDA devices"),
            std::string::npos);
  EXPECT_EQ(cuda::current_device(), 2);
}

TEST(LocalRank, AnotherDeviceIsATypedErrorAndChangesNothing) {
  Tensor x = ones({2}).cuda();
  const std::string other = error_of<DeviceError>(
      [] { zeros({2}, TensorOptions().device(Device(DeviceType::CUDA, 0))); });
  EXPECT_NE(other.find("cannot create a tensor on cuda:0: mutagrad drives one CUDA device per "
                       "process, and this one's is cuda:2 (chosen by LOCAL_RANK=5"),
            std::string::npos)
      << other;
  EXPECT_NE(error_of<DeviceError>([&] { x.cpu().to(Device(DeviceType::CUDA, 1)); }).find("cuda:1"),
            std::string::npos);
  EXPECT_NE(error_of<DeviceError>([] { ones({2}).cuda(7); }).find("CUDA device 7 does not exist"),
            std::string::npos);
  EXPECT_EQ(values(x), (std::vector<double>{1, 1}));
  EXPECT_EQ(x.version(), 0u);
}

// MUTAGRAD_HOST_RUN_DEVICE_COUNT=2, no rank in the environment: cuda:0 until set_device(1).
TEST(SetDevice, ChoosesTheDeviceBeforeTheFirstTensor) {
  ASSERT_EQ(cuda::device_count(), 2);
  EXPECT_EQ(cuda::current_device(), 0);
  cuda::set_device(0);
  cuda::set_device(1);  // nothing lives on cuda:0 yet
  EXPECT_EQ(cuda::current_device(), 1);
  Tensor x = ones({2}).cuda();
  EXPECT_EQ(str(x.device()), "cuda:1");
  EXPECT_EQ(str((x + x).device()), "cuda:1");
  Tensor y = zeros({2}, TensorOptions().device(Device(DeviceType::CUDA, 1)));
  EXPECT_EQ(values(x + y), (std::vector<double>{1, 1}));
  EXPECT_NE(error_of<DeviceError>([] {
              cuda::set_device(0);
            }).find("this process already works on cuda:1 (chosen by set_device(1)"),
            std::string::npos);
}

}  // namespace
}  // namespace mutagrad
