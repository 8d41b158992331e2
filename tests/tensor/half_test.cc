// Half and BFloat16 conversions (tensor/half.h) against independent oracles: the compiler's
// _Float16 (IEEE binary16 with hardware-or-libgcc round-to-nearest-even) for Half, and a
// frexp/nearbyint rounding to 8 significant bits for BFloat16.
#include "tensor/half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

#ifndef __FLT16_MAX__
#error "half_test needs the compiler's _Float16 as its oracle (GCC >= 12 on x86-64)"
#endif

namespace mutagrad {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
uint16_t bits_of(_Float16 h) {
  uint16_t u;
  std::memcpy(&u, &h, sizeof(u));
  return u;
}

// BFloat16's value of a finite float: the nearest float with 8 significant bits (ties to even),
// inf beyond the largest finite bfloat16.
float bfloat16_oracle(float f) {
  if (f == 0.0f || !std::isfinite(f)) return f;
  int e = 0;
  std::frexp(static_cast<double>(f), &e);  // f = m * 2^e, 0.5 <= |m| < 1
  // Subnormal floats keep their 16 - 9 = 7 stored bits counted from 2^-133, i.e. a fixed step.
  const int step_exp = std::max(e - 8, -133);
  const double q = std::nearbyint(std::ldexp(static_cast<double>(f), -step_exp));  // ties even
  const double r = std::ldexp(q, step_exp);
  if (std::abs(r) >= 0x1p128) return std::copysign(std::numeric_limits<float>::infinity(), f);
  return static_cast<float>(r);
}

// Float bit patterns: every 2^k-th pattern plus its neighbours, which crosses every exponent,
// the subnormals, the rounding ties and the edges of both formats.
template <typename Fn>
void for_sampled_floats(Fn&& fn) {
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4099) {  // a prime stride: every low-bit pattern
    for (uint32_t d : {0u, 1u, 0x1000u, 0x0fffu, 0x8000u, 0x7fffu}) {
      fn(float_of(static_cast<uint32_t>(u) ^ d));
    }
  }
}

TEST(Half, EveryHalfConvertsToTheSameFloatAsFloat16) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    _Float16 h;
    const uint16_t b16 = static_cast<uint16_t>(b);
    std::memcpy(&h, &b16, sizeof(h));
    const float want = static_cast<float>(h);
    const float got = Half::from_bits(b16);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
    } else {
      ASSERT_EQ(bits_of(got), bits_of(want)) << std::hex << b;
    }
  }
}

TEST(Half, FloatsRoundToNearestEvenAsFloat16) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  int64_t checked = 0;
  for_sampled_floats([&](float f) {
    const _Float16 want = static_cast<_Float16>(f);
    const Half got(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(static_cast<float>(got))) << f;
      ASSERT_EQ(got.bits & 0x8000u, bits_of(f) >> 16 & 0x8000u) << "nan keeps its sign";
    } else {
      ASSERT_EQ(got.bits, bits_of(want)) << std::hexfloat << f;
    }
    ++checked;
  });
  EXPECT_GT(checked, 6'000'000);
  // Hand-derived edges: the largest finite value, the first value that rounds to inf, the
  // smallest subnormal and the tie below it.
  EXPECT_EQ(Half(65504.0f).bits, 0x7bffu);
  EXPECT_EQ(Half(65519.996f).bits, 0x7bffu);
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00u);
  EXPECT_EQ(Half(0x1p-24f).bits, 0x0001u);
  EXPECT_EQ(Half(0x1p-25f).bits, 0x0000u);    // a tie: to even (zero)
  EXPECT_EQ(Half(0x1.8p-24f).bits, 0x0002u);  // a tie: to even (2)
  EXPECT_EQ(Half(-0.0f).bits, 0x8000u);
}

TEST(BFloat16, FloatsRoundToNearestEvenAsTheOracle) {
  for_sampled_floats([&](float f) {
    const BFloat16 got(f);
    const float back = got;
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(back)) << std::hex << bits_of(f);
      return;
    }
    const float want = bfloat16_oracle(f);
    ASSERT_EQ(bits_of(back), bits_of(want)) << std::hexfloat << f;
  });
  EXPECT_EQ(BFloat16(3.14159f).bits, 0x4049u);                           // 3.140625
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::max()).bits, 0x7f80u);  // rounds to inf
}

TEST(BFloat16, EveryBFloat16IsAFloatWithZeroLowBits) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = BFloat16::from_bits(static_cast<uint16_t>(b));
    ASSERT_EQ(bits_of(f), b << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(BFloat16(f).bits, b) << "round trip";
    }
  }
}

}  // namespace
}  // namespace mutagrad
