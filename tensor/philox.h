// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator, four 32-bit words from a 128-bit counter and a 64-bit key. Every
// Generator's numbers, on every device (Note [Counter-based generators] in tensor/generator.h).
//
//   Philox4 r = philox4x32_10(offset + i, 0, seed);     // r.w[0..3]
//   double u = uniform53(r.w[0], r.w[1]);                // [0, 1)
#pragma once

#include <cstdint>

#include "tensor/host_device.h"

namespace mutagrad {

struct Philox4 {
  uint32_t w[4];
};

MG_HOST_DEVICE inline Philox4 philox4x32_10(uint64_t counter_lo, uint64_t counter_hi,
                                            uint64_t key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// 64 bits from two words.
MG_HOST_DEVICE inline uint64_t join64(uint32_t hi, uint32_t lo) {
  return static_cast<uint64_t>(hi) << 32 | lo;
}

// Uniform in [0, 1) with 53 random bits (double) or 24 (float): exactly representable, so the
// value never rounds up to 1.
MG_HOST_DEVICE inline double uniform53(uint32_t hi, uint32_t lo) {
  return static_cast<double>(join64(hi, lo) >> 11) * 0x1.0p-53;
}
MG_HOST_DEVICE inline float uniform24(uint32_t w) {
  return static_cast<float>(w >> 8) * 0x1.0p-24f;
}

}  // namespace mutagrad
