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
#include <cstdint>
#include <limits>
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

// ---- Special functions (float and double; computed in double) ------------------------------
// Each is written once for both backends: the CPU loops and the CUDA functor call these, so
// the host-run build gives the CPU's bits. They use only std:: functions that CUDA also
// provides in device code (log, exp, erf, tan, pow, ...).

// log|Gamma(x)|. glibc's lgamma writes the global `signgam`, a data race between threads:
// the host uses the reentrant lgamma_r (the same values), device code CUDA's lgamma.
template <typename T>
MG_HOST_DEVICE inline T log_gamma(T x) {
#ifdef __CUDA_ARCH__
  return lgamma(x);
#else
  int sign = 0;
  if constexpr (std::is_same_v<T, float>) {
    return ::lgammaf_r(x, &sign);
  } else {
    return ::lgamma_r(x, &sign);
  }
#endif
}

// The inverse of erf on [-1, 1] (NaN outside, +-inf at +-1): a rational first guess (the
// central and tail fits of Pavlis' erfinv, 1996), then two Newton steps on erf(x) = y.
template <typename T>
MG_HOST_DEVICE inline T erfinv(T y) {
  const T ay = y < T(0) ? -y : y;
  if (ay > T(1) || y != y) return std::numeric_limits<T>::quiet_NaN();
  if (ay == T(1)) return std::copysign(std::numeric_limits<T>::infinity(), y);
  T x;
  if (ay <= T(0.7)) {
    const T z = y * y;
    const T num =
        ((T(-0.140543331) * z + T(0.914624893)) * z + T(-1.645349621)) * z + T(0.886226899);
    const T den =
        (((T(0.012229801) * z + T(-0.329097515)) * z + T(1.442710462)) * z + T(-2.118377725)) * z +
        T(1);
    x = y * num / den;
  } else {
    const T z = std::sqrt(-std::log((T(1) - ay) / T(2)));
    const T num =
        ((T(1.641345311) * z + T(3.429567803)) * z + T(-1.624906493)) * z + T(-1.970840454);
    const T den = (T(1.6370678) * z + T(3.5438892)) * z + T(1);
    x = std::copysign(num, y) / den;
  }
  const T two_over_sqrt_pi = T(1.12837916709551257390);
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}

// The digamma function psi(x) = Gamma'(x) / Gamma(x): -inf at +0 (+inf at -0), NaN at the
// negative integers; reflection below 0, the recurrence psi(x) = psi(x + 1) - 1/x up to 10,
// then the asymptotic series in 1/x^2 (error below 1e-17 there).
template <typename T>
MG_HOST_DEVICE inline T digamma(T in) {
  constexpr double kPi = 3.14159265358979323846;
  double x = static_cast<double>(in);
  if (x == 0) return static_cast<T>(std::copysign(std::numeric_limits<double>::infinity(), -x));
  double result = 0;
  if (x < 0) {
    if (x == std::floor(x)) return std::numeric_limits<T>::quiet_NaN();
    // psi(x) = psi(1 - x) - pi / tan(pi x); tan of the fractional part keeps the accuracy.
    const double frac = x - std::trunc(x);
    result = -kPi / std::tan(kPi * frac);
    x = 1 - x;
  }
  if (x != x || x == std::numeric_limits<double>::infinity()) return static_cast<T>(x + result);
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double y = 1 / (x * x);
  const double series =
      y * (1.0 / 12 -
           y * (1.0 / 120 -
                y * (1.0 / 252 -
                     y * (1.0 / 240 - y * (1.0 / 132 - y * (691.0 / 32760 - y * (1.0 / 12)))))));
  return static_cast<T>(result + std::log(x) - 0.5 / x - series);
}

// One Euler-Maclaurin term of hurwitz_zeta: b = B_2j / (2j)!, j2 = 2j - 2.
MG_HOST_DEVICE inline void zeta_tail_term(double b, double s, double j2, double inv_q2,
                                          double& tail, double& rising, double& power) {
  tail += b * rising * power;
  rising *= (s + j2 + 1) * (s + j2 + 2);
  power *= inv_q2;
}

// The Hurwitz zeta function zeta(s, q) = sum_k (q + k)^-s for an integer s >= 2: the first
// terms summed until q + k >= 10, the rest by Euler-Maclaurin (eight Bernoulli terms). +inf at
// q = 0, -1, -2, ... (a pole of a term).
MG_HOST_DEVICE inline double hurwitz_zeta(double s, double q) {
  if (q <= 0 && q == std::floor(q)) return std::numeric_limits<double>::infinity();
  // Summing up from a q below -1e9 would take more than a billion terms (torch's loop runs that
  // long, and hangs further out): NaN there, as for an argument outside the domain.
  if (q < -1e9) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  int k = 0;
  while (k < 10 || q < 10) {  // at least ten terms: the tail's expansion wants a large q
    sum += std::pow(q, -s);
    q += 1;
    ++k;
  }
  // The tail from q: the integral, half the first term, and
  // sum_j B_2j / (2j)! * s (s + 1) ... (s + 2j - 2) * q^(1 - s - 2j) for j = 1..8.
  const double inv_q2 = 1 / (q * q);
  double tail = std::pow(q, 1 - s) / (s - 1) + 0.5 * std::pow(q, -s);
  double rising = s;                   // s (s + 1) ... (s + 2j - 2)
  double power = std::pow(q, -s - 1);  // q^(1 - s - 2j)
  zeta_tail_term(1.0 / 12, s, 0, inv_q2, tail, rising, power);
  zeta_tail_term(-1.0 / 720, s, 2, inv_q2, tail, rising, power);
  zeta_tail_term(1.0 / 30240, s, 4, inv_q2, tail, rising, power);
  zeta_tail_term(-1.0 / 1209600, s, 6, inv_q2, tail, rising, power);
  zeta_tail_term(1.0 / 47900160, s, 8, inv_q2, tail, rising, power);
  zeta_tail_term(-691.0 / 1307674368000.0, s, 10, inv_q2, tail, rising, power);
  zeta_tail_term(1.0 / 74724249600.0, s, 12, inv_q2, tail, rising, power);
  zeta_tail_term(-3617.0 / 10670622842880000.0, s, 14, inv_q2, tail, rising, power);
  return sum + tail;
}

// polygamma(n, x), the n-th derivative of digamma: digamma for n = 0, else
// (-1)^(n+1) n! zeta(n + 1, x). n >= 0 (checked before any kernel runs).
template <typename T>
MG_HOST_DEVICE inline T polygamma(int64_t n, T x) {
  if (n == 0) return digamma<T>(x);
  // n! overflows double from n = 171 on: the loop stops there (n may be 2**40).
  double factorial = 1;
  for (int64_t k = 2; k <= n && factorial <= std::numeric_limits<double>::max(); ++k)
    factorial *= static_cast<double>(k);
  const double sign = n % 2 == 1 ? 1.0 : -1.0;
  return static_cast<T>(sign * factorial *
                        hurwitz_zeta(static_cast<double>(n) + 1, static_cast<double>(x)));
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
