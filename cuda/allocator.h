// CachingAllocator: device memory for CUDA tensors, kept in size-binned free lists so that the
// next tensor of a similar size reuses a block instead of paying for cudaMalloc/cudaFree (each
// of which synchronizes the device).
//
//   CachingAllocator& a = caching_allocator();
//   std::shared_ptr<void> p = a.allocate(1000);   // a 1024-byte block; freed into its bin
//   a.stats().allocated;                          // 1024 while p lives
//
// Note [Caching allocator]
// Sizes round up to a bin: multiples of 512 bytes below 1 MiB, then four bins per power of two
// (2^k, 1.25, 1.5, 1.75 * 2^k), so at most 25% of a large block is unused. A freed block goes
// to its bin's free list; allocate() takes from the exact bin or calls the runtime. Blocks are
// never split or merged (simpler than PyTorch's best-fit with splitting; the cost is memory
// held in bins that the next sizes do not use: empty_cache() returns it). When the runtime is
// out of memory, the cache is emptied and the allocation retried once; if that fails too,
// OutOfMemoryError. Stream order: all kernels run on the runtime's one stream, so a block
// freed while a kernel that uses it is queued may be handed to a later kernel on that stream
// at once; only empty_cache() (cudaFree, which synchronizes) gives memory back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda/runtime.h"
#include "tensor/storage.h"

namespace mutagrad::cuda {

class CachingAllocator : public Allocator {
 public:
  struct Stats {
    int64_t allocated = 0;      // bytes in live blocks
    int64_t max_allocated = 0;  // peak of `allocated` since the last reset
    int64_t reserved = 0;       // bytes obtained from the runtime: live + cached
  };

  // DeviceError when no device is usable, OutOfMemoryError when the device is full.
  std::shared_ptr<void> allocate(size_t nbytes) override;
  // The same block without an owner, for Thrust's and CUB's temporary storage: give it back
  // with free_raw(ptr, nbytes) (the same nbytes). Counted in stats() as tensors are.
  void* allocate_raw(size_t nbytes);
  void free_raw(void* ptr, size_t nbytes);
  Stats stats() const;
  void reset_peak();
  // Frees every cached block through the runtime.
  void empty_cache();

  // The size a request is served with (Note [Caching allocator]).
  static size_t round_size(size_t nbytes);

 private:
  void release(void* ptr, size_t size);
  void empty_cache_locked();

  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_blocks_;  // bin size -> cached blocks
  Stats stats_;
};

// The process-wide allocator of CUDA tensors (never destroyed: tensors may outlive main).
CachingAllocator& caching_allocator();

// Note [Thrust temporaries]
// Thrust's algorithms (sort, count_if, copy_if, ...) allocate temporary storage themselves:
// with a plain policy, straight from cudaMalloc (device build) or the C heap (host-run build),
// past the caching allocator, so an out-of-memory there was a thrust::system_error (or
// std::bad_alloc) rather than OutOfMemoryError, the cache was not emptied first, and the bytes
// were missing from memory_allocated(). exec_policy() (cuda/kernel_util.h) therefore hands
// Thrust this allocator: thrust::cuda::par_nosync(alloc).on(stream) on the device,
// thrust::device(alloc) in the host-run build. CUB's temporary storage is a device_buffer()
// tensor, which comes from the same allocator.
struct ThrustAllocator {
  using value_type = char;
  char* allocate(std::ptrdiff_t nbytes) {
    return static_cast<char*>(caching_allocator().allocate_raw(static_cast<size_t>(nbytes)));
  }
  void deallocate(char* ptr, size_t nbytes) { caching_allocator().free_raw(ptr, nbytes); }
};

}  // namespace mutagrad::cuda
