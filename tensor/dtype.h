// Element types, their promotion rules, and dtype dispatch.
//
//   ScalarType t = promote_types(kInt64, kFloat32);          // kFloat32
//   dispatch_dtype(t, [&](auto tag) {
//     using T = typename decltype(tag)::type;                 // float
//     ...
//   });
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "tensor/error.h"

namespace mutagrad {

enum class ScalarType : int8_t { Bool, Int32, Int64, Float32, Float64 };

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kInt32 = ScalarType::Int32;
constexpr ScalarType kInt = ScalarType::Int32;
constexpr ScalarType kInt64 = ScalarType::Int64;
constexpr ScalarType kLong = ScalarType::Int64;
constexpr ScalarType kFloat32 = ScalarType::Float32;
constexpr ScalarType kFloat = ScalarType::Float32;
constexpr ScalarType kFloat64 = ScalarType::Float64;
constexpr ScalarType kDouble = ScalarType::Float64;

constexpr int kNumScalarTypes = 5;

// Bytes per element.
constexpr int64_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return 1;
    case ScalarType::Int32:
    case ScalarType::Float32:
      return 4;
    case ScalarType::Int64:
    case ScalarType::Float64:
      return 8;
  }
  return 0;
}

constexpr bool is_floating_point(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64;
}
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == ScalarType::Int32 || t == ScalarType::Int64 ||
         (include_bool && t == ScalarType::Bool);
}

// The default floating dtype (PyTorch's get_default_dtype / set_default_dtype): what floating
// factories without a dtype, Python floats, integer true division and the float-only ops of
// integers produce. float32 unless set; only float32 and float64 can be set (DTypeError
// otherwise). Process-wide, like torch's.
ScalarType default_dtype();
void set_default_dtype(ScalarType t);

// "float32", "int64", ... as PyTorch prints them after "torch.".
const char* dtype_name(ScalarType t);
// "Float", "Long", ... as in PyTorch's legacy type names ("torch.FloatTensor").
const char* legacy_type_name(ScalarType t);
std::ostream& operator<<(std::ostream& os, ScalarType t);

// PyTorch's promotion lattice for two tensors of the same priority:
// bool < int32 < int64 < float32 < float64, except that int64 with float32 gives float32.
ScalarType promote_types(ScalarType a, ScalarType b);

// The category of a value for promotion: a higher category wins over a lower one,
// within a category a dimensioned tensor wins over a 0-dim tensor or a Python scalar.
enum class TypeCategory : int8_t { Bool = 0, Integral = 1, Floating = 2 };
constexpr TypeCategory category(ScalarType t) {
  return is_floating_point(t)    ? TypeCategory::Floating
         : t == ScalarType::Bool ? TypeCategory::Bool
                                 : TypeCategory::Integral;
}

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
constexpr ScalarType scalar_type_of();
template <>
constexpr ScalarType scalar_type_of<bool>() {
  return kBool;
}
template <>
constexpr ScalarType scalar_type_of<int32_t>() {
  return kInt32;
}
template <>
constexpr ScalarType scalar_type_of<int64_t>() {
  return kInt64;
}
template <>
constexpr ScalarType scalar_type_of<float>() {
  return kFloat32;
}
template <>
constexpr ScalarType scalar_type_of<double>() {
  return kFloat64;
}

// Calls fn(TypeTag<T>{}) with T the C++ type of `t`.
template <typename Fn>
decltype(auto) dispatch_dtype(ScalarType t, Fn&& fn) {
  switch (t) {
    case ScalarType::Bool:
      return fn(TypeTag<bool>{});
    case ScalarType::Int32:
      return fn(TypeTag<int32_t>{});
    case ScalarType::Int64:
      return fn(TypeTag<int64_t>{});
    case ScalarType::Float32:
      return fn(TypeTag<float>{});
    case ScalarType::Float64:
      return fn(TypeTag<double>{});
  }
  MG_INTERNAL_ASSERT(false, "unknown dtype ", static_cast<int>(t));
  return fn(TypeTag<float>{});
}

// As dispatch_dtype, for ops defined on floating dtypes only; `op` names the op in the error.
template <typename Fn>
decltype(auto) dispatch_floating(ScalarType t, const char* op, Fn&& fn) {
  switch (t) {
    case ScalarType::Float32:
      return fn(TypeTag<float>{});
    case ScalarType::Float64:
      return fn(TypeTag<double>{});
    default:
      throw DTypeError(str(op, "(): expected a floating point tensor (float32 or float64) but got ",
                           dtype_name(t), "; convert it first with .to(kFloat32)"));
  }
}

}  // namespace mutagrad
