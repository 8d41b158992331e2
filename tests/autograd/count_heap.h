// Counts the heap allocations and frees of a test binary by replacing the global operator new
// and delete (malloc and free underneath). Include it in one source file of the binary only: it
// defines those functions.
//
//   const int64_t before = testing_util::heap_news();
//   x.add_(1.0);
//   EXPECT_EQ(testing_util::heap_news() - before, 0);
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

// The replacement pairs malloc with free on purpose; GCC's -Wmismatched-new-delete (seen at -O1,
// the asan build) cannot tell that they are this file's own new and delete.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace mutagrad::testing_util {

inline std::atomic<int64_t> g_heap_news{0};
inline std::atomic<int64_t> g_heap_deletes{0};

// operator new calls so far.
inline int64_t heap_news() { return g_heap_news.load(std::memory_order_relaxed); }
// operator delete calls of a non-null pointer so far.
inline int64_t heap_deletes() { return g_heap_deletes.load(std::memory_order_relaxed); }

}  // namespace mutagrad::testing_util

void* operator new(std::size_t n) {
  mutagrad::testing_util::g_heap_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  if (p != nullptr) mutagrad::testing_util::g_heap_deletes.fetch_add(1, std::memory_order_relaxed);
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
