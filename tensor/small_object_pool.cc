// The small-object pool's free lists: Note [Small-object pool] in tensor/small_object_pool.h.
#include "tensor/small_object_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tensor/sanitizers.h"

namespace mutagrad {
namespace {

constexpr int kClasses = static_cast<int>(kSmallObjectMax / kSmallObjectGranule);

// Trivially destructible, so it stays usable while and after the thread's other thread_local
// objects are destroyed (a tensor freed by a thread_local's destructor, or at process exit).
struct FreeLists {
  void* head[kClasses];
  uint32_t count[kClasses];
  bool armed;  // the thread-exit drain is registered
  bool dead;   // the drain ran: frees go to operator delete from now on
};
thread_local FreeLists tls_lists;

struct Drain {
  // Its first call constructs this object, which registers the destructor for thread exit.
  void arm() { on = true; }
  bool on = false;
  ~Drain() {
    FreeLists& l = tls_lists;
    for (int c = 0; c < kClasses; ++c) {
      const size_t size = (static_cast<size_t>(c) + 1) * kSmallObjectGranule;
      while (void* p = l.head[c]) {
        asan_unpoison(p, size);
        l.head[c] = *static_cast<void**>(p);
        ::operator delete(p);
      }
      l.count[c] = 0;
    }
    l.dead = true;
  }
};
thread_local Drain tls_drain;

bool initial_enabled() {
  // MUTAGRAD_SMALL_OBJECT_POOL=0 or 1 decides for the pool alone (to measure it); otherwise the
  // CPU allocator's switch (tensor/cpu/cpu_allocator.cc) decides for both.
  if (const char* own = std::getenv("MUTAGRAD_SMALL_OBJECT_POOL")) {
    if (std::strcmp(own, "0") == 0) return false;
    if (std::strcmp(own, "1") == 0) return true;
  }
  const char* env = std::getenv("MUTAGRAD_CPU_ALLOCATOR");
  if (env != nullptr && std::strcmp(env, "malloc") == 0) return false;
  if (env != nullptr && std::strcmp(env, "caching") == 0) return true;
#ifdef MUTAGRAD_ASAN
  return false;
#else
  return true;
#endif
}
std::atomic<bool> g_enabled{initial_enabled()};

int class_of(size_t nbytes) {
  return static_cast<int>((std::max<size_t>(nbytes, 1) - 1) / kSmallObjectGranule);
}

}  // namespace

void* small_object_allocate(size_t nbytes) {
  if (nbytes > kSmallObjectMax) return ::operator new(nbytes);
  const int c = class_of(nbytes);
  const size_t size = (static_cast<size_t>(c) + 1) * kSmallObjectGranule;
  FreeLists& l = tls_lists;
  void* p = l.head[c];
  if (p != nullptr && g_enabled.load(std::memory_order_relaxed)) {
    asan_unpoison(p, size);
    l.head[c] = *static_cast<void**>(p);
    --l.count[c];
    return p;
  }
  return ::operator new(size);
}

void small_object_free(void* p, size_t nbytes) noexcept {
  if (p == nullptr) return;
  if (nbytes > kSmallObjectMax) {
    ::operator delete(p);
    return;
  }
  const int c = class_of(nbytes);
  const size_t size = (static_cast<size_t>(c) + 1) * kSmallObjectGranule;
  FreeLists& l = tls_lists;
  if (l.dead || l.count[c] >= kSmallObjectThreadBytes / size ||
      !g_enabled.load(std::memory_order_relaxed)) {
    ::operator delete(p);
    return;
  }
  if (!l.armed) {
    l.armed = true;
    tls_drain.arm();
  }
  *static_cast<void**>(p) = l.head[c];
  l.head[c] = p;
  ++l.count[c];
  asan_poison(p, size);
}

bool small_object_pool_enabled() { return g_enabled.load(std::memory_order_relaxed); }
void set_small_object_pool_enabled(bool enabled) {
  g_enabled.store(enabled, std::memory_order_relaxed);
}

}  // namespace mutagrad
