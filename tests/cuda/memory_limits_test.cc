// The host-run device with a small capacity (MUTAGRAD_HOST_RUN_MEMORY_BYTES, tests/cuda/
// BUILD.bazel): out-of-memory in ops whose Thrust temporaries go through the caching allocator
// (Note [Thrust temporaries] in cuda/allocator.h) is OutOfMemoryError and changes nothing; a
// write that runs out of memory at any of its allocations leaves values and version as they were
// (Note [Allocate before the bump] in tensor/version_counter.h); and a kernel handed host memory
// is refused (Note [Host-run device arena] in runtime_host.cc; every entry and operand:
// kernel_pointers_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/allocator.h"
#include "cuda/cuda_backend.h"
#include "cuda/runtime.h"
#include "mutagrad.h"
#include "tensor/native/pointwise.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using tensor_testing::error_of;
using tensor_testing::values;

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

// Note [Allocate before the bump] (tensor/version_counter.h), for the write family: each write
// runs on a device with no memory left, so the first temporary it needs (a staging copy, a
// clone of an overlapping operand, index_put_'s sort or winner buffers, a result in another
// dtype) is an OutOfMemoryError; the written tensor keeps its values and its version. With the
// memory back, the same write succeeds, bumps once, and gives the CPU's values.
struct WriteCase {
  const char* name;
  // The tensor written and the write, its operands made on `device` (the written tensor too,
  // except where the case says).
  std::function<std::pair<Tensor, std::function<void()>>(Device)> make;
};

// Holds the device's memory until destroyed, all but `left` bytes (a multiple of 512): the
// caching allocator's free blocks are taken by tensors (the smallest first, at most 1 MiB at a
// time from the small pool, so best fit hands out exactly that block or a piece of it), and
// the rest of the device straight from the runtime. So the next allocation must come from the
// runtime's `left` bytes: a segment, or when none fits, exactly the request (Note [Caching
// allocator] in cuda/allocator.h).
struct Ballast {
  std::vector<Tensor> blocks;
  void* raw = nullptr;
  size_t raw_bytes = 0;
  explicit Ballast(int64_t left) {
    cuda::empty_cache();
    for (;;) {
      size_t smallest = 0;
      bool small = false;
      for (const auto& s : cuda::caching_allocator().snapshot()) {
        for (const auto& b : s.blocks) {
          if (!b.allocated && (smallest == 0 || b.size < smallest)) {
            smallest = b.size;
            small = s.small;
          }
        }
      }
      if (smallest == 0) break;
      const size_t bytes = small ? std::min(smallest, size_t{1} << 20) : smallest;
      blocks.push_back(empty({static_cast<int64_t>(bytes)}, TensorOptions(kUInt8).device(kCUDA)));
    }
    raw_bytes = static_cast<size_t>(capacity() - cuda::memory_reserved() - left);
    if (raw_bytes > 0) raw = cuda::runtime().malloc(raw_bytes);
    EXPECT_TRUE(raw_bytes == 0 || raw != nullptr);
  }
  ~Ballast() {
    if (raw != nullptr) cuda::runtime().free(raw, raw_bytes);
  }
  Ballast(const Ballast&) = delete;
  Ballast& operator=(const Ballast&) = delete;
};

// Sizes make each kind of buffer a size of its own (the destination 8 KiB, K indices with
// duplicates: 4.8 KB of int64), so that a temporary is not served by a block that validation
// freed into the cache.
std::vector<WriteCase> write_cases() {
  constexpr int64_t N = 2048, K = 600;
  using Write = std::function<void()>;
  auto dst = [](Device d) { return arange(N, kFloat32).to(d); };
  auto idx = [](Device d) { return (arange(K, kInt64).remainder_(500) * 3).to(d); };
  auto vals = [](Device d) { return (arange(K, kFloat32) / -8).to(d); };
  auto mask = [](Device d) { return (arange(N) >= N - K).to(d); };
  return {
      {"index_put_",
       [=](Device d) {
         Tensor x = dst(d), v = vals(d), i = idx(d);
         return std::make_pair(x, Write([=]() mutable { x.index_put_({i}, v); }));
       }},
      {"index_put_ accumulate",
       [=](Device d) {
         Tensor x = dst(d), v = vals(d), i = idx(d);
         return std::make_pair(x, Write([=]() mutable { x.index_put_({i}, v, true); }));
       }},
      {"index_put_ of its own elements",
       [=](Device d) {
         Tensor x = dst(d), i = idx(d);
         return std::make_pair(x, Write([=]() mutable { x.index_put_({i}, x.narrow(0, 5, K)); }));
       }},
      {"index_put_ requiring grad",
       [=](Device d) {
         Tensor leaf = dst(d).requires_grad_();
         Tensor x = leaf * 1, v = vals(d).requires_grad_(), i = idx(d);
         return std::make_pair(x, Write([=]() mutable { x.index_put_({i}, v, true); }));
       }},
      {"set_item_ of a 0-dim CPU value",
       [=](Device d) {
         Tensor x = dst(d), v = tensor(5.0), i = idx(d);
         return std::make_pair(x, Write([=]() mutable { x.set_item_({i}, v); }));
       }},
      {"set_item_ with an index tensor",
       [=](Device d) {
         Tensor x = dst(d), v = vals(d), i = idx(d);
         return std::make_pair(x, Write([=]() mutable { x.set_item_({i}, v); }));
       }},
      {"set_item_ of a mask",
       [=](Device d) {
         Tensor x = dst(d), m = mask(d), v = vals(d);
         return std::make_pair(x, Write([=]() mutable { x.set_item_({m}, v); }));
       }},
      {"set_item_ of a strided slice from the CPU",
       [=](Device d) {
         Tensor x = dst(d), v = arange(N / 2, kFloat32) * -1;
         return std::make_pair(
             x, Write([=]() mutable { x.set_item_({indexing::Slice(0, indexing::None, 2)}, v); }));
       }},
      {"copy_ from the CPU in another dtype",
       [=](Device d) {
         Tensor x = dst(d), v = arange(N, kFloat64) * -1;
         return std::make_pair(x, Write([=]() mutable { x.copy_(v); }));
       }},
      {"copy_ of overlapping elements",
       [=](Device d) {
         Tensor x = dst(d);
         return std::make_pair(
             x, Write([=]() mutable { x.narrow(0, 1, N - 1).copy_(x.narrow(0, 0, N - 1)); }));
       }},
      {"copy_ into the CPU of a strided device tensor",
       [=](Device d) {
         Tensor x = dst(kCPU), src = (arange(2 * N, kFloat32) * -1).to(d);
         return std::make_pair(x, Write([=]() mutable { x.copy_(src.slice(0, 0, 2 * N, 2)); }));
       }},
      {"add_ of overlapping elements",
       [=](Device d) {
         Tensor x = dst(d);
         return std::make_pair(
             x, Write([=]() mutable { x.narrow(0, 1, N - 1).add_(x.narrow(0, 0, N - 1)); }));
       }},
      {"mul_ by a float64 tensor",
       [=](Device d) {
         Tensor x = dst(d), y = full({N}, 3.0, kFloat64).to(d);
         return std::make_pair(x, Write([=]() mutable { x.mul_(y); }));
       }},
      {"exp_ of float16",
       [=](Device d) {
         Tensor x = (arange(N, kFloat32) / N).to(kFloat16).to(d);
         return std::make_pair(x, Write([=]() mutable { x.exp_(); }));
       }},
      {"scatter_",
       [=](Device d) {
         Tensor x = dst(d), i = idx(d), v = vals(d);
         return std::make_pair(x, Write([=]() mutable { x.scatter_(0, i, v); }));
       }},
      {"scatter_add_",
       [=](Device d) {
         Tensor x = dst(d), i = idx(d), v = vals(d);
         return std::make_pair(x, Write([=]() mutable { x.scatter_add_(0, i, v); }));
       }},
      {"scatter_reduce_ amax without include_self",
       [=](Device d) {
         Tensor x = dst(d), i = idx(d), v = vals(d);
         return std::make_pair(x,
                               Write([=]() mutable { x.scatter_reduce_(0, i, v, "amax", false); }));
       }},
      {"scatter_reduce_ mean of int64",
       [=](Device d) {
         Tensor x = arange(N, kInt64).to(d), i = idx(d), v = (arange(K, kInt64) - 300).to(d);
         return std::make_pair(x, Write([=]() mutable { x.scatter_reduce_(0, i, v, "mean"); }));
       }},
      {"scatter_reduce_ mean of int32 without include_self",
       [=](Device d) {
         Tensor x = arange(N, kInt32).to(d), i = idx(d), v = (arange(K, kInt32) - 300).to(d);
         return std::make_pair(x,
                               Write([=]() mutable { x.scatter_reduce_(0, i, v, "mean", false); }));
       }},
      {"scatter_reduce_ mean of float16",
       [=](Device d) {
         Tensor x = dst(d).to(kFloat16), i = idx(d), v = vals(d).to(kFloat16);
         return std::make_pair(x, Write([=]() mutable { x.scatter_reduce_(0, i, v, "mean"); }));
       }},
      {"index_add_",
       [=](Device d) {
         Tensor x = dst(d), i = idx(d), v = vals(d);
         return std::make_pair(x, Write([=]() mutable { x.index_add_(0, i, v); }));
       }},
      {"index_copy_",
       [=](Device d) {
         Tensor x = dst(d), i = (arange(K, kInt64) * 3).to(d), v = vals(d);
         return std::make_pair(x, Write([=]() mutable { x.index_copy_(0, i, v); }));
       }},
      {"index_fill_",
       [=](Device d) {
         Tensor x = dst(d), i = idx(d);
         return std::make_pair(x, Write([=]() mutable { x.index_fill_(0, i, -2.0); }));
       }},
      {"put_",
       [=](Device d) {
         Tensor x = dst(d), i = idx(d), v = vals(d);
         return std::make_pair(x, Write([=]() mutable { x.put_(i, v, true); }));
       }},
      {"masked_scatter_",
       [=](Device d) {
         Tensor x = dst(d), m = mask(d), v = vals(d);
         return std::make_pair(x, Write([=]() mutable { x.masked_scatter_(m, v); }));
       }},
      {"lerp_ with a broadcast weight",
       [=](Device d) {
         Tensor x = dst(d), e = zeros({N}).to(d), w = full({1}, 0.5).to(d);
         return std::make_pair(x, Write([=]() mutable { x.lerp_(e, w); }));
       }},
      {"uniform_ of a strided view",
       [=](Device d) {
         Tensor x = dst(d);
         return std::make_pair(x, Write([=]() mutable { x.slice(0, 0, N, 2).uniform_(0.0, 0.5); }));
       }},
  };
}

TEST(MemoryLimits, AWriteOutOfMemoryChangesNeitherValuesNorVersion) {
  // Each write with 0, 512, 1024, ... bytes of the device free, until it succeeds: so each of
  // its allocations in turn is the one that fails (validation's, the temporaries', a kernel's).
  constexpr int64_t kMostFree = int64_t{1} << 20;
  for (const WriteCase& c : write_cases()) {
    SCOPED_TRACE(c.name);
    auto [expected, cpu_write] = c.make(kCPU);
    cpu_write();
    int64_t left = 0;
    for (; left <= kMostFree; left += 512) {
      SCOPED_TRACE(testing::Message() << left << " bytes free");
      auto [x, write] = c.make(kCUDA);
      const std::vector<double> before = values(x);
      const uint32_t version = x.version();
      bool out_of_memory = false;
      {
        Ballast ballast(left);
        try {
          write();
        } catch (const cuda::OutOfMemoryError&) {
          out_of_memory = true;
        }
      }
      if (out_of_memory) {
        EXPECT_EQ(x.version(), version) << "bumped, then out of memory";
        EXPECT_EQ(values(x), before);
        continue;
      }
      EXPECT_GT(left, 0) << "the write allocates nothing: it does not belong in this table";
      EXPECT_EQ(x.version(), version + 1);
      if (std::string(c.name).find("uniform_") == std::string::npos) {
        EXPECT_EQ(values(x), values(expected));
      }
      break;
    }
    EXPECT_LE(left, kMostFree) << "never succeeded";
  }
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
