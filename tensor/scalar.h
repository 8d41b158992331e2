// A number that is not a tensor: a Python-like bool, int or float.
//
//   Scalar s = 3;          // integral, s.to<double>() == 3.0
//   Scalar f = 0.5;        // floating
//   ScalarType t = s.type();  // kInt64 / kFloat64 / kBool: its category's widest dtype
#pragma once

#include <cstdint>
#include <ostream>
#include <type_traits>

#include "tensor/dtype.h"

namespace mutagrad {

class Scalar {
 public:
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : tag_(Tag::Bool) { v_.i = v; }  // NOLINT: implicit by design
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : tag_(Tag::Int) {  // NOLINT: implicit by design
    v_.i = static_cast<int64_t>(v);
  }
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : tag_(Tag::Double) {  // NOLINT: implicit by design
    v_.d = static_cast<double>(v);
  }

  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_integral() const { return tag_ == Tag::Int; }
  bool is_floating_point() const { return tag_ == Tag::Double; }

  // The dtype a tensor made from this value gets: kBool, kInt64 or kFloat64.
  ScalarType type() const {
    return tag_ == Tag::Bool ? kBool : tag_ == Tag::Int ? kInt64 : kFloat64;
  }
  TypeCategory type_category() const { return category(type()); }

  template <typename T>
  T to() const {
    if (tag_ == Tag::Double) {
      if constexpr (std::is_same_v<T, bool>) return v_.d != 0.0;
      return static_cast<T>(v_.d);
    }
    if constexpr (std::is_same_v<T, bool>) return v_.i != 0;
    return static_cast<T>(v_.i);
  }

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

}  // namespace mutagrad
