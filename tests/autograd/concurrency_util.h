// run_together: runs body(0), ..., body(threads - 1) on that many threads released at once, so
// that their work really overlaps (the concurrency tests; also run under --config=tsan).
//
//   std::atomic<int> sum{0};
//   testing_util::run_together(4, [&](int t) { sum += t; });  // joins before returning
#pragma once

#include <atomic>
#include <thread>
#include <vector>

namespace mutagrad::testing_util {

// Releases every waiting thread at once (spins: the waits are short).
class StartLine {
 public:
  explicit StartLine(int parties) : waiting_(parties) {}
  void arrive_and_wait() {
    waiting_.fetch_sub(1, std::memory_order_acq_rel);
    while (waiting_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> waiting_;
};

template <typename Body>
void run_together(int threads, Body body) {
  StartLine start(threads);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace mutagrad::testing_util
