// Scalar math of the CUDA kernels, callable on the host and the device: two's-complement
// integer arithmetic, NaN-propagating max/min, integer powers and the defined value
// conversions. The same formulas as tensor/cpu/math.h, tensor/cpu/pointwise.cc (int_pow) and
// convert_value (tensor/scalar.h).
//
//   int64_t s = dmath::wrapping_add<int64_t>(INT64_MAX, 1);   // INT64_MIN
//   int32_t i = dmath::convert<int32_t>(1e10);                 // INT32_MIN, as on the CPU
//
// Note [Bitwise equal to the CPU backend]
// Every elementwise CUDA kernel computes each element with the CPU backend's scalar formula,
// so the two backends agree bit for bit where the formula is exactly rounded: integer ops,
// comparisons, conversions, + - * / and sqrt (IEEE in both; nvcc builds with --fmad=false so
// no a*b+c becomes an FMA), abs, neg, relu, clamp, max/min. The transcendental functions (exp,
// log, sin, cos, tanh, sigmoid, pow with a non-special exponent) are std:: per element here:
// in the host-run build that is glibc, the same as the CPU backend's scalar path, while the
// CPU backend's contiguous runs use Eigen's SIMD versions (within a few ulps; Note
// [Vectorized transcendental edges] in tensor/cpu/pointwise.cc); on a GPU they are CUDA's
// libdevice functions (within CUDA's documented ulp bounds). The conformance test checks the
// first group bitwise against the CPU and the second bitwise against std:: per element.
// These are copies of the CPU formulas, not shared code, because tensor/cpu's functions are
// host-only; the conformance test is what keeps them equal.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "cuda/kernel_util.h"

namespace mutagrad::cuda::dmath {

template <typename T, bool = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct WrapTypeOf {
  using type = T;
};
template <typename T>
struct WrapTypeOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using WrapType = typename WrapTypeOf<T>::type;

template <typename T>
MG_HOST_DEVICE T wrapping_add(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <typename T>
MG_HOST_DEVICE T wrapping_sub(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
}
template <typename T>
MG_HOST_DEVICE T wrapping_mul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
}
template <typename T>
MG_HOST_DEVICE T wrapping_neg(T a) {
  if constexpr (std::is_floating_point_v<T>) {
    return -a;
  } else {
    return wrapping_sub<T>(T(0), a);
  }
}
template <typename T>
MG_HOST_DEVICE T wrapping_abs(T a) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::abs(a);
  } else {
    return a < 0 ? wrapping_neg<T>(a) : a;
  }
}

template <typename T>
MG_HOST_DEVICE T max_propagate_nan(T a, T b) {
  return (b > a || b != b) ? b : a;
}
template <typename T>
MG_HOST_DEVICE T min_propagate_nan(T a, T b) {
  return (b < a || b != b) ? b : a;
}

// Integer power by squaring; a negative exponent gives 1/base truncated (only +-1 survive).
template <typename T>
MG_HOST_DEVICE T int_pow(T base, T exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp % 2 == 0) ? 1 : -1;
    return 0;
  }
  T result = 1;
  while (exp) {
    if (exp & 1) result = wrapping_mul<T>(result, base);
    exp = static_cast<T>(exp >> 1);
    base = wrapping_mul<T>(base, base);
  }
  return result;
}

// convert_value of tensor/scalar.h: see Note [Defined value conversions] there.
template <typename To, typename From>
MG_HOST_DEVICE To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    return (v >= lo && v < -lo) ? static_cast<To>(v) : std::numeric_limits<To>::min();
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace mutagrad::cuda::dmath
