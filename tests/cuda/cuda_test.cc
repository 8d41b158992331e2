// The CUDA device as users see it in the host-run build (or on a GPU in the device build):
// what it says it is, transfers, autograd across devices, the caching allocator and its
// typed OOM, ops without a kernel, and host code refusing to read device memory.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/allocator.h"
#include "mutagrad.h"

namespace mutagrad {
namespace {

const Device kGpu(DeviceType::CUDA, 0);

template <typename E, typename Fn>
void expect_error(Fn&& fn, const std::string& substring) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception containing \"" << substring << "\"";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(substring), std::string::npos) << e.what();
  }
}

// The elements of any tensor, row-major, as doubles (through an explicit copy to the CPU).
std::vector<double> values(const Tensor& t) {
  Tensor c = t.cpu().contiguous().to(kFloat64);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << cuda::unavailable_reason();
  }
};

TEST_F(CudaDevice, SaysWhatItIs) {
  RecordProperty("build", cuda::build_name());  // in test.xml: which device, which Thrust
  EXPECT_EQ(cuda::device_count(), 1);
  const std::string name = cuda::device_name();
  if (cuda::build_name().rfind("host-run", 0) == 0) {
    EXPECT_TRUE(name == "host-run (Thrust OMP)" || name == "host-run (Thrust CPP)") << name;
    EXPECT_EQ(cuda::build_name().rfind(name + ", Thrust ", 0), 0u) << cuda::build_name();
  }
  expect_error<DeviceError>([] { cuda::device_name(3); }, "device 3 does not exist");
  Tensor x = ones({2}).cuda();
  EXPECT_EQ(x.device(), kGpu);
  EXPECT_NE(x.to_string().find("device='cuda:0'"), std::string::npos) << x.to_string();
}

TEST(Devices, ParseAndPrintAsTorch) {
  EXPECT_EQ(parse_device("cpu"), kCPU);
  EXPECT_EQ(parse_device("cuda"), kCUDA);
  EXPECT_EQ(parse_device("cuda:0"), kCUDA);
  EXPECT_EQ(parse_device("cuda:3"), Device(DeviceType::CUDA, 3));
  EXPECT_EQ(str(parse_device("cuda:3")), "cuda:3");
  EXPECT_EQ(str(kCUDA), "cuda:0");
  EXPECT_EQ(str(kCPU), "cpu");
  expect_error<ValueError>([] { parse_device("gpu"); },
                           "Expected one of cpu, cuda device type at start of device string: gpu");
  for (const char* bad : {"cuda:", "cuda:x", "cuda:-1", "cuda:01", "cuda:999", "cpu:1"}) {
    expect_error<ValueError>([&] { parse_device(bad); }, "Invalid device string");
  }
}

TEST_F(CudaDevice, DefaultGeneratorIsSeededByManualSeed) {
  cuda::manual_seed(5);
  Tensor a = rand({4}, cuda::default_generator(), TensorOptions(kFloat64).device(kCUDA));
  Tensor b = rand({4}, cuda::default_generator(), TensorOptions(kFloat64).device(kCUDA));
  cuda::manual_seed(5);
  Tensor c = rand({8}, cuda::default_generator(), TensorOptions(kFloat64).device(kCUDA));
  const std::vector<double> both = values(c);
  EXPECT_EQ(values(a), std::vector<double>(both.begin(), both.begin() + 4));
  EXPECT_EQ(values(b), std::vector<double>(both.begin() + 4, both.end()));
  EXPECT_NE(values(a), values(b));
}

TEST_F(CudaDevice, HostCodeCannotReadDeviceMemory) {
  // Note [Host code never reads device memory]: loud in every build, though in the host-run
  // build the memory is host memory.
  Tensor x = arange(6, kFloat32).view({2, 3}).cuda();
  expect_error<DeviceError>([&] { x.data_ptr<float>(); }, "host code cannot read device memory");
  expect_error<DeviceError>([&] { x.raw_data(); }, "raw_data(): the tensor is on cuda:0");
  // The host paths copy explicitly.
  EXPECT_EQ(x.select(0, 1).select(0, 2).item<float>(), 5.0f);
  EXPECT_EQ(x.to_string(), "tensor([[0., 1., 2.],\n        [3., 4., 5.]], device='cuda:0')");
}

TEST_F(CudaDevice, ToCudaAndCpuRoundTrip) {
  Tensor x = arange(12, kFloat64).view({3, 4}).t();  // non-contiguous
  Tensor g = x.cuda();
  EXPECT_EQ(g.device(), kGpu);
  EXPECT_TRUE(g.is_contiguous());
  EXPECT_TRUE(g.to(kGpu).is_same(g));  // already there: no copy
  Tensor back = g.cpu();
  EXPECT_TRUE(back.device().is_cpu());
  EXPECT_EQ(values(back), values(x));
  Tensor f = x.to(kGpu, kFloat32, /*non_blocking=*/true);
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(values(f), values(x));
}

TEST_F(CudaDevice, MixedDevicesAreADeviceError) {
  // Every op that takes two tensors, either order: PyTorch's text, nothing written.
  Tensor a = ones({2}).cuda(), b = ones({2});
  const std::string both =
      "Expected all tensors to be on the same device, but found at least "
      "two devices, ";
  expect_error<DeviceError>([&] { (a + b); }, "add(): " + both + "cuda:0 and cpu!");
  expect_error<DeviceError>([&] { (b * a); }, "mul(): " + both + "cpu and cuda:0!");
  expect_error<DeviceError>([&] { a.add_(b); }, both + "cuda:0 and cpu!");
  expect_error<DeviceError>([&] { b.sub_(a); }, both + "cpu and cuda:0!");
  expect_error<DeviceError>([&] { where(b > 0, a, b); }, both);
  expect_error<DeviceError>(
      [&] {
        a.view({1, 2}).matmul(b.view({2, 1}));
      },
      "matmul(): " + both + "cuda:0 and cpu!");
  expect_error<DeviceError>([&] { a.masked_fill_(b > 0, 5.0); },
                            "masked_fill_(): " + both + "cuda:0 and cpu!");
  EXPECT_EQ(values(a), std::vector<double>({1, 1}));
  EXPECT_EQ(values(b), std::vector<double>({1, 1}));
  EXPECT_EQ(a.version(), 0u);
  EXPECT_EQ(b.version(), 0u);
  // copy_ is the one op that crosses devices.
  a.copy_(b * 3);
  EXPECT_EQ(values(a), std::vector<double>({3, 3}));
}

TEST_F(CudaDevice, OnlyTheProcessDeviceIsDriven) {
  // One device here (tests/cuda/device_selection_test simulates several).
  expect_error<DeviceError>(
      [&] { zeros({2}, TensorOptions().device(Device(DeviceType::CUDA, 1))); },
      "cannot create a tensor on cuda:1: CUDA device 1 does not exist (this machine has 1); "
      "mutagrad drives one CUDA device per process, here cuda:0");
  expect_error<DeviceError>([&] { ones({2}).to(Device(DeviceType::CUDA, 1)); }, "cuda:1");
}

TEST_F(CudaDevice, GradientsFlowBackToTheSourceDevice) {
  Tensor x = tensor({1.0, -2.0, 3.0}, kFloat64).requires_grad_();
  Tensor g = x.cuda();
  EXPECT_EQ(g.grad_fn()->name(), std::string("ToCopyBackward0"));
  Tensor y = (g * g).cpu();
  y.backward(ones({3}, kFloat64));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().device().is_cpu());
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2.0, -4.0, 6.0}));
}

TEST_F(CudaDevice, CachingAllocatorReusesBlocksAndCounts) {
  cuda::empty_cache();
  const int64_t before = cuda::memory_allocated();
  {
    Tensor a = empty({1000}, TensorOptions(kFloat32).device(kGpu));  // 4000 -> 4096 bytes
    EXPECT_EQ(cuda::memory_allocated() - before, 4096);
    EXPECT_GE(cuda::max_memory_allocated(), cuda::memory_allocated());
  }
  EXPECT_EQ(cuda::memory_allocated(), before);
  const int64_t reserved = cuda::memory_reserved();
  {
    Tensor b = empty({1010}, TensorOptions(kFloat32).device(kGpu));  // the same 4096-byte bin
    EXPECT_EQ(cuda::memory_reserved(), reserved);
  }
  cuda::empty_cache();
  EXPECT_LT(cuda::memory_reserved(), reserved);
  EXPECT_EQ(cuda::CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(cuda::CachingAllocator::round_size((1u << 20) + 1), (1u << 20) + 512);
}

TEST_F(CudaDevice, RefusedWritesChangeNothingAndTheDeviceStaysUsable) {
  // PyTorch asserts inside the kernel (some elements may be written, the context is lost);
  // here the indices are validated on the device before anything is written
  // (Note [Index validation on the device]).
  Tensor x = arange(5, kFloat32).cuda();
  Tensor idx = tensor({1, 7, -9}).cuda();
  expect_error<IndexError>([&] { x.index_put_({idx}, full({3}, 9.0f).cuda()); },
                           "index 7 is out of bounds for dimension 0 with size 5");
  expect_error<IndexError>(
      [&] {
        x.index_put_({tensor({-9, 7}).cuda()}, full({2}, 9.0f).cuda(), true);
      },
      "index -9 is out of bounds for dimension 0 with size 5");
  expect_error<IndexError>([&] { x[{idx}] = 9.0; }, "index 7 is out of bounds");
  expect_error<IndexError>([&] { x.index({idx}); }, "index 7 is out of bounds");
  EXPECT_EQ(values(x), std::vector<double>({0, 1, 2, 3, 4}));
  EXPECT_EQ(x.version(), 0u);
  // The same process goes on using the device.
  x.index_put_({tensor({4, 4, 0}).cuda()}, full({3}, 1.0f).cuda(), true);
  EXPECT_EQ(values(x), std::vector<double>({1, 1, 2, 3, 6}));
  EXPECT_EQ(x.version(), 1u);
  // Index tensors on the CPU index device tensors (moved, as torch); the other way round is
  // torch's error.
  EXPECT_EQ(values(x.index({tensor({4, 0})})), std::vector<double>({6, 1}));
  expect_error<DeviceError>([&] { arange(5, kFloat32).index({tensor({1}).cuda()}); },
                            "indices should be either on cpu or on the same device as the "
                            "indexed tensor (cpu)");
}

TEST_F(CudaDevice, OutOfMemoryIsATypedErrorAndChangesNothing) {
  Tensor x = ones({4}).cuda();
  const int64_t allocated = cuda::memory_allocated();
  expect_error<cuda::OutOfMemoryError>(
      [] { empty({int64_t{1} << 50}, TensorOptions(kFloat32).device(kGpu)); },
      "CUDA out of memory: tried to allocate");
  EXPECT_EQ(cuda::memory_allocated(), allocated);
  EXPECT_EQ(values(x + x), (std::vector<double>{2, 2, 2, 2}));  // the device is still usable
}

}  // namespace
}  // namespace mutagrad
