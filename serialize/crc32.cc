// CRC-32 with carry-less multiplication (Note [Carry-less CRC-32] in crc32.h).
#include "serialize/crc32.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mutagrad {
namespace serialize {
namespace {

uint32_t crc32_zlib(uint32_t crc, const unsigned char* p, size_t n) {
  while (n > 0) {  // zlib's length is a uInt
    size_t chunk = std::min<size_t>(n, UINT_MAX);
    crc = static_cast<uint32_t>(::crc32(crc, p, static_cast<uInt>(chunk)));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

#if defined(__x86_64__)

// The folding constants for P = 0x104C11DB7, bit-reflected (Gopal et al., and every PCLMUL CRC
// of this polynomial): k1, k2 fold 512 bits; k3, k4 fold 128 bits; k5 folds 96 to 64 bits;
// P' and mu are the Barrett reduction's polynomial and quotient.
alignas(16) const uint64_t kFold512[2] = {0x0154442bd4, 0x01c6e41596};
alignas(16) const uint64_t kFold128[2] = {0x01751997d0, 0x00ccaa009e};
alignas(16) const uint64_t kFold64[2] = {0x0163cd6124, 0};
alignas(16) const uint64_t kBarrett[2] = {0x01db710641, 0x01f7011641};

#define MUTAGRAD_CLMUL __attribute__((target("pclmul,sse4.1")))

MUTAGRAD_CLMUL inline __m128i load(const unsigned char* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}

// x folded forward by the constant pair k, plus the next data d.
MUTAGRAD_CLMUL inline __m128i fold128(__m128i x, __m128i k, __m128i d) {
  __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), d);
}

// The CRC register (pre-inverted, zlib's internal state) after `n` bytes; n >= 64, n % 16 == 0.
MUTAGRAD_CLMUL uint32_t fold(uint32_t state, const unsigned char* p, size_t n) {
  __m128i x1 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(state)));
  __m128i x2 = load(p + 16), x3 = load(p + 32), x4 = load(p + 48);
  p += 64;
  n -= 64;
  __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(kFold512));
  for (; n >= 64; p += 64, n -= 64) {
    x1 = fold128(x1, k, load(p));
    x2 = fold128(x2, k, load(p + 16));
    x3 = fold128(x3, k, load(p + 32));
    x4 = fold128(x4, k, load(p + 48));
  }
  k = _mm_load_si128(reinterpret_cast<const __m128i*>(kFold128));
  x1 = fold128(x1, k, x2);
  x1 = fold128(x1, k, x3);
  x1 = fold128(x1, k, x4);
  for (; n >= 16; p += 16, n -= 16) x1 = fold128(x1, k, load(p));
  // 128 -> 64 bits.
  const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
  __m128i x2b = _mm_clmulepi64_si128(x1, k, 0x10);
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2b);
  k = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(kFold64));
  x2b = _mm_srli_si128(x1, 4);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, low32), k, 0x00), x2b);
  // Barrett reduction to 32 bits.
  k = _mm_load_si128(reinterpret_cast<const __m128i*>(kBarrett));
  x2b = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, low32), k, 0x10), low32);
  x2b = _mm_clmulepi64_si128(x2b, k, 0x00);
  x1 = _mm_xor_si128(x1, x2b);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

bool has_clmul() {
  static const bool has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return has;
}

#undef MUTAGRAD_CLMUL

#endif

}  // namespace

bool crc32_is_accelerated() {
#if defined(__x86_64__)
  return has_clmul();
#else
  return false;
#endif
}

uint32_t crc32(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (n >= 64 && has_clmul()) {
    size_t body = n & ~size_t{15};
    crc = ~fold(~crc, p, body);
    p += body;
    n -= body;
  }
#endif
  return crc32_zlib(crc, p, n);
}

}  // namespace serialize
}  // namespace mutagrad
