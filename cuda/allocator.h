// CachingAllocator: device memory for CUDA tensors. Segments obtained from the runtime are cut
// into blocks and kept after the tensors die, so that the next tensor reuses a block instead of
// paying for cudaMalloc/cudaFree (each of which synchronizes the device).
//
//   CachingAllocator& a = caching_allocator();
//   std::shared_ptr<void> p = a.allocate(1000);   // a 1024-byte block of a 2 MiB segment
//   a.stats().allocated;                          // 1024 while p lives; reserved 2 MiB
//
// Note [Caching allocator]
// PyTorch's design, with its constants:
// - Sizes round up to a multiple of 512 bytes (round_size; at least 512).
// - Two pools: requests up to 1 MiB are served from "small" segments of 2 MiB, larger ones from
//   "large" segments of 20 MiB (requests under 10 MiB) or of the request rounded up to 2 MiB.
//   A block never moves between pools.
// - allocate() serves a request from a deferred block of exactly its size, else from the
//   smallest merged free block of its pool that fits (best fit, lowest address among equals),
//   else from a deferred block that fits, and splits the block when the rest is worth keeping:
//   at least 512 bytes in the small pool, more than 1 MiB in the large pool (a smaller rest
//   stays part of the block and counts as allocated). When nothing fits, the deferred blocks
//   are merged and the best fit looked for again; only then is a new segment asked for.
// - Freeing a block defers it (Note [Deferred merging]); merging joins it with the free
//   neighbours of its segment, so a segment whose blocks are all free is one free block again.
// - empty_cache() merges the deferred blocks, then returns every free whole segment to the
//   runtime (cudaFree); a segment with a live block stays, its free blocks with it.
// - Out of memory: the cache is emptied and the segment asked for again; if the device cannot
//   hold a whole segment, a segment of exactly the rounded request is tried (PyTorch stops
//   there; on a nearly full device this keeps small tensors possible); then OutOfMemoryError,
//   with nothing allocated.
// - stats(): `allocated` is the bytes of live blocks (rounded sizes, plus any unsplit rest),
//   `reserved` the bytes of segments held, so reserved - allocated is what the cache holds.
// Stream order: blocks carry no stream. Kernels run on the runtime's one stream, so a block
// freed while a queued kernel uses it may go to a later kernel of that stream at once. Other
// streams (NCCL's, Note [NCCL on its own stream] in distributed/nccl_process_group.cc) never
// free memory they may still use: a collective holds its tensors until its event completed.
// Only empty_cache() (cudaFree, which synchronizes) gives memory back.
//
// Note [Deferred merging]
// A freed block is not merged at once: it is kept as it is, "deferred", in a LIFO per size in
// front of the merged free blocks (dlmalloc's fastbins), because the next request of the same
// size usually comes soon (a training step allocates the same shapes again) and then costs no
// merging, no list search and no split. The merged free blocks still come first for any other
// size, and the deferred ones are merged (coalesce_deferred) when nothing else fits, before a
// new segment is asked for, and by empty_cache() (so by the out-of-memory retry too). So a
// segment is only asked for, and memory only returned, on the merged layout, as before.
// What differs from merging at once, all of it checked by allocator_test's churn against the
// rules written out naively: a deferred block serves its own size (the most recently freed one
// of that size, not the lowest address), or a request that no merged block fits (small pool:
// the most recently freed block of the smallest deferred size that fits; large pool: the
// smallest, lowest address among equals), split as usual, its rest merged; and until the next
// merge, free blocks may sit side by side, one at least deferred (snapshot() marks them).
// Taking a deferred block before the merged best fit for other sizes was tried: slower, and
// fragmentation grew (BM_AllocatorChurn: peak reserved / peak live 1.63, 0.175 segments asked
// per 1,000 free + allocate). As written, that churn asks for 0.14 segments per 1,000 (0.145
// merging at once) with peak reserved / peak live 1.33 (1.38 merging at once).
//
// Note [Allocator bookkeeping cost]
// The host-side bookkeeping of one free + allocate must cost no more than the exact-bin free
// lists this design replaced (BM_AllocatorChurn, docs/performance/cuda.md). So the common path
// never calls the C heap and never walks a tree: Block objects (a cache line each) are recycled
// through a spare list; the live and deferred blocks are an open-addressing table; each pool's
// free blocks sit in intrusive lists, one per bin, with a two-level bitmap of the non-empty
// bins. Small pool: a bin per size (4096 bins, 512 B to 2 MiB), so the best fit is the first
// non-empty bin at or above the request (two find-first-set instructions), then that bin's
// lowest address. Large pool: a bin per MiB of size (64 bins, the last one for 63 MiB and up):
// the request's own bin is scanned for the best fit, else the next non-empty bin's smallest
// block. The result is exactly the best fit among the merged blocks; a bin's scan is short
// unless many free blocks share a size (or are >= 63 MiB). The deferred blocks use the same
// bins: in the small pool each bin is a stack (singly linked), so a free is a push and the
// reuse a pop, touching no other block; a deferred block stays in the table, so neither pays a
// table update. Each call takes the mutex once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda/runtime.h"
#include "tensor/storage.h"

namespace mutagrad::cuda {

// Where the allocator's segments come from: the runtime (malloc/free of Runtime), or a test's
// simulation.
class SegmentSource {
 public:
  virtual ~SegmentSource() = default;
  // nullptr when the device is out of memory.
  virtual void* malloc(size_t nbytes) = 0;
  virtual void free(void* ptr, size_t nbytes) = 0;
  // What the OutOfMemoryError names: "cuda:0 (NVIDIA H100 ...)".
  virtual std::string device_text() = 0;
};

class CachingAllocator : public Allocator {
 public:
  struct Stats {
    int64_t allocated = 0;       // bytes in live blocks
    int64_t max_allocated = 0;   // peak of `allocated` since the last reset
    int64_t reserved = 0;        // bytes of segments obtained from the runtime: live + cached
    int64_t segments = 0;        // how many segments are held
    int64_t device_mallocs = 0;  // segments asked for since construction (successful)
    int64_t device_frees = 0;    // segments returned since construction
  };
  // One block of a segment, in address order.
  struct BlockInfo {
    size_t offset;  // from the segment's start
    size_t size;
    bool allocated;
    bool deferred;  // free, not yet merged with its neighbours (Note [Deferred merging])
  };
  struct SegmentInfo {
    size_t size;
    bool small;  // the small pool's
    std::vector<BlockInfo> blocks;
  };

  // `source` null: the runtime's memory (and DeviceError when no device is usable).
  explicit CachingAllocator(SegmentSource* source = nullptr);
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // DeviceError when no device is usable, OutOfMemoryError when the device is full.
  std::shared_ptr<void> allocate(size_t nbytes) override;
  // A block without an owner, for Thrust's and CUB's temporary storage: give it back with
  // free_raw(ptr). Counted in stats() as tensors are.
  void* allocate_raw(size_t nbytes);
  void free_raw(void* ptr, size_t nbytes = 0);
  Stats stats() const;
  void reset_peak();
  // Returns every free whole segment to the runtime.
  void empty_cache();
  // Every segment held, in address order (PyTorch's memory_snapshot, reduced).
  std::vector<SegmentInfo> snapshot() const;

  // The size a request is served with: a multiple of 512, at least 512.
  static size_t round_size(size_t nbytes);
  // The segment a new block of `rounded` bytes comes with (Note [Caching allocator]).
  static size_t segment_size(size_t rounded);

 private:
  struct Block;
  // Free blocks in bins: intrusive lists, bit i of bits set when bin i is non-empty, bit j of
  // summary when bits[j] is non-zero.
  struct FreeBins {
    explicit FreeBins(size_t bins) : head(bins), bits(bins / 64) {}
    size_t first_nonempty(size_t i) const;  // at or after bin i; head.size() when none
    void insert(Block* b, size_t bin);
    void erase(Block* b, size_t bin);
    // The bin as a stack (singly linked: free_prev is not kept).
    void push(Block* b, size_t bin);
    void pop(size_t bin);
    // The smallest block of at least `size`, lowest address among equals; nullptr when none.
    Block* best_fit(size_t size, bool small) const;
    static Block* best_in(Block* list, size_t size);  // the same within one bin's list
    // The most recently inserted block of exactly `size`, or nullptr.
    Block* exact(size_t size, bool small) const;
    std::vector<Block*> head;
    std::vector<uint64_t> bits;
    uint64_t summary = 0;
  };
  // Allocated blocks by address: open addressing, linear probing, deletion by backward shift
  // (no tombstones), at most a quarter full.
  class LiveTable {
   public:
    LiveTable() : slots_(256) {}
    void insert(void* ptr, Block* b);
    Block* find(const void* ptr) const;  // nullptr when absent
    Block* take(void* ptr);              // removes it; nullptr when absent

   private:
    size_t home(const void* ptr) const;
    std::vector<std::pair<void*, Block*>> slots_;
    size_t count_ = 0;
    int shift_ = 64 - 8;  // 2^(64 - shift_) slots
  };

  void release(void* ptr);
  Block* new_block();
  void drop_block(Block* b);
  Block* new_segment(size_t rounded, bool small);
  void empty_cache_locked();
  // The merged free blocks of both pools.
  void pool_insert(Block* b);
  void pool_erase(Block* b);
  // Into the pool, merged with its free (not deferred) neighbours.
  void merge_into_pool(Block* b);
  // The deferred blocks (Note [Deferred merging]).
  void defer(Block* b);
  void undefer(Block* b);
  void coalesce_deferred();  // merges every deferred block into its pool

  SegmentSource* source_;
  bool on_runtime_;
  mutable std::mutex mutex_;
  FreeBins small_free_{4096};      // bin i: size 512 * (i + 1)
  FreeBins large_free_{64};        // bin i: size in [i MiB, i + 1 MiB), bin 63 from 63 MiB up
  FreeBins small_deferred_{2048};  // the deferred blocks, in the same bins (at most 1 MiB)
  FreeBins large_deferred_{64};
  size_t deferred_count_ = 0;
  LiveTable live_;                    // allocated and deferred blocks
  std::set<Block*> segments_;         // every segment's first block
  std::vector<Block*> spare_blocks_;  // Block objects to reuse
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
