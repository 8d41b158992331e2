// The host-run device with a small capacity (MUTAGRAD_HOST_RUN_MEMORY_BYTES, tests/cuda/
// BUILD.bazel): out-of-memory in ops whose Thrust temporaries go through the caching allocator
// (Note [Thrust temporaries] in cuda/allocator.h) is OutOfMemoryError and changes nothing; and
// a kernel handed host memory is refused (Note [Host-run device arena] in runtime_host.cc).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/allocator.h"
#include "cuda/cuda_backend.h"
#include "mutagrad.h"
#include "tensor/native/pointwise.h"

namespace mutagrad {
namespace {

template <typename E, typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return "";
}

std::vector<double> values(const Tensor& t) {
  Tensor c = t.cpu().contiguous().to(kFloat64);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

int64_t capacity() {
  return std::strtoll(std::getenv("MUTAGRAD_HOST_RUN_MEMORY_BYTES"), nullptr, 10);
}

TEST(MemoryLimits, TheCapacityIsSmall) { ASSERT_EQ(capacity(), int64_t{8} << 20); }

TEST(MemoryLimits, NonzeroOutOfMemoryIsTypedAndLeavesNothingBehind) {
  // 1.5M nonzero float32 (6 MB) of 8 MB: the positions and the result (12 MB each) do not fit.
  Tensor x = ones({1500000}).cuda();
  const int64_t allocated = cuda::memory_allocated();
  const std::string message = error_of<cuda::OutOfMemoryError>([&] { native::nonzero(x); });
  EXPECT_NE(message.find("CUDA out of memory: tried to allocate"), std::string::npos) << message;
  EXPECT_EQ(cuda::memory_allocated(), allocated);
  EXPECT_EQ(x.version(), 0u);
  EXPECT_EQ(values(x.sum()), std::vector<double>{1500000});
  // A smaller one still works: the device is usable and the cache was emptied.
  Tensor small = ones({1000}).cuda();
  EXPECT_EQ(native::nonzero(small).size(0), 1000);
}

TEST(MemoryLimits, SortOutOfMemoryIsTypedAndLeavesNothingBehind) {
  Tensor x = arange(600000, kFloat32).flip({0}).cuda();  // 2.4 MB
  const int64_t allocated = cuda::memory_allocated();
  EXPECT_NE(error_of<cuda::OutOfMemoryError>([&] { sort(x); }).find("CUDA out of memory"),
            std::string::npos);
  EXPECT_EQ(cuda::memory_allocated(), allocated);
  EXPECT_EQ(x.version(), 0u);
  EXPECT_EQ(values(x.select(0, 0)), std::vector<double>{599999});
}

TEST(MemoryLimits, ThrustTemporariesAreCountedByTheCachingAllocator) {
  // A sort's peak includes Thrust's temporary storage (the host-run merge sort's buffers),
  // which comes from the caching allocator: more than the two outputs and the kernel's own
  // (keys, positions) buffers, which are all it counted when Thrust allocated on its own.
  constexpr int64_t n = 100000;
  Tensor x = arange(n, kFloat32).flip({0}).cuda();
  cuda::empty_cache();
  cuda::reset_peak_memory_stats();
  const int64_t before = cuda::memory_allocated();
  auto round = [](int64_t bytes) {
    return static_cast<int64_t>(cuda::CachingAllocator::round_size(static_cast<size_t>(bytes)));
  };
  const int64_t outputs = round(4 * n) + round(8 * n);
  const int64_t kernel_buffers = round(2 * 4 * n) + round(2 * 8 * n);
  auto [v, i] = sort(x);
  EXPECT_EQ(values(v.select(0, 0)), std::vector<double>{0});
  EXPECT_GE(cuda::max_memory_allocated() - before, outputs + kernel_buffers + 4 * n)
      << "peak " << cuda::max_memory_allocated() - before;
  EXPECT_GE(cuda::memory_reserved(), cuda::memory_allocated());
  // Thrust's temporaries were given back: only v and i remain.
  EXPECT_EQ(cuda::memory_allocated() - before, outputs);
}

TEST(MemoryLimits, AKernelHandedHostMemoryIsRefused) {
  // A tensor that claims to live on the device but points into host memory: host code handing
  // a CPU pointer to a kernel. A GPU would fault (or read garbage); the host-run build refuses.
  std::vector<float> host(4, 1.0f);
  Storage storage =
      Storage::from_blob(host.data(), sizeof(float) * 4, Device(DeviceType::CUDA), nullptr);
  Tensor fake(std::make_shared<TensorImpl>(storage, DimVector{4}, DimVector{1}, 0, kFloat32,
                                           VersionCounter()));
  Backend& gpu = backend_for(Device(DeviceType::CUDA));
  const std::string message = error_of<DeviceError>([&] { gpu.fill(fake, 2.0); });
  EXPECT_NE(message.find("which is not memory of the CUDA device"), std::string::npos) << message;
  EXPECT_EQ(host, std::vector<float>(4, 1.0f));
  // A CPU tensor handed to a CUDA kernel directly, and a real device tensor (accepted).
  Tensor cpu = zeros({4});
  EXPECT_NE(error_of<DeviceError>([&] { gpu.fill(cpu, 2.0); }).find("a CUDA kernel's operand"),
            std::string::npos);
  Tensor dev = zeros({4}).cuda();
  gpu.fill(dev, 2.0);
  EXPECT_EQ(values(dev), std::vector<double>(4, 2.0));
  EXPECT_NE(error_of<DeviceError>([&] { gpu.copy(dev, fake); }).find("not memory of the CUDA"),
            std::string::npos);
}

}  // namespace
}  // namespace mutagrad
