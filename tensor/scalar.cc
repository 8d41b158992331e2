#include "tensor/scalar.h"

namespace mutagrad {

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
