#include "tensor/scalar.h"

#include <cmath>

#include "tensor/error.h"

namespace mutagrad {

namespace {

template <typename T>
bool double_fits_integer(double v) {
  // The truncated value must lie in [min, max]: (min - 1, max + 1) before truncation.
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());  // exact
  return v > lo - 1.0 && v < -lo;
}

template <typename T>
bool int_fits(int64_t v) {
  return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
}

}  // namespace

bool Scalar::fits(ScalarType dtype) const {
  switch (dtype) {
    case ScalarType::Bool:
    case ScalarType::Float64:
      return true;
    case ScalarType::Float32:
      return tag_ != Tag::Double || !std::isfinite(v_.d) ||
             std::abs(v_.d) <= static_cast<double>(std::numeric_limits<float>::max());
    case ScalarType::Int32:
      return tag_ == Tag::Double ? double_fits_integer<int32_t>(v_.d) : int_fits<int32_t>(v_.i);
    case ScalarType::Int64:
      return tag_ == Tag::Double ? double_fits_integer<int64_t>(v_.d) : true;
  }
  return false;
}

void check_scalar_fits(const Scalar& value, ScalarType dtype, const char* op) {
  if (value.fits(dtype)) return;
  std::string range;
  switch (dtype) {
    case ScalarType::Int32:
      range = str("[", std::numeric_limits<int32_t>::min(), ", ",
                  std::numeric_limits<int32_t>::max(), "]");
      break;
    case ScalarType::Int64:
      range = str("[", std::numeric_limits<int64_t>::min(), ", ",
                  std::numeric_limits<int64_t>::max(), "]");
      break;
    default:
      range = str("[", -std::numeric_limits<float>::max(), ", ", std::numeric_limits<float>::max(),
                  "] and +-inf, nan");
      break;
  }
  throw ValueError(str(op, "(): value ", value, " cannot be converted to type ", dtype_name(dtype),
                       " without overflow (", dtype_name(dtype), " holds ", range,
                       "); pass a value in that range, or convert the tensor to a dtype that "
                       "holds it first"));
}

Scalar Scalar::operator-() const {
  if (tag_ == Tag::Double) return Scalar(-v_.d);
  return Scalar(-v_.i);  // -True is -1, as in Python
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to<bool>() ? "True" : "False");
  if (s.is_integral()) return os << s.to<int64_t>();
  return os << s.to<double>();
}

}  // namespace mutagrad
