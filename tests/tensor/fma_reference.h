// The reference formulas of Backend::fma for the tests (Note [Torch's fused multiply-adds] in
// tensor/native/fma.h), computed in T with std::fma: torch's add(alpha), addcmul and lerp.
//
//   EXPECT_EQ(got, fma_reference::axpy<float>(x, y, 0.3f));   // x + 0.3 * y, rounded once
#pragma once

#include <cmath>

namespace mutagrad::fma_reference {

// x + alpha * y.
template <typename T>
T axpy(T x, T y, T alpha) {
  return std::fma(alpha, y, x);
}

// x + (value * t1) * t2: value * t1 rounded, then one FMA.
template <typename T>
T addcmul(T x, T t1, T t2, T value) {
  return std::fma(static_cast<T>(value * t1), t2, x);
}

// x + w * (y - x), from x's side for |w| < 0.5 (torch 2.x), else from y's.
template <typename T>
T lerp(T x, T y, T w) {
  const T d = y - x;
  return std::abs(w) < T(0.5) ? std::fma(w, d, x) : std::fma(-d, T(1) - w, y);
}

}  // namespace mutagrad::fma_reference
