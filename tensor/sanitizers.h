// The sanitizer builds as code sees them: MUTAGRAD_ASAN is defined under AddressSanitizer (GCC's
// __SANITIZE_ADDRESS__, clang's __has_feature), and the poisoning calls are no-ops without it.
//
//   asan_poison(block, size);    // a block held in a cache: any access now fails under ASan
//   asan_unpoison(block, size);  // handed out again
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define MUTAGRAD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MUTAGRAD_ASAN 1
#endif
#endif
#ifdef MUTAGRAD_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace mutagrad {

inline void asan_poison(const void* p, size_t n) {
#ifdef MUTAGRAD_ASAN
  ASAN_POISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}

inline void asan_unpoison(const void* p, size_t n) {
#ifdef MUTAGRAD_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}

}  // namespace mutagrad
