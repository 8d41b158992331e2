// One random number per element, from a counter-based generator: what every backend's random
// kernel computes (the CPU's tensor/cpu/random.cc, the CUDA device's cuda/misc.cu), so that a
// seed gives the same bits on every device and for any thread count.
//
//   RandomParams p{RandomDist::kNormal, seed, offset, /*a=*/0.0, /*b=*/1.0};
//   out[i] = random_value<float>(p, i);   // element i from Philox counter offset + i
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tensor/host_device.h"
#include "tensor/philox.h"

namespace mutagrad {

enum class RandomDist : int8_t { kUniform, kNormal, kInteger, kExponential, kBernoulli };

// Note [Random draws]
// Element i (row-major) of a draw takes the four words of Philox counter (offset + i, 0) under
// key `seed`, and nothing else: no element depends on another, on the layout of the work or on
// the device. Each distribution is one formula of those words, computed in double and rounded
// once to the result's dtype:
// - kUniform: u = the top `uniform_bits` bits of words 0-1 as a fraction in [0, 1) (exact in
//   the result dtype when uniform_bits is its significand: 24 float32, 53 float64, 11 float16,
//   8 bfloat16, so rand() never rounds up to 1); the value is a + (b - a) u, and the largest
//   value below b when rounding reached b.
// - kNormal: Box-Muller on u1 = 1 - u(words 0-1) in (0, 1] and u2 = u(words 2-3), the cosine
//   branch: a + b sqrt(-2 log u1) cos(2 pi u2) (mean a, std b).
// - kExponential: (0 - log(1 - u)) / a (rate a; +inf for a = 0, as torch 1.13).
// - kBernoulli: 1 when u < a (the probability), else 0.
// - kInteger: low + (words 0-1 mod range) in int64 arithmetic; range 0 stands for 2**64, all
//   64 bits (torch's random_(-2**63, None) on int64).
// On a GPU, log/cos/sqrt may differ from the host's libm by an ulp; the host-run device and the
// CPU give the same bits.
struct RandomParams {
  RandomDist dist = RandomDist::kUniform;
  uint64_t seed = 0;
  uint64_t offset = 0;
  double a = 0.0;  // kUniform: from; kNormal: mean; kExponential: lambda; kBernoulli: p
  double b = 1.0;  // kUniform: to; kNormal: std
  int64_t low = 0;
  uint64_t range = 0;
  int uniform_bits = 53;
};

// The top `uniform_bits` of `bits` as a fraction in [0, 1): ldexp(top, -uniform_bits), as a
// multiplication by that power of two built from its bits (exact, and no call to libm's scalbn
// per element).
MG_HOST_DEVICE inline double random_fraction(uint64_t bits, int uniform_bits) {
  const uint64_t scale_bits = static_cast<uint64_t>(1023 - uniform_bits) << 52;
  double scale;
  memcpy(&scale, &scale_bits, sizeof(scale));
  return static_cast<double>(bits >> (64 - uniform_bits)) * scale;
}

// random_value for distribution D, known at compile time (a kernel's loop over elements then
// has no switch).
template <typename T, RandomDist D>
MG_HOST_DEVICE T random_value_as(const RandomParams& p, int64_t i);

// The value of distribution D from element i's Philox words r (random_value_as's second half:
// a kernel may compute several elements' words together first).
template <typename T, RandomDist D>
MG_HOST_DEVICE T random_from_words(const RandomParams& p, const Philox4& r) {
  const uint64_t bits = join64(r.w[0], r.w[1]);
  double v = 0.0;
  if constexpr (D == RandomDist::kUniform) {
    const T x = static_cast<T>(p.a + (p.b - p.a) * random_fraction(bits, p.uniform_bits));
    if constexpr (std::is_floating_point_v<T>) {
      if (p.a < p.b && !(x < static_cast<T>(p.b))) {
        return std::nextafter(static_cast<T>(p.b), static_cast<T>(p.a));
      }
    }
    return x;
  } else if constexpr (D == RandomDist::kNormal) {
    const double u1 = 1.0 - random_fraction(bits, 53);
    const double u2 = random_fraction(join64(r.w[2], r.w[3]), 53);
    v = p.a +
        p.b * (std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925286766559 * u2));
  } else if constexpr (D == RandomDist::kExponential) {
    const double e = 0.0 - std::log(1.0 - random_fraction(bits, 53));  // +0 for u = 0
    v = p.a == 0.0 ? std::numeric_limits<double>::infinity() : e / p.a;
  } else if constexpr (D == RandomDist::kBernoulli) {
    v = random_fraction(bits, 53) < p.a ? 1.0 : 0.0;
  } else {
    const uint64_t k = p.range == 0 ? bits : bits % p.range;
    const int64_t n = static_cast<int64_t>(static_cast<uint64_t>(p.low) + k);
    if constexpr (std::is_same_v<T, bool>) {
      return n != 0;
    } else {
      return static_cast<T>(n);
    }
  }
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else {
    return static_cast<T>(v);
  }
}

template <typename T, RandomDist D>
MG_HOST_DEVICE T random_value_as(const RandomParams& p, int64_t i) {
  return random_from_words<T, D>(p, philox4x32_10(p.offset + static_cast<uint64_t>(i), 0, p.seed));
}

// Element i of a draw of p.dist.
template <typename T>
MG_HOST_DEVICE T random_value(const RandomParams& p, int64_t i) {
  switch (p.dist) {
    case RandomDist::kNormal:
      return random_value_as<T, RandomDist::kNormal>(p, i);
    case RandomDist::kExponential:
      return random_value_as<T, RandomDist::kExponential>(p, i);
    case RandomDist::kBernoulli:
      return random_value_as<T, RandomDist::kBernoulli>(p, i);
    case RandomDist::kInteger:
      return random_value_as<T, RandomDist::kInteger>(p, i);
    case RandomDist::kUniform:
      break;
  }
  return random_value_as<T, RandomDist::kUniform>(p, i);
}

}  // namespace mutagrad
