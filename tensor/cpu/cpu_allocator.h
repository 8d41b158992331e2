// The CPU's caching allocator (Note [CPU caching allocator] in cpu_allocator.cc): every CPU
// tensor's buffer comes from cpu_allocate(), through CpuAllocator; its statistics mirror
// mutagrad::cuda's (memory_allocated, memory_reserved, empty_cache).
//
//   std::shared_ptr<void> p = cpu::cpu_allocate(4096);  // 64-byte aligned, frees itself
//   int64_t live = cpu::memory_allocated();              // bytes of live blocks
//   cpu::empty_cache();                                  // cached blocks back to the system
//   MUTAGRAD_CPU_ALLOCATOR=malloc ./my_binary            // plain aligned_alloc/free per tensor
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mutagrad::cpu {

// kCaching: size classes, per-thread caches, shared pools (the default). kMalloc: one
// aligned_alloc and one free per buffer, as before the cache (the default of ASan builds, so
// that ASan sees every buffer's lifetime exactly). Read from MUTAGRAD_CPU_ALLOCATOR
// ("caching" or "malloc") at first use; a block is always freed the way it was allocated, so
// set_cpu_allocator_mode may switch at any time (tests do).
enum class CpuAllocatorMode { kCaching, kMalloc };
CpuAllocatorMode cpu_allocator_mode();
void set_cpu_allocator_mode(CpuAllocatorMode mode);

// The bounds on free memory kept (by default 8 MiB, 64 MiB and 256 MiB). Blocks freed above them
// go back to the system.
struct CpuCacheLimits {
  size_t thread_bytes;  // each thread's own cache of blocks under kCpuLargeBlock
  size_t pool_bytes;    // the shared pool of blocks under kCpuLargeBlock
  size_t large_bytes;   // the shared pool of blocks of kCpuLargeBlock and more
};
// Blocks of this size class and above skip the thread caches (workspaces, activations).
constexpr size_t kCpuLargeBlock = size_t{1} << 20;
CpuCacheLimits cpu_cache_limits();
// Applies to frees from now on; call empty_cache() to trim what is cached already.
void set_cpu_cache_limits(const CpuCacheLimits& limits);

struct CpuMemoryStats {
  int64_t allocated = 0;      // bytes of live blocks (their size class)
  int64_t cached = 0;         // bytes of free blocks kept (thread caches and pools)
  int64_t reserved = 0;       // allocated + cached: what the allocator holds from the system
  int64_t system_allocs = 0;  // blocks taken from the system since the start
  int64_t system_frees = 0;   // blocks given back to it
};
CpuMemoryStats cpu_memory_stats();
// torch.cuda's names, for the CPU.
int64_t memory_allocated();
int64_t memory_reserved();
// Returns the shared pools' blocks and the calling thread's cache to the system; every other
// thread returns its own cache at its next allocation or free.
void empty_cache();

// A buffer of at least `nbytes` (64-byte aligned: kCpuAlignment), freed (or cached) when the
// last copy of the pointer goes, on any thread. std::bad_alloc when the system has no memory
// even after the caches were emptied.
std::shared_ptr<void> cpu_allocate(size_t nbytes);
// The bytes a request of `nbytes` occupies: its size class in the caching mode.
size_t cpu_block_size(size_t nbytes);

}  // namespace mutagrad::cpu
