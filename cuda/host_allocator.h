// CachingHostAllocator: page-locked ("pinned") host memory for pin_memory() tensors and the
// staging buffers of non-blocking transfers (Note [Non-blocking transfers] in
// cuda/cuda_backend.cc).
//
//   CachingHostAllocator& h = host_allocator();
//   void* p = h.allocate_raw(1000);                // a 1024-byte pinned block
//   runtime().memcpy_async(device, p, 1000, CopyKind::kHostToDevice);
//   h.record_use(p);                               // the copy on the stream reads p
//   h.free_raw(p);                                 // reused only once that copy is done
//
// Note [Pinned host blocks]
// PyTorch's CachingHostAllocator: a request rounds up to a power of two (at least 512 bytes)
// and takes the smallest cached block that fits (no splitting); only when none does is a new
// one page-locked (cudaHostAlloc; the host-run runtime uses ordinary aligned memory, outside
// the device arena, so a kernel handed a pinned pointer is still refused). A block whose memory
// a queued copy may still read or write (record_use) is not handed out again when freed: an
// event is recorded on the stream then, and the block waits until that event completed
// (polled by the next allocate). So no code of ours, and no later tensor, touches a buffer a
// transfer still uses. empty_cache() returns the free blocks; an out-of-memory empties the
// cache and retries once, then OutOfMemoryError. contains() answers is_pinned() for any
// address inside a live or cached block, so views of a pinned tensor are pinned too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tensor/storage.h"

namespace mutagrad::cuda {

// Where pinned blocks and stream events come from: the runtime, or a test's simulation.
class HostMemorySource {
 public:
  virtual ~HostMemorySource() = default;
  // nullptr when no page-locked memory is left.
  virtual void* host_alloc(size_t nbytes) = 0;
  virtual void host_free(void* ptr) = 0;
  // An event recorded now on the stream transfers run on; query: whether it completed.
  virtual void* record_event() = 0;
  virtual bool query_event(void* event) = 0;
  virtual void destroy_event(void* event) = 0;
};

class CachingHostAllocator : public Allocator {
 public:
  struct Stats {
    int64_t allocated = 0;    // bytes of blocks handed out and not freed
    int64_t reserved = 0;     // bytes page-locked: handed out, waiting for an event, or cached
    int64_t pending = 0;      // freed blocks waiting for their event
    int64_t host_allocs = 0;  // blocks page-locked since construction
  };

  // `source` null: the runtime's (DeviceError when no device is usable).
  explicit CachingHostAllocator(HostMemorySource* source = nullptr);
  ~CachingHostAllocator() override;
  CachingHostAllocator(const CachingHostAllocator&) = delete;
  CachingHostAllocator& operator=(const CachingHostAllocator&) = delete;

  std::shared_ptr<void> allocate(size_t nbytes) override;
  void* allocate_raw(size_t nbytes);
  void free_raw(void* ptr);
  // A transfer queued on the stream reads or writes the block holding `ptr`; no-op for memory
  // that is not pinned.
  void record_use(const void* ptr);
  // Whether [ptr, ptr + nbytes) lies in one pinned block.
  bool contains(const void* ptr, size_t nbytes = 1) const;
  Stats stats() const;
  void empty_cache();

  // A power of two, at least 512.
  static size_t round_size(size_t nbytes);

 private:
  struct Block {
    size_t size;
    bool allocated = false;
    bool used = false;      // a transfer was queued since it was handed out
    void* event = nullptr;  // recorded when freed after use; must complete before reuse
  };
  void release(void* ptr);
  void process_events_locked();
  void empty_cache_locked();

  HostMemorySource* source_;
  bool on_runtime_;
  mutable std::mutex mutex_;
  std::map<const char*, Block> blocks_;            // every block by address
  std::set<std::pair<size_t, const char*>> free_;  // (size, address) of reusable blocks
  std::vector<const char*> pending_;               // freed, waiting for events
  Stats stats_;
};

// The process's pinned-memory allocator (never destroyed).
CachingHostAllocator& host_allocator();

}  // namespace mutagrad::cuda
