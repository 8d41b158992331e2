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
