// Storage: one buffer of bytes on one device, shared by every tensor that views it.
//
//   Storage s = Storage::allocate(kCPU, 64);   // 64 bytes, 64-byte aligned on the CPU
//   Storage t = s;                              // the same buffer: t.data() == s.data()
//   Storage ext = Storage::from_blob(ptr, n, kCPU, keep_alive);  // wraps memory we do not own
#pragma once

#include <cstddef>
#include <memory>

#include "tensor/device.h"

namespace mutagrad {

// Allocates device memory. A backend owns one; the returned pointer frees itself.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::shared_ptr<void> allocate(size_t nbytes) = 0;
};

// Note [Non-blocking transfers scope]
// to(device, dtype, non_blocking=true) and copy_(src, non_blocking=true) run their copies with
// NonBlockingTransfer active on the calling thread; a device backend may then leave a transfer
// between pinned host memory and the device queued on its stream (torch's semantics: docs/
// cuda.md, Note [Non-blocking transfers] in cuda/cuda_backend.cc). Every other copy blocks.
class NonBlockingTransfer {
 public:
  explicit NonBlockingTransfer(bool on) : saved_(active_) { active_ = active_ || on; }
  ~NonBlockingTransfer() { active_ = saved_; }
  NonBlockingTransfer(const NonBlockingTransfer&) = delete;
  NonBlockingTransfer& operator=(const NonBlockingTransfer&) = delete;
  static bool active() { return active_; }

 private:
  bool saved_;
  static inline thread_local bool active_ = false;
};

// Alignment of every CPU allocation: a cache line, and enough for any SIMD load.
constexpr size_t kCpuAlignment = 64;

class Storage {
 public:
  Storage() = default;

  // A new buffer of `nbytes` from the allocator registered for `device`.
  static Storage allocate(Device device, size_t nbytes);
  // Wraps memory owned elsewhere; `owner` is kept alive as long as the storage is.
  static Storage from_blob(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner);

  bool defined() const { return impl_ != nullptr; }
  void* data() const { return impl_->data; }
  size_t nbytes() const { return impl_->nbytes; }
  Device device() const { return impl_->device; }
  bool is_same(const Storage& other) const { return impl_ == other.impl_; }
  long use_count() const { return impl_.use_count(); }
  // False for from_blob's memory, which its owner may still read: it cannot be replaced by a
  // larger buffer behind the owner's back (an out= resize refuses it, as torch's).
  bool is_resizable() const { return impl_->resizable; }

 private:
  struct Impl {
    std::shared_ptr<void> owner;  // frees the memory when the last storage goes
    void* data;
    size_t nbytes;
    Device device;
    bool resizable = true;
  };
  explicit Storage(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace mutagrad
