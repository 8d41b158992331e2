// The scalar formulas of the element-wise kernels, shared by every backend and callable in
// device code (MG_HOST_DEVICE): integer arithmetic that wraps on overflow (two's complement, as
// PyTorch's kernels behave, without C++'s signed-overflow UB), the NaN-propagating max/min of
// torch.maximum and the max/min reductions, and integer powers. The CPU backend
// (tensor/cpu/pointwise.cc, reduce.cc) and the CUDA kernels (cuda/pointwise.cu) call these same
// functions, which is what makes their integer and comparison results equal bit for bit.
//
//   int64_t s = math::wrapping_add<int64_t>(INT64_MAX, 1);   // INT64_MIN
//   float m = math::max_propagate_nan(1.0f, NAN);             // nan
#pragma once

#include <cmath>
#include <type_traits>

#include "tensor/host_device.h"

namespace mutagrad::math {

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
MG_HOST_DEVICE inline T wrapping_add(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <typename T>
MG_HOST_DEVICE inline T wrapping_sub(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
}
template <typename T>
MG_HOST_DEVICE inline T wrapping_mul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
}

template <typename T>
MG_HOST_DEVICE inline T wrapping_neg(T a) {
  if constexpr (std::is_floating_point_v<T>) {
    return -a;  // keeps the sign of zero: neg(0.0) is -0.0
  } else {
    return wrapping_sub<T>(T(0), a);
  }
}
template <typename T>
MG_HOST_DEVICE inline T wrapping_abs(T a) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::abs(a);  // abs(-0.0) is 0.0
  } else {
    return a < 0 ? wrapping_neg<T>(a) : a;
  }
}

// Branch-free so that loops vectorize: a NaN in either operand wins.
template <typename T>
MG_HOST_DEVICE inline T max_propagate_nan(T a, T b) {
  return (b > a || b != b) ? b : a;
}
template <typename T>
MG_HOST_DEVICE inline T min_propagate_nan(T a, T b) {
  return (b < a || b != b) ? b : a;
}

// How an accumulating scatter combines a destination with a value (IndexPutDescriptor::reduce):
// one functor per op, so a kernel is compiled per op and has no switch in its loop.
struct AddValues {
  template <typename T>
  MG_HOST_DEVICE T operator()(T a, T b) const {
    return wrapping_add<T>(a, b);
  }
};
struct MulValues {
  template <typename T>
  MG_HOST_DEVICE T operator()(T a, T b) const {
    return wrapping_mul<T>(a, b);
  }
};
struct MaxValues {
  template <typename T>
  MG_HOST_DEVICE T operator()(T a, T b) const {
    return max_propagate_nan<T>(a, b);
  }
};
struct MinValues {
  template <typename T>
  MG_HOST_DEVICE T operator()(T a, T b) const {
    return min_propagate_nan<T>(a, b);
  }
};

// ---- Rounding, division and bit formulas (PyTorch's CPU definitions) -------------------------

// -1, 0 or 1 (0 for NaN, as torch 1.13); bool: x.
template <typename T>
MG_HOST_DEVICE inline T sign(T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x;
  } else {
    return static_cast<T>(static_cast<int>(T(0) < x) - static_cast<int>(x < T(0)));
  }
}
template <typename T>
MG_HOST_DEVICE inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  return false;
}
template <typename T>
MG_HOST_DEVICE inline bool is_inf(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isinf(x);
  return false;
}
template <typename T>
MG_HOST_DEVICE inline bool is_finite(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isfinite(x);
  return true;
}

// round(x, decimals): half to even at 10^-decimals (torch scales by 10^|decimals| first).
template <typename T>
MG_HOST_DEVICE inline T round_decimals(T x, int64_t decimals) {
  if (decimals == 0) return std::nearbyint(x);
  const T scale =
      static_cast<T>(std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals)));
  return decimals > 0 ? std::nearbyint(x * scale) / scale : std::nearbyint(x / scale) * scale;
}

// Python's a % b: the result has b's sign. Integer b == 0 is refused before any kernel runs.
template <typename T>
MG_HOST_DEVICE inline T remainder(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T m = std::fmod(a, b);
    if (m != T(0) && ((b < T(0)) != (m < T(0)))) m += b;
    return m;
  } else {
    if (b == T(0) || b == T(-1)) return T(0);  // b == -1: no INT_MIN % -1 overflow
    T m = static_cast<T>(a % b);
    if (m != T(0) && ((b < T(0)) != (m < T(0)))) m = wrapping_add<T>(m, b);
    return m;
  }
}
// C's fmod: the result has a's sign.
template <typename T>
MG_HOST_DEVICE inline T fmod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    if (b == T(0) || b == T(-1)) return T(0);
    return static_cast<T>(a % b);
  }
}
// Python's a // b (torch's div_floor: exact for floats, no double rounding).
template <typename T>
MG_HOST_DEVICE inline T floor_divide(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == T(0)) return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
    if (div == T(0)) return std::copysign(T(0), a / b);
    T floor_div = std::floor(div);
    if (div - floor_div > T(0.5)) floor_div += T(1);
    return floor_div;
  } else {
    if (b == T(0)) return T(0);
    if (b == T(-1)) return wrapping_neg<T>(a);
    T q = static_cast<T>(a / b);
    if (a % b != T(0) && ((a < T(0)) != (b < T(0)))) q = static_cast<T>(q - 1);
    return q;
  }
}
// div(rounding_mode="trunc").
template <typename T>
MG_HOST_DEVICE inline T trunc_divide(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::trunc(a / b);
  } else {
    if (b == T(0)) return T(0);
    if (b == T(-1)) return wrapping_neg<T>(a);
    return static_cast<T>(a / b);
  }
}
// Shifts by a count outside [0, bits): 0 to the left, the sign fill to the right (torch 1.13
// leaves these to the hardware; see docs/python.md).
template <typename T>
MG_HOST_DEVICE inline T shift_left(T a, T b) {
  constexpr int kBits = static_cast<int>(sizeof(T) * 8);
  if (b < T(0) || b >= T(kBits)) return T(0);
  return static_cast<T>(static_cast<WrapType<T>>(a) << static_cast<int>(b));
}
template <typename T>
MG_HOST_DEVICE inline T shift_right(T a, T b) {
  constexpr int kBits = static_cast<int>(sizeof(T) * 8);
  if (b < T(0) || b >= T(kBits)) return a < T(0) ? T(-1) : T(0);
  return static_cast<T>(a >> static_cast<int>(b));
}

// Integer power by squaring; a negative exponent gives 1/base truncated (only +-1 survive).
template <typename T>
MG_HOST_DEVICE inline T int_pow(T base, T exp) {
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

}  // namespace mutagrad::math
