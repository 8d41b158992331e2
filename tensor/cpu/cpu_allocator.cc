// The CPU's caching allocator: size classes, per-thread caches, two shared pools.
//
// Note [CPU caching allocator]
// Every CPU buffer comes from cpu_allocate() (CpuAllocator, tensor/cpu/cpu_backend.cc), so a
// steady-state loop of tiny ops takes nothing from the system, and repeated steps reuse the
// large buffers (activations, oneDNN's reorder temporaries: convolution.cc) instead of faulting
// fresh pages in every step.
// - Size classes: 64-byte steps up to 1 KiB, then four per power of two (waste under 25 %).
// - Blocks under kCpuLargeBlock: each thread keeps a cache per class (a fixed array, at most
//   kSlots blocks, and limits.thread_bytes in all), touched by that thread only: no lock and
//   no atomic read-modify-write on the hot path. A miss refills half a cache's worth from the
//   shared pool; a full class spills half of it there. The pool is behind one mutex, bounded by
//   limits.pool_bytes; a block past the bound goes back to the system (free).
// - Blocks of kCpuLargeBlock and more go straight to the shared large pool (same mutex: one lock
//   per megabyte is nothing), bounded by limits.large_bytes; when a freed block would pass the
//   bound, the largest cached blocks are released first, then the block itself if it still
//   does not fit.
// - A block may be freed on any thread (the shared_ptr's last owner): it joins that thread's
//   cache. Thread exit flushes the cache into the pool. The happens-before edge from the
//   last writer to the freeing thread is the shared_ptr's count; from the pool to a new owner,
//   the mutex (tsan checks both: the cross-thread cases of tests/autograd/leak_test.cc).
// - Statistics: each thread counts its own allocated and cached bytes in atomics only it
//   writes (a relaxed load and store); cpu_memory_stats() sums the registered threads, the
//   pools and what exited threads left.
// - empty_cache() frees the pools and the caller's cache, and asks every other thread to flush
//   its cache at its next call (a relaxed flag read on each call).
// - The sanitizers: an ASan build defaults to kMalloc, so a use after free of a tensor's buffer
//   is reported at the access, with the free's stack, and LeakSanitizer sees every buffer. In
//   kCaching mode under ASan (the allocator's own tests) every cached block is poisoned, so a
//   stale access still fails. The leak test (tests/autograd/leak_test.cc) counts buffers at
//   the Allocator interface, above the cache, in either mode. tsan keeps the cache.
// - fork(): the mutex is taken around fork (pthread_atfork), so the child's pools are whole.
#include "tensor/cpu/cpu_allocator.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "tensor/sanitizers.h"
#include "tensor/small_object_pool.h"
#include "tensor/storage.h"

namespace mutagrad::cpu {
namespace {

// Size classes (Note [CPU caching allocator]). Requests past kMaxClassed (1 TiB) get
// std::bad_alloc.
constexpr int kLinear = 16;  // 64, 128, ..., 1024
constexpr int kMaxLog = 40;  // the largest class is 2^40
constexpr int kNumClasses = kLinear + (kMaxLog - 10) * 4;
constexpr size_t kMaxClassed = size_t{1} << kMaxLog;

constexpr int class_of(size_t n) {
  if (n <= 1024) return n == 0 ? 0 : static_cast<int>((n - 1) / 64);
  const int p = 63 - __builtin_clzll(n - 1);  // 2^p < n <= 2^(p + 1), p >= 10
  const size_t step = size_t{1} << (p - 2);
  return kLinear + (p - 10) * 4 + static_cast<int>((n - 1 - (size_t{1} << p)) / step);
}
constexpr size_t class_size(int c) {
  if (c < kLinear) return static_cast<size_t>(c + 1) * 64;
  const int p = 10 + (c - kLinear) / 4, k = (c - kLinear) % 4;
  return (size_t{1} << p) + static_cast<size_t>(k + 1) * (size_t{1} << (p - 2));
}
// Thread caches hold the classes under kCpuLargeBlock; the class of 1 MiB is the first large.
constexpr int kThreadClasses = class_of(kCpuLargeBlock);
constexpr int kFirstLarge = kThreadClasses;
static_assert(class_size(kFirstLarge) == kCpuLargeBlock &&
              class_size(kFirstLarge - 1) < kCpuLargeBlock);
static_assert(class_of(kMaxClassed) == kNumClasses - 1 &&
              class_size(kNumClasses - 1) == kMaxClassed);
constexpr int kSlots = 64;
// A thread keeps at most this many blocks of class c: 64 small ones, down to 4 of 256 KiB+.
int slots_of(int c) {
  return static_cast<int>(std::clamp<size_t>((size_t{1} << 20) / class_size(c), 4, kSlots));
}

struct Limits {
  std::atomic<size_t> thread_bytes{size_t{8} << 20};
  std::atomic<size_t> pool_bytes{size_t{64} << 20};
  std::atomic<size_t> large_bytes{size_t{256} << 20};
};

struct ThreadCache;

// The shared state, never destroyed (tensors may be freed during exit). Its mutex guards the
// pools and the registry.
struct Global {
  std::mutex mu;
  std::vector<void*> pool[kNumClasses];
  size_t pool_bytes = 0;   // under kFirstLarge
  size_t large_bytes = 0;  // kFirstLarge and above
  std::vector<ThreadCache*> threads;
  // Read without the mutex by cpu_memory_stats().
  std::atomic<int64_t> pooled{0};
  std::atomic<int64_t> retired_allocated{0};  // what exited threads (and orphan calls) counted
  std::atomic<int64_t> system_allocs{0};
  std::atomic<int64_t> system_frees{0};
  Limits limits;
};

void lock_for_fork();
void unlock_after_fork();

Global& global() {
  static Global* g = [] {
    auto* made = new Global();
    pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
    return made;
  }();
  return *g;
}
void lock_for_fork() { global().mu.lock(); }
void unlock_after_fork() { global().mu.unlock(); }

// Owner-written counters: a relaxed load and store, never a locked instruction.
void bump(std::atomic<int64_t>& a, int64_t d) {
  a.store(a.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}

void* system_alloc(size_t bytes) {
  void* p = std::aligned_alloc(kCpuAlignment, bytes);
  if (p == nullptr) {
    empty_cache();
    p = std::aligned_alloc(kCpuAlignment, bytes);
    if (p == nullptr) throw std::bad_alloc();
  }
  global().system_allocs.fetch_add(1, std::memory_order_relaxed);
  return p;
}
void system_free(void* p) {
  std::free(p);
  global().system_frees.fetch_add(1, std::memory_order_relaxed);
}

// Takes blocks out of the large pool, the largest first, until `incoming` more bytes fit under
// its bound; with the mutex held. The caller frees `out` after unlocking.
void trim_large(Global& g, size_t incoming, std::vector<void*>& out) {
  const size_t limit = g.limits.large_bytes.load(std::memory_order_relaxed);
  for (int c = kNumClasses - 1; c >= kFirstLarge && g.large_bytes + incoming > limit; --c) {
    while (!g.pool[c].empty() && g.large_bytes + incoming > limit) {
      out.push_back(g.pool[c].back());
      g.pool[c].pop_back();
      g.large_bytes -= class_size(c);
      bump(g.pooled, -static_cast<int64_t>(class_size(c)));
    }
  }
}

// Puts `n` blocks of class c into the shared pool, up to its bound; the rest go to the system.
void pool_put(int c, void* const* blocks, int n) {
  Global& g = global();
  const size_t size = class_size(c);
  std::vector<void*> release;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    const bool large = c >= kFirstLarge;
    size_t& held = large ? g.large_bytes : g.pool_bytes;
    const size_t limit = large ? g.limits.large_bytes.load(std::memory_order_relaxed)
                               : g.limits.pool_bytes.load(std::memory_order_relaxed);
    // Older large blocks make room for this one, unless it could never fit.
    if (large && size <= limit) trim_large(g, size * static_cast<size_t>(n), release);
    for (int i = 0; i < n; ++i) {
      if (held + size <= limit) {
        g.pool[c].push_back(blocks[i]);
        held += size;
        bump(g.pooled, static_cast<int64_t>(size));
      } else {
        release.push_back(blocks[i]);
      }
    }
  }
  for (void* p : release) {
    asan_unpoison(p, size);
    system_free(p);
  }
}

// Takes up to `want` blocks of class c from the shared pool into `out`; returns how many.
int pool_take(int c, void** out, int want) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  std::vector<void*>& v = g.pool[c];
  const int n = std::min(want, static_cast<int>(v.size()));
  for (int i = 0; i < n; ++i) {
    out[i] = v.back();
    v.pop_back();
  }
  const size_t bytes = class_size(c) * static_cast<size_t>(n);
  (c >= kFirstLarge ? g.large_bytes : g.pool_bytes) -= bytes;
  bump(g.pooled, -static_cast<int64_t>(bytes));
  return n;
}

struct ThreadCache {
  void* slots[kThreadClasses][kSlots];
  int count[kThreadClasses] = {};
  size_t bytes = 0;                   // cached here
  std::atomic<int64_t> allocated{0};  // allocated minus freed by this thread
  std::atomic<int64_t> cached{0};     // == bytes, for other threads' reads
  std::atomic<bool> flush_requested{false};

  // Sends the newest `n` blocks of class c to the pool.
  void spill(int c, int n) {
    count[c] -= n;
    const size_t size = class_size(c) * static_cast<size_t>(n);
    bytes -= size;
    bump(cached, -static_cast<int64_t>(size));
    pool_put(c, &slots[c][count[c]], n);
  }
  void flush() {
    for (int c = 0; c < kThreadClasses; ++c) {
      if (count[c] > 0) spill(c, count[c]);
    }
    flush_requested.store(false, std::memory_order_relaxed);
  }
};

// The calling thread's cache; null while its thread exits (blocks then go to the pool).
thread_local ThreadCache* tls_cache = nullptr;
thread_local bool tls_exited = false;

struct ThreadCacheOwner {
  ThreadCache* cache = nullptr;
  ~ThreadCacheOwner() {
    tls_cache = nullptr;
    tls_exited = true;
    cache->flush();
    Global& g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    g.threads.erase(std::find(g.threads.begin(), g.threads.end(), cache));
    g.retired_allocated.fetch_add(cache->allocated.load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
    delete cache;
  }
};

ThreadCache* make_cache() {
  if (tls_exited) return nullptr;
  static thread_local ThreadCacheOwner owner;
  owner.cache = new ThreadCache();
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  g.threads.push_back(owner.cache);
  return tls_cache = owner.cache;
}
inline ThreadCache* this_cache() {
  ThreadCache* tc = tls_cache;
  if (tc == nullptr) tc = make_cache();
  if (tc != nullptr && tc->flush_requested.load(std::memory_order_relaxed)) tc->flush();
  return tc;
}

void count_allocated(ThreadCache* tc, int64_t d) {
  if (tc != nullptr) {
    bump(tc->allocated, d);
  } else {
    global().retired_allocated.fetch_add(d, std::memory_order_relaxed);
  }
}

void* cached_alloc(int c) {
  const size_t size = class_size(c);
  ThreadCache* tc = this_cache();
  void* p = nullptr;
  if (tc != nullptr && c < kThreadClasses) {
    if (tc->count[c] == 0) {
      const int got = pool_take(c, tc->slots[c], std::max(1, slots_of(c) / 2));
      tc->count[c] = got;
      tc->bytes += size * static_cast<size_t>(got);
      bump(tc->cached, static_cast<int64_t>(size) * got);
    }
    if (tc->count[c] > 0) {
      p = tc->slots[c][--tc->count[c]];
      tc->bytes -= size;
      bump(tc->cached, -static_cast<int64_t>(size));
    }
  } else if (pool_take(c, &p, 1) == 0) {
    p = nullptr;
  }
  if (p == nullptr) {
    p = system_alloc(size);
  } else {
    asan_unpoison(p, size);
  }
  count_allocated(tc, static_cast<int64_t>(size));
  return p;
}

void cached_free(void* p, int c) {
  const size_t size = class_size(c);
  ThreadCache* tc = this_cache();
  count_allocated(tc, -static_cast<int64_t>(size));
  asan_poison(p, size);
  if (tc == nullptr || c >= kThreadClasses) return pool_put(c, &p, 1);
  const int cap = slots_of(c);
  if (tc->count[c] == cap) tc->spill(c, cap / 2);
  if (tc->bytes + size > global().limits.thread_bytes.load(std::memory_order_relaxed)) {
    return pool_put(c, &p, 1);
  }
  tc->slots[c][tc->count[c]++] = p;
  tc->bytes += size;
  bump(tc->cached, static_cast<int64_t>(size));
}

CpuAllocatorMode initial_mode() {
  const char* env = std::getenv("MUTAGRAD_CPU_ALLOCATOR");
  if (env != nullptr && std::strcmp(env, "malloc") == 0) return CpuAllocatorMode::kMalloc;
  if (env != nullptr && std::strcmp(env, "caching") == 0) return CpuAllocatorMode::kCaching;
#ifdef MUTAGRAD_ASAN
  return CpuAllocatorMode::kMalloc;
#else
  return CpuAllocatorMode::kCaching;
#endif
}
std::atomic<CpuAllocatorMode>& mode_flag() {
  static std::atomic<CpuAllocatorMode> mode{initial_mode()};
  return mode;
}

}  // namespace

CpuAllocatorMode cpu_allocator_mode() { return mode_flag().load(std::memory_order_relaxed); }
void set_cpu_allocator_mode(CpuAllocatorMode mode) {
  mode_flag().store(mode, std::memory_order_relaxed);
  set_small_object_pool_enabled(mode == CpuAllocatorMode::kCaching);  // one switch for both
}

CpuCacheLimits cpu_cache_limits() {
  const Limits& l = global().limits;
  return {l.thread_bytes.load(), l.pool_bytes.load(), l.large_bytes.load()};
}
void set_cpu_cache_limits(const CpuCacheLimits& limits) {
  Limits& l = global().limits;
  l.thread_bytes.store(limits.thread_bytes);
  l.pool_bytes.store(limits.pool_bytes);
  l.large_bytes.store(limits.large_bytes);
}

CpuMemoryStats cpu_memory_stats() {
  Global& g = global();
  CpuMemoryStats s;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (const ThreadCache* tc : g.threads) {
      s.allocated += tc->allocated.load(std::memory_order_relaxed);
      s.cached += tc->cached.load(std::memory_order_relaxed);
    }
    s.allocated += g.retired_allocated.load(std::memory_order_relaxed);
    s.cached += g.pooled.load(std::memory_order_relaxed);
  }
  s.reserved = s.allocated + s.cached;
  s.system_allocs = g.system_allocs.load(std::memory_order_relaxed);
  s.system_frees = g.system_frees.load(std::memory_order_relaxed);
  return s;
}
int64_t memory_allocated() { return cpu_memory_stats().allocated; }
int64_t memory_reserved() { return cpu_memory_stats().reserved; }

void empty_cache() {
  Global& g = global();
  if (tls_cache != nullptr) tls_cache->flush();
  std::vector<std::pair<void*, size_t>> release;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (ThreadCache* tc : g.threads) {
      if (tc != tls_cache) tc->flush_requested.store(true, std::memory_order_relaxed);
    }
    for (int c = 0; c < kNumClasses; ++c) {
      for (void* p : g.pool[c]) release.emplace_back(p, class_size(c));
      g.pool[c].clear();
      g.pool[c].shrink_to_fit();
    }
    g.pool_bytes = g.large_bytes = 0;
    g.pooled.store(0, std::memory_order_relaxed);
  }
  for (auto [p, size] : release) {
    asan_unpoison(p, size);
    system_free(p);
  }
}

size_t cpu_block_size(size_t nbytes) {
  const size_t rounded = (std::max<size_t>(nbytes, 1) + kCpuAlignment - 1) & ~(kCpuAlignment - 1);
  if (cpu_allocator_mode() == CpuAllocatorMode::kMalloc || nbytes > kMaxClassed) return rounded;
  return class_size(class_of(nbytes));
}

std::shared_ptr<void> cpu_allocate(size_t nbytes) {
  if (nbytes > kMaxClassed || nbytes > SIZE_MAX - kCpuAlignment) throw std::bad_alloc();
  if (cpu_allocator_mode() == CpuAllocatorMode::kMalloc) {
    // aligned_alloc wants a size that is a multiple of the alignment (and > 0 to be useful).
    const size_t rounded = cpu_block_size(nbytes);
    void* p = system_alloc(rounded);
    count_allocated(this_cache(), static_cast<int64_t>(rounded));
    return std::shared_ptr<void>(p, [rounded](void* q) {
      count_allocated(this_cache(), -static_cast<int64_t>(rounded));
      system_free(q);
    });
  }
  const int c = class_of(nbytes);
  // The control block from the small-object pool (Note [Small-object pool]): a tiny op's result
  // takes nothing from malloc.
  return std::shared_ptr<void>(
      cached_alloc(c), [c](void* q) { cached_free(q, c); }, SmallObjectAllocator<char>());
}

}  // namespace mutagrad::cpu
