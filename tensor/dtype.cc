#include "tensor/dtype.h"

#include <atomic>

#include "tensor/error.h"

namespace mutagrad {
namespace {
std::atomic<ScalarType>& default_dtype_slot() {
  static std::atomic<ScalarType> slot{ScalarType::Float32};
  return slot;
}
}  // namespace

ScalarType default_dtype() { return default_dtype_slot().load(std::memory_order_relaxed); }

void set_default_dtype(ScalarType t) {
  if (!is_floating_point(t)) {
    throw DTypeError(
        str("set_default_dtype(): only floating-point types are supported as the "
            "default type, got ",
            dtype_name(t)));
  }
  default_dtype_slot().store(t, std::memory_order_relaxed);
}

const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "bool";
    case ScalarType::UInt8:
      return "uint8";
    case ScalarType::Int8:
      return "int8";
    case ScalarType::Int16:
      return "int16";
    case ScalarType::Int32:
      return "int32";
    case ScalarType::Int64:
      return "int64";
    case ScalarType::Float16:
      return "float16";
    case ScalarType::BFloat16:
      return "bfloat16";
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
    case ScalarType::UInt8:
      return "Byte";
    case ScalarType::Int8:
      return "Char";
    case ScalarType::Int16:
      return "Short";
    case ScalarType::Int32:
      return "Int";
    case ScalarType::Int64:
      return "Long";
    case ScalarType::Float16:
      return "Half";
    case ScalarType::BFloat16:
      return "BFloat16";
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
  // The enum follows the lattice; its two forks join one step above them.
  auto fork = [&](ScalarType x, ScalarType y) { return (a == x && b == y) || (a == y && b == x); };
  if (fork(kUInt8, kInt8)) return kInt16;
  if (fork(kFloat16, kBFloat16)) return kFloat32;
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

}  // namespace mutagrad
