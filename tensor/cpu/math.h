// Scalar math shared by the CPU kernels: integer arithmetic that wraps on overflow (two's
// complement, as PyTorch's kernels behave, without C++'s signed-overflow UB) and the
// NaN-propagating max/min of torch.maximum and the max/min reductions.
//
//   int64_t s = wrapping_add<int64_t>(INT64_MAX, 1);   // INT64_MIN
//   float m = max_propagate_nan(1.0f, NAN);             // nan
#pragma once

#include <cmath>
#include <type_traits>

namespace mutagrad::cpu {

// The type integer arithmetic is done in: unsigned for signed integers (wraps), else T.
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
inline T wrapping_add(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <typename T>
inline T wrapping_sub(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
}
template <typename T>
inline T wrapping_mul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
}

template <typename T>
inline T wrapping_neg(T a) {
  if constexpr (std::is_floating_point_v<T>) {
    return -a;  // keeps the sign of zero: neg(0.0) is -0.0
  } else {
    return wrapping_sub<T>(T(0), a);
  }
}
template <typename T>
inline T wrapping_abs(T a) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::abs(a);  // abs(-0.0) is 0.0
  } else {
    return a < 0 ? wrapping_neg<T>(a) : a;
  }
}

// Branch-free so that loops vectorize: a NaN in either operand wins.
template <typename T>
inline T max_propagate_nan(T a, T b) {
  return (b > a || b != b) ? b : a;
}
template <typename T>
inline T min_propagate_nan(T a, T b) {
  return (b < a || b != b) ? b : a;
}

}  // namespace mutagrad::cpu
