// The random kernels' Philox words in the per-capability builds (vec_kernels.h). vec_kernels_impl.h
// includes this after vec_pointwise_impl.h, inside namespace mutagrad::cpu::MUTAGRAD_VEC_NS {
// namespace { ... } }. Not a header for other files.
//
// Note [Vectorized Philox]
// Every random draw on the CPU computes Philox4x32-10 (tensor/philox.h) once per element, ten
// rounds of two 32 x 32 -> 64-bit products: dropout's mask was a fifth of a small MLP's training
// step (BM_MlpStepModules). Here several counters go through the rounds at once, one counter per
// 64-bit lane: a lane holds one of the counter's four 32-bit words in its low half, and x86's
// unsigned even-lane multiply (pmuludq, 2, 4 or 8 lanes) is exactly the round's product, since it
// reads the low halves only. So the rounds leave the high halves unmasked (they hold a
// product's high word, which no later product reads) and the words are masked once, at the
// end. Integer operations only: the words are the scalar rounds' in every build, for every
// counter, including carries into the counter's high word and its wrap at 2^64
// (vec_kernels_test checks each build against philox4x32_10).
#ifndef MUTAGRAD_VEC_NS
#error "vec_philox_impl.h is included by vec_kernels_impl.h"
#endif

// One 64-bit lane per counter.
typedef uint64_t PhiloxV __attribute__((vector_size(kVecBytes)));
constexpr int kPhiloxLanes = kVecBytes / 8;
// Vectors in flight: the multiplies' latency hidden behind three other vectors' rounds.
constexpr int kPhiloxVecs = 4;
static_assert(kPhiloxBlock % (kPhiloxLanes * kPhiloxVecs) == 0, "a block is whole iterations");

// The low words of a and b multiplied into 64 bits per lane.
inline PhiloxV mul_low_words(PhiloxV a, PhiloxV b) {
#if defined(__AVX512F__)
  return (PhiloxV)_mm512_mul_epu32((__m512i)a, (__m512i)b);
#elif defined(__AVX2__)
  return (PhiloxV)_mm256_mul_epu32((__m256i)a, (__m256i)b);
#elif defined(__SSE2__)
  return (PhiloxV)_mm_mul_epu32((__m128i)a, (__m128i)b);
#else
  return (a & 0xffffffffu) * (b & 0xffffffffu);
#endif
}

void philox(uint64_t counter, uint64_t key, int64_t n, uint32_t* words) {
  constexpr uint64_t kLow = 0xffffffffu;
  PhiloxV lane{};
  for (int l = 0; l < kPhiloxLanes; ++l) lane[l] = static_cast<uint64_t>(l);
  for (int64_t j = 0; j < n; j += kPhiloxLanes * kPhiloxVecs) {
    PhiloxV c0[kPhiloxVecs], c1[kPhiloxVecs], c2[kPhiloxVecs], c3[kPhiloxVecs];
    MUTAGRAD_UNROLL
    for (int u = 0; u < kPhiloxVecs; ++u) {
      // Counter (counter + j + u L + l, 0): wraps at 2^64 as the scalar sum does.
      const PhiloxV c = lane + (counter + static_cast<uint64_t>(j + u * kPhiloxLanes));
      c0[u] = c & kLow;
      c1[u] = c >> 32;
      c2[u] = PhiloxV{};
      c3[u] = PhiloxV{};
    }
    uint64_t k0 = key & kLow, k1 = key >> 32;
    MUTAGRAD_UNROLL
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {  // the key schedule, in 32 bits
        k0 = (k0 + 0x9E3779B9u) & kLow;
        k1 = (k1 + 0xBB67AE85u) & kLow;
      }
      MUTAGRAD_UNROLL
      for (int u = 0; u < kPhiloxVecs; ++u) {
        const PhiloxV p0 = mul_low_words(c0[u], PhiloxV{} + 0xD2511F53u);
        const PhiloxV p1 = mul_low_words(c2[u], PhiloxV{} + 0xCD9E8D57u);
        const PhiloxV n0 = (p1 >> 32) ^ c1[u] ^ k0;
        const PhiloxV n2 = (p0 >> 32) ^ c3[u] ^ k1;
        c1[u] = p1;  // the low word is the next round's; the high one is never multiplied
        c3[u] = p0;
        c0[u] = n0;
        c2[u] = n2;
      }
    }
    MUTAGRAD_UNROLL
    for (int u = 0; u < kPhiloxVecs; ++u) {
      // Words 0-1 and 2-3 of each counter as two little-endian 64-bit halves.
      const PhiloxV lo = (c0[u] & kLow) | (c1[u] << 32);
      const PhiloxV hi = (c2[u] & kLow) | (c3[u] << 32);
      uint32_t* w = words + 4 * (j + u * kPhiloxLanes);
      for (int l = 0; l < kPhiloxLanes; ++l) {
        const uint64_t halves[2] = {lo[l], hi[l]};
        std::memcpy(w + 4 * l, halves, sizeof(halves));
      }
    }
  }
}
