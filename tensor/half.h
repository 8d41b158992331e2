// The 16-bit floating element types: Half (IEEE 754 binary16, torch.float16) and BFloat16
// (the upper half of a float32, torch.bfloat16). Storage types: a value converts to float for
// arithmetic and back with round-to-nearest-even, as c10::Half and c10::BFloat16 do, so
// `Half(a) + Half(b)` is a float and storing it rounds once. See Note [Reduced dtypes] in
// tensor/dtype.h for how the kernels use them.
//
//   Half h = 1.5f;                 // exactly representable
//   float f = h;                   // 1.5f
//   Half big = 70000.0f;           // inf: beyond float16's largest finite value (65504)
//   BFloat16 b = 3.14159f;         // 3.140625 (8 significant bits)
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tensor/host_device.h"

namespace mutagrad {
namespace half_detail {

MG_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}
MG_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

// `v >> shift` rounded to nearest, ties to even (shift in [1, 31]).
MG_HOST_DEVICE inline uint32_t shift_round_even(uint32_t v, int shift) {
  const uint32_t q = v >> shift;
  const uint32_t rem = v & ((uint32_t{1} << shift) - 1);
  const uint32_t halfway = uint32_t{1} << (shift - 1);
  return q + ((rem > halfway || (rem == halfway && (q & 1u))) ? 1u : 0u);
}

MG_HOST_DEVICE inline uint16_t float_to_half_bits(float value) {
  const uint32_t f = float_bits(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t mag = f & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (mag < 0x38800000u) {  // below 2^-14: a subnormal half (units of 2^-24) or zero
    if (mag <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25 rounds to 0
    const int exponent = static_cast<int>(mag >> 23);
    const uint32_t significand = (mag & 0x7fffffu) | 0x800000u;
    return static_cast<uint16_t>(sign | shift_round_even(significand, 126 - exponent));
  }
  // Normal: rebias the exponent (127 -> 15), then drop 13 significand bits; a carry out of
  // the significand correctly bumps the exponent.
  return static_cast<uint16_t>(sign | shift_round_even(mag - 0x38000000u, 13));
}

MG_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t significand = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (significand << 13));
  if (exponent == 0) {
    const float magnitude = static_cast<float>(significand) * 5.9604644775390625e-08f;  // 2^-24
    return sign != 0 ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112) << 23) | (significand << 13));
}

MG_HOST_DEVICE inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t f = float_bits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);  // nan
  return static_cast<uint16_t>(shift_round_even(f, 16));
}

MG_HOST_DEVICE inline float bfloat16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

}  // namespace half_detail

struct Half {
  uint16_t bits;

  Half() = default;
  MG_HOST_DEVICE Half(float v) : bits(half_detail::float_to_half_bits(v)) {}  // NOLINT
  MG_HOST_DEVICE operator float() const {                                     // NOLINT
    return half_detail::half_bits_to_float(bits);
  }
  MG_HOST_DEVICE static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits;

  BFloat16() = default;
  MG_HOST_DEVICE BFloat16(float v) : bits(half_detail::float_to_bfloat16_bits(v)) {}  // NOLINT
  MG_HOST_DEVICE operator float() const {                                             // NOLINT
    return half_detail::bfloat16_bits_to_float(bits);
  }
  MG_HOST_DEVICE static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit element types");

// Floating element types, the 16-bit ones included (std::is_floating_point is false for them).
template <typename T>
constexpr bool is_floating_type_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <typename T>
constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

}  // namespace mutagrad
