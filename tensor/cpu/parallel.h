// parallel_for: splits [0, n) into two halves run on the caller and one other thread (an
// OpenMP team of two, shared with oneDNN: Note [One thread pool on the CPU] in parallel.cc),
// only for large work (n >= threshold, kParallelThreshold unless given); smaller ranges run
// inline.
//
//   parallel_for(numel, [&](int64_t begin, int64_t end) { kernel(begin, end); });
//
// The split depends only on n, so results are the same on every run. A nested call runs
// inline; concurrent callers each get a team of their own.
#pragma once

#include <cstdint>

namespace mutagrad::cpu {

constexpr int64_t kParallelThreshold = 65536;
// For costly elements (exp, tanh, ...), where a thread pays off sooner.
constexpr int64_t kParallelThresholdCostly = 16384;

// Runs fn(ctx, begin, end) over two halves of [0, n), one on the worker thread.
void parallel_run(void (*fn)(void*, int64_t, int64_t), void* ctx, int64_t n);
// Whether this process is a fork() child, whose parallel_for runs on one thread (Note
// [parallel_for after fork] in parallel.cc).
bool in_forked_child();

template <typename F>
void parallel_for(int64_t n, const F& f, int64_t threshold = kParallelThreshold) {
  if (n <= 0) return;
  if (n < threshold) {
    f(int64_t{0}, n);
    return;
  }
  parallel_run([](void* ctx, int64_t b, int64_t e) { (*static_cast<const F*>(ctx))(b, e); },
               const_cast<void*>(static_cast<const void*>(&f)), n);
}

// The size of the last-level cache a core shares, for kernels that plan by it (Note [Copies
// into the shared cache] in tensor/cpu/index_put.cc): sysfs's L3 of cpu0, read once (glibc's
// sysconf reports the whole chip's on some VMs), or 0 when it cannot be read. Tests set it with
// set_shared_cache_bytes to take either path (-1: read it again); no result depends on it.
int64_t shared_cache_bytes();
void set_shared_cache_bytes(int64_t bytes);

}  // namespace mutagrad::cpu
