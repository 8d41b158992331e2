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

// A finite floating value within +-max (inf and nan are values of every floating dtype).
bool float_fits(double v, double max) { return !std::isfinite(v) || std::abs(v) <= max; }

constexpr double kHalfMax = 65504.0;
constexpr double kBFloat16Max = 3.38953138925153547590470800371487866880e+38;

}  // namespace

bool Scalar::fits(ScalarType dtype) const {
  const bool d = tag_ == Tag::Double;
  switch (dtype) {
    case ScalarType::Bool:
    case ScalarType::Float64:
      return true;
    case ScalarType::Float32:
      return !d || float_fits(v_.d, static_cast<double>(std::numeric_limits<float>::max()));
    case ScalarType::Float16:
      return !d ? int_fits<int32_t>(v_.i) && std::abs(v_.i) <= 65504 : float_fits(v_.d, kHalfMax);
    case ScalarType::BFloat16:
      return !d || float_fits(v_.d, kBFloat16Max);
    case ScalarType::UInt8:
      // PyTorch also takes -255..-1 into uint8 (they wrap: -1 is 255).
      return d ? v_.d > -256.0 && v_.d <= 255.0 : v_.i >= -255 && v_.i <= 255;
    case ScalarType::Int8:
      return d ? double_fits_integer<int8_t>(v_.d) : int_fits<int8_t>(v_.i);
    case ScalarType::Int16:
      return d ? double_fits_integer<int16_t>(v_.d) : int_fits<int16_t>(v_.i);
    case ScalarType::Int32:
      return d ? double_fits_integer<int32_t>(v_.d) : int_fits<int32_t>(v_.i);
    case ScalarType::Int64:
      return d ? double_fits_integer<int64_t>(v_.d) : true;
  }
  return false;
}

namespace {
// The values `dtype` holds, for check_scalar_fits's message.
std::string range_of(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::UInt8:
      return "[0, 255] (and -255..-1, which wrap)";
    case ScalarType::Int8:
      return "[-128, 127]";
    case ScalarType::Int16:
      return "[-32768, 32767]";
    case ScalarType::Int32:
      return str("[", std::numeric_limits<int32_t>::min(), ", ",
                 std::numeric_limits<int32_t>::max(), "]");
    case ScalarType::Int64:
      return str("[", std::numeric_limits<int64_t>::min(), ", ",
                 std::numeric_limits<int64_t>::max(), "]");
    case ScalarType::Float16:
      return "[-65504, 65504] and +-inf, nan";
    case ScalarType::BFloat16:
      return str("[", -kBFloat16Max, ", ", kBFloat16Max, "] and +-inf, nan");
    default:
      return str("[", -std::numeric_limits<float>::max(), ", ", std::numeric_limits<float>::max(),
                 "] and +-inf, nan");
  }
}
}  // namespace

void check_scalar_fits(const Scalar& value, ScalarType dtype, const char* op) {
  if (value.fits(dtype)) return;
  throw ValueError(str(op, "(): value ", value, " cannot be converted to type ", dtype_name(dtype),
                       " without overflow (", dtype_name(dtype), " holds ", range_of(dtype),
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
