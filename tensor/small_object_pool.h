// The small-object pool: per-thread free lists for the bookkeeping that every tensor and every
// autograd node allocates (TensorImpl, the storage's and the version counter's shared state,
// shared_ptr control blocks, nodes, autograd metadata).
//
//   std::shared_ptr<TensorImpl> impl = make_pooled<TensorImpl>(storage, sizes, ...);
//   void* p = small_object_allocate(48);   // a 48-byte block, from this thread's list if any
//   small_object_free(p, 48);              // back to this thread's list
//
// Note [Small-object pool]
// A tiny op (`a + b` on a few elements) made four heap allocations for its result alone (the
// buffer's shared_ptr control block, Storage's state, the version counter's state, TensorImpl)
// and freed them again: a third of its time, with the buffer itself already cached by the CPU
// allocator (Note [CPU caching allocator]). These objects now come from this pool:
// - Size classes of 16 bytes up to kSmallObjectMax; a larger or over-aligned object goes to
//   operator new directly. A block is always its class's full size, whether it came from a list
//   or from operator new, so a block may be freed into a list whatever was true when it was made.
// - One free list per class per thread, touched by its thread only: no lock, no atomic
//   read-modify-write. A block freed on another thread than the one that made it joins the
//   freeing thread's list (every block is operator new's, so any thread may hold it).
// - A list keeps at most kSmallObjectThreadBytes of blocks per class; past that a freed block
//   goes back to operator delete. Thread exit frees the thread's lists; a block freed after that
//   (a static tensor at process exit) goes to operator delete.
// - Off in the sanitizer builds' default, as the CPU allocator (MUTAGRAD_CPU_ALLOCATOR=malloc,
//   the ASan default): every object is then operator new's and delete's, so ASan reports a use
//   after free with both stacks and LeakSanitizer sees every object. Under ASan the blocks held
//   in a list are poisoned, so a stale access fails in the pool's mode too (its tests switch it
//   on). set_cpu_allocator_mode switches both; so does the environment variable;
//   MUTAGRAD_SMALL_OBJECT_POOL=0 or 1 switches the pool alone at start-up.
// - The objects' memory is not counted in memory_allocated(): that counts tensors' buffers.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace mutagrad {

constexpr size_t kSmallObjectGranule = 16;
constexpr size_t kSmallObjectMax = 1024;
constexpr size_t kSmallObjectThreadBytes = 64 * 1024;  // per class, per thread

// A block of at least `nbytes` bytes, aligned to kSmallObjectGranule (operator new's alignment).
void* small_object_allocate(size_t nbytes);
// Frees a block from small_object_allocate(nbytes), with the same `nbytes`.
void small_object_free(void* p, size_t nbytes) noexcept;

// Whether freed blocks are kept and reused (Note [Small-object pool]); may be switched at any
// time (off: every block is operator new's; those already in a list wait there).
bool small_object_pool_enabled();
void set_small_object_pool_enabled(bool enabled);

// A standard allocator over the pool, for std::allocate_shared and containers.
template <typename T>
class SmallObjectAllocator {
 public:
  using value_type = T;
  SmallObjectAllocator() noexcept = default;
  template <typename U>
  SmallObjectAllocator(const SmallObjectAllocator<U>&) noexcept {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    if constexpr (alignof(T) > kSmallObjectGranule) {
      return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    } else {
      return static_cast<T*>(small_object_allocate(n * sizeof(T)));
    }
  }
  void deallocate(T* p, size_t n) noexcept {
    if constexpr (alignof(T) > kSmallObjectGranule) {
      ::operator delete(p, std::align_val_t(alignof(T)));
    } else {
      small_object_free(p, n * sizeof(T));
    }
  }
  template <typename U>
  bool operator==(const SmallObjectAllocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const SmallObjectAllocator<U>&) const noexcept {
    return false;
  }
};

// std::make_shared<T>(args...), with the object and its control block from the pool.
template <typename T, typename... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
  return std::allocate_shared<T>(SmallObjectAllocator<T>(), std::forward<Args>(args)...);
}

// For a class whose objects are made by new (std::make_unique): its operator new and delete go
// through the pool. The sized delete gets the dynamic type's size through a virtual destructor.
// Used as a member declaration: `MUTAGRAD_POOLED_NEW_DELETE;`.
#define MUTAGRAD_POOLED_NEW_DELETE                                                               \
  static void* operator new(size_t nbytes) { return ::mutagrad::small_object_allocate(nbytes); } \
  static void operator delete(void* p, size_t nbytes) noexcept {                                 \
    ::mutagrad::small_object_free(p, nbytes);                                                    \
  }                                                                                              \
  static_assert(true, "")

}  // namespace mutagrad
