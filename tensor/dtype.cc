#include "tensor/dtype.h"

namespace mutagrad {

const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "bool";
    case ScalarType::Int32:
      return "int32";
    case ScalarType::Int64:
      return "int64";
    case ScalarType::Float32:
      return "float32";
    case ScalarType::Float64:
      return "float64";
  }
  return "unknown";
}

const char* legacy_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "Bool";
    case ScalarType::Int32:
      return "Int";
    case ScalarType::Int64:
      return "Long";
    case ScalarType::Float32:
      return "Float";
    case ScalarType::Float64:
      return "Double";
  }
  return "Unknown";
}

std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << dtype_name(t); }

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  // The enum is ordered along the lattice, which is a chain for these five types.
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

}  // namespace mutagrad
