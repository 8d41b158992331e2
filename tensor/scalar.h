// A number that is not a tensor: a Python-like bool, int or float.
//
//   Scalar s = 3;          // integral, s.to<double>() == 3.0
//   Scalar f = 0.5;        // floating
//   ScalarType t = s.type();  // kInt64 / kFloat64 / kBool: its category's widest dtype
#pragma once

#include <cstdint>
#include <limits>
#include <ostream>
#include <type_traits>

#include "tensor/dtype.h"
#include "tensor/host_device.h"

namespace mutagrad {

// Note [Defined value conversions]
// C++ leaves a floating value outside an integer type's range (and nan) undefined when cast.
// Every conversion of one element or one Scalar goes through convert_value: bool is `v != 0`;
// floating -> integer is the cast when the truncated value fits and the type's minimum
// otherwise (what x86's cvtt* instructions, and so PyTorch's CPU kernels, produce). User-facing
// writes of a Scalar are range-checked first (check_scalar_fits), so this fallback is only
// reached by tensor-to-tensor casts, whose out-of-range results PyTorch also leaves
// unspecified.
template <typename To, typename From>
MG_HOST_DEVICE inline To convert_value(From v) {
  if constexpr (is_reduced_float_v<From>) {
    return convert_value<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_reduced_float_v<To>) {
    return To(static_cast<float>(v));  // a double rounds to float first, as c10::Half(double)
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && sizeof(To) < 4) {
    // uint8/int8/int16: truncate to int64, then wrap to the narrow width (PyTorch: -1.5 -> 255
    // as uint8, 300.7 -> 44).
    return static_cast<To>(convert_value<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());  // -2^(bits-1)
    return (v >= lo && v < -lo) ? static_cast<To>(v) : std::numeric_limits<To>::min();
  } else {
    return static_cast<To>(v);
  }
}

class Scalar {
 public:
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : tag_(Tag::Bool) { v_.i = v; }  // NOLINT: implicit by design
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : tag_(Tag::Int) {  // NOLINT: implicit by design
    v_.i = static_cast<int64_t>(v);
  }
  template <typename T, std::enable_if_t<is_floating_type_v<T>, int> = 0>
  Scalar(T v) : tag_(Tag::Double) {  // NOLINT: implicit by design
    v_.d = static_cast<double>(static_cast<std::conditional_t<is_reduced_float_v<T>, float, T>>(v));
  }

  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_integral() const { return tag_ == Tag::Int; }
  bool is_floating_point() const { return tag_ == Tag::Double; }

  // The dtype a tensor made from this value gets: kBool, kInt64 or kFloat64.
  ScalarType type() const {
    return tag_ == Tag::Bool ? kBool : tag_ == Tag::Int ? kInt64 : kFloat64;
  }
  TypeCategory type_category() const { return category(type()); }

  // The value as T (see Note [Defined value conversions]); no range check.
  template <typename T>
  T to() const {
    if (tag_ == Tag::Double) return convert_value<T>(v_.d);
    return convert_value<T>(v_.i);
  }

  // Whether storing the value into a `dtype` element keeps it (up to truncation of a float
  // to an integer, and rounding to float32): false for nan, inf or an out-of-range value
  // into an integer dtype, and a finite value beyond float32's range into float32. Any value
  // fits bool (nonzero is true), as in PyTorch.
  bool fits(ScalarType dtype) const;

  Scalar operator-() const;

 private:
  enum class Tag : int8_t { Bool, Int, Double };
  Tag tag_;
  union {
    int64_t i;
    double d;
  } v_;
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

// Throws ValueError naming `op` when `value` does not fit `dtype` (Scalar::fits); PyTorch's
// "value cannot be converted to type int32_t without overflow". Every op that stores a Scalar
// into a tensor (fill_, masked_fill_, set_item_, full, a scalar operand or bound) calls it
// before writing anything.
void check_scalar_fits(const Scalar& value, ScalarType dtype, const char* op);

}  // namespace mutagrad
