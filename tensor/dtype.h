// Element types, their promotion rules, and dtype dispatch.
//
//   ScalarType t = promote_types(kInt64, kFloat32);          // kFloat32
//   promote_types(kUInt8, kInt8);                             // kInt16
//   dispatch_dtype(t, [&](auto tag) {
//     using T = typename decltype(tag)::type;                 // float
//     ...
//   });
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "tensor/error.h"
#include "tensor/half.h"

namespace mutagrad {

// Ordered along PyTorch's promotion lattice (see promote_types).
enum class ScalarType : int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kUInt8 = ScalarType::UInt8;
constexpr ScalarType kByte = ScalarType::UInt8;
constexpr ScalarType kInt8 = ScalarType::Int8;
constexpr ScalarType kChar = ScalarType::Int8;
constexpr ScalarType kInt16 = ScalarType::Int16;
constexpr ScalarType kShort = ScalarType::Int16;
constexpr ScalarType kInt32 = ScalarType::Int32;
constexpr ScalarType kInt = ScalarType::Int32;
constexpr ScalarType kInt64 = ScalarType::Int64;
constexpr ScalarType kLong = ScalarType::Int64;
constexpr ScalarType kFloat16 = ScalarType::Float16;
constexpr ScalarType kHalf = ScalarType::Float16;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat32 = ScalarType::Float32;
constexpr ScalarType kFloat = ScalarType::Float32;
constexpr ScalarType kFloat64 = ScalarType::Float64;
constexpr ScalarType kDouble = ScalarType::Float64;

constexpr int kNumScalarTypes = 10;
// Every dtype, in enum order (for tests and tables).
constexpr ScalarType kAllScalarTypes[kNumScalarTypes] = {
    kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

// Bytes per element.
constexpr int64_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
    case ScalarType::UInt8:
    case ScalarType::Int8:
      return 1;
    case ScalarType::Int16:
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      return 2;
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
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == ScalarType::UInt8 || t == ScalarType::Int8 || t == ScalarType::Int16 ||
         t == ScalarType::Int32 || t == ScalarType::Int64 ||
         (include_bool && t == ScalarType::Bool);
}
constexpr bool is_signed(ScalarType t) { return t != ScalarType::Bool && t != ScalarType::UInt8; }

// Note [Reduced dtypes]
// uint8, int8, int16, float16 and bfloat16 are stored as themselves but computed in their
// "opmath" dtype, as PyTorch's CPU kernels compute float16/bfloat16 in float: int32 for the
// narrow integers, float32 for the 16-bit floats. The native layer (tensor/native) converts
// the operands of a kernel to opmath_dtype() and rounds its result back to the reduced dtype
// once per op. For the integers this is exact: two's-complement +, -, *, <<, bitwise ops and
// integer powers commute with truncation to the narrow width, and /, %, comparisons, max/min
// see the same values; so uint8 200 + 100 is 44, as in PyTorch. For float16/bfloat16 each op
// is correctly rounded from its float32 result, which is how c10::Half arithmetic behaves.
// Only data movement (fill, copy/cast, indexing reads and writes, accumulating scatters,
// where) has kernels for every dtype; the arithmetic kernels exist for the five opmath dtypes
// (has_kernels) and dispatch with dispatch_compute_dtype, which asserts on the others.
constexpr bool has_kernels(ScalarType t) {
  return t == ScalarType::Bool || t == ScalarType::Int32 || t == ScalarType::Int64 ||
         t == ScalarType::Float32 || t == ScalarType::Float64;
}
constexpr ScalarType opmath_dtype(ScalarType t) {
  return has_kernels(t) ? t : is_floating_point(t) ? ScalarType::Float32 : ScalarType::Int32;
}

// The default floating dtype (PyTorch's get_default_dtype / set_default_dtype): what floating
// factories without a dtype, Python floats, integer true division and the float-only ops of
// integers produce. float32 unless set; any floating dtype can be set (DTypeError
// otherwise). Process-wide, like torch's.
ScalarType default_dtype();
void set_default_dtype(ScalarType t);

// "float32", "int64", ... as PyTorch prints them after "torch.".
const char* dtype_name(ScalarType t);
// "Float", "Long", ... as in PyTorch's legacy type names ("torch.FloatTensor").
const char* legacy_type_name(ScalarType t);
std::ostream& operator<<(std::ostream& os, ScalarType t);

// PyTorch's promotion lattice for two tensors of the same priority: bool < {uint8, int8} <
// int16 < int32 < int64 < {float16, bfloat16} < float32 < float64, where uint8 with int8 gives
// int16, float16 with bfloat16 gives float32, and any integer with a float gives the float.
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
constexpr ScalarType scalar_type_of<uint8_t>() {
  return kUInt8;
}
template <>
constexpr ScalarType scalar_type_of<int8_t>() {
  return kInt8;
}
template <>
constexpr ScalarType scalar_type_of<int16_t>() {
  return kInt16;
}
template <>
constexpr ScalarType scalar_type_of<Half>() {
  return kFloat16;
}
template <>
constexpr ScalarType scalar_type_of<BFloat16>() {
  return kBFloat16;
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

// Calls fn(TypeTag<T>{}) with T the C++ type of `t`, for every dtype: the kernels that move
// or combine elements (copy, fill, indexing). uint8_t, int8_t, int16_t, Half, BFloat16 for the
// reduced dtypes (Note [Reduced dtypes]).
template <typename Fn>
decltype(auto) dispatch_dtype(ScalarType t, Fn&& fn) {
  switch (t) {
    case ScalarType::Bool:
      return fn(TypeTag<bool>{});
    case ScalarType::UInt8:
      return fn(TypeTag<uint8_t>{});
    case ScalarType::Int8:
      return fn(TypeTag<int8_t>{});
    case ScalarType::Int16:
      return fn(TypeTag<int16_t>{});
    case ScalarType::Int32:
      return fn(TypeTag<int32_t>{});
    case ScalarType::Int64:
      return fn(TypeTag<int64_t>{});
    case ScalarType::Float16:
      return fn(TypeTag<Half>{});
    case ScalarType::BFloat16:
      return fn(TypeTag<BFloat16>{});
    case ScalarType::Float32:
      return fn(TypeTag<float>{});
    case ScalarType::Float64:
      return fn(TypeTag<double>{});
  }
  MG_INTERNAL_ASSERT(false, "unknown dtype ", static_cast<int>(t));
  return fn(TypeTag<float>{});
}

// As dispatch_dtype, for the arithmetic kernels, which exist for the opmath dtypes only
// (has_kernels): the native layer has converted a reduced dtype's operands before the call.
template <typename Fn>
decltype(auto) dispatch_compute_dtype(ScalarType t, Fn&& fn) {
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
    default:
      break;
  }
  MG_INTERNAL_ASSERT(false, "no arithmetic kernel for ", static_cast<int>(t),
                     ": the native layer converts reduced dtypes to opmath_dtype() first");
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
