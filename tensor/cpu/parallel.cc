#include "tensor/cpu/parallel.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#if defined(_OPENMP) && !defined(__SANITIZE_THREAD__)
#include <omp.h>
#define MUTAGRAD_PARALLEL_OPENMP 1
#endif

// Note [One thread pool on the CPU]
// oneDNN (tensor/cpu/convolution.cc) runs its kernels on GCC's OpenMP runtime, whose idle
// threads spin for a while after each parallel region. With a worker of our own beside them,
// element-wise work between two library calls ran on three busy threads on two cores: 25 % of a
// conv's samples were libgomp spinning (docs/performance/convolution.md). So parallel_run opens an
// OpenMP team of two, the same threads oneDNN uses (libtorch does the same with at::parallel_for).
// The halves are the same as before (the split depends only on n), and a team of one (a call from
// inside a parallel region, where libgomp nests no teams) runs both halves in order, so results
// are the same bits either way. Under ThreadSanitizer, which cannot see libgomp's barriers
// (Note [TSan and OpenMP], docs/thread-safety.md), and in builds without OpenMP (clang's fuzz
// build), the std::thread worker below is used instead.

namespace mutagrad::cpu {
namespace {

#ifndef MUTAGRAD_PARALLEL_OPENMP
// One worker thread that runs one job at a time; `busy` is held by the submitting caller.
class Worker {
 public:
  Worker() {
    std::thread([this] { loop(); }).detach();
  }

  // Runs fn(ctx, begin, end) on the worker and waits for it; false if the worker is taken.
  bool try_run(void (*fn)(void*, int64_t, int64_t), void* ctx, int64_t begin, int64_t end,
               void (*own)(void*, int64_t, int64_t), int64_t own_begin, int64_t own_end) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || in_worker_) return false;
    {
      std::lock_guard<std::mutex> lock(m_);
      fn_ = fn;
      ctx_ = ctx;
      begin_ = begin;
      end_ = end;
      error_ = nullptr;
      pending_ = true;
    }
    cv_.notify_one();
    std::exception_ptr own_error;
    try {
      own(ctx, own_begin, own_end);
    } catch (...) {
      own_error = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(m_);
    done_cv_.wait(lock, [this] { return !pending_; });
    if (own_error) std::rethrow_exception(own_error);
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  void loop() {
    in_worker_ = true;
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [this] { return pending_; });
      lock.unlock();
      try {
        fn_(ctx_, begin_, end_);
      } catch (...) {
        error_ = std::current_exception();
      }
      lock.lock();
      pending_ = false;
      done_cv_.notify_one();
    }
  }

  static thread_local bool in_worker_;
  std::mutex busy_;
  std::mutex m_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  void (*fn_)(void*, int64_t, int64_t) = nullptr;
  void* ctx_ = nullptr;
  int64_t begin_ = 0;
  int64_t end_ = 0;
  bool pending_ = false;
  std::exception_ptr error_;
};

thread_local bool Worker::in_worker_ = false;
#endif

// Note [parallel_for after fork]
// fork() copies only the calling thread. GCC's OpenMP runtime keeps its idle team in the child
// and the next parallel region there waits for threads that do not exist (a hang; so would our
// std::thread worker): Python's multiprocessing forks by default on Linux. A child therefore
// runs every parallel_for on its one thread, both halves in order (the same split, so the same
// bits), and asks OpenMP for teams of one (oneDNN's regions too).
std::atomic<bool> g_forked_child{false};

void on_fork_child() {
  g_forked_child.store(true, std::memory_order_relaxed);
#ifdef MUTAGRAD_PARALLEL_OPENMP
  omp_set_num_threads(1);
#endif
}

[[maybe_unused]] const bool g_fork_handler_registered = [] {
  return pthread_atfork(nullptr, nullptr, on_fork_child) == 0;
}();

// In a forked child: runs both halves on this thread and returns true.
bool ran_in_forked_child(void (*fn)(void*, int64_t, int64_t), void* ctx, int64_t n) {
  if (!g_forked_child.load(std::memory_order_relaxed)) return false;
  fn(ctx, 0, n / 2);
  fn(ctx, n / 2, n);
  return true;
}

}  // namespace

bool in_forked_child() { return g_forked_child.load(std::memory_order_relaxed); }

#ifdef MUTAGRAD_PARALLEL_OPENMP

void parallel_run(void (*fn)(void*, int64_t, int64_t), void* ctx, int64_t n) {
  const int64_t mid = n / 2;
  if (ran_in_forked_child(fn, ctx, n)) return;
  if (omp_in_parallel()) {
    fn(ctx, 0, n);
    return;
  }
  std::exception_ptr errors[2];
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num();
    try {
      if (omp_get_num_threads() < 2) {
        fn(ctx, 0, n);
      } else {
        fn(ctx, t == 0 ? 0 : mid, t == 0 ? mid : n);
      }
    } catch (...) {
      errors[t] = std::current_exception();
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

#else

void parallel_run(void (*fn)(void*, int64_t, int64_t), void* ctx, int64_t n) {
  if (ran_in_forked_child(fn, ctx, n)) return;
  static Worker* worker = new Worker();  // never destroyed: the detached thread outlives main
  int64_t mid = n / 2;
  if (!worker->try_run(fn, ctx, mid, n, fn, 0, mid)) fn(ctx, 0, n);
}

#endif

namespace {

std::atomic<int64_t>& shared_cache_slot() {
  static std::atomic<int64_t> bytes{-1};  // -1: not read yet
  return bytes;
}

}  // namespace

int64_t shared_cache_bytes() {
  int64_t bytes = shared_cache_slot().load(std::memory_order_relaxed);
  if (bytes >= 0) return bytes;
  bytes = 0;
  if (std::FILE* f = std::fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r")) {
    long long n = 0;
    char unit = 0;
    if (std::fscanf(f, "%lld%c", &n, &unit) >= 1 && n > 0) {
      bytes = unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
    }
    std::fclose(f);
  }
  shared_cache_slot().store(bytes, std::memory_order_relaxed);
  return bytes;
}

void set_shared_cache_bytes(int64_t bytes) {
  shared_cache_slot().store(bytes < 0 ? -1 : bytes, std::memory_order_relaxed);
}

}  // namespace mutagrad::cpu
