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

}  // namespace mutagrad::cuda
