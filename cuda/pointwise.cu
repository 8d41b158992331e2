// CUDA element-wise kernels: unary, binary and where; the CPU's are in tensor/cpu/pointwise.cc.
//
// Note [One kernel per dtype]
// The op is a runtime switch inside the functor rather than a template parameter: one kernel
// per (dtype, result kind) instead of one per (op, dtype), which keeps nvcc's time and the
// binary's size small (every kernel is compiled for three GPU targets). The switch is uniform
// across a launch, so GPU threads never diverge on it. Each case is the CPU's scalar formula:
// Note [Bitwise equal to the CPU backend] in cuda/kernel_util.h.
#include <cmath>
#include <type_traits>

#include "cuda/kernel_util.h"
#include "cuda/kernels.h"
#include "tensor/element_math.h"

namespace mutagrad::cuda {
namespace {

// The scalar operands of pow (a), clamp (a = min, b = max) and nan_to_num (a, b, c), in the
// compute dtype; round's decimals and polygamma's order (int_arg).
template <typename T>
struct UnaryParams {
  UnaryOp op;
  T a;
  T b;
  T c;
  bool has_a;
  bool has_b;
  int64_t int_arg;
};

template <typename T>
MG_HOST_DEVICE T unary_value(const UnaryParams<T>& p, T x) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  switch (p.op) {
    case UnaryOp::kNeg:
      if constexpr (!kBool) return math::wrapping_neg<T>(x);
      break;
    case UnaryOp::kAbs:
      if constexpr (kBool) {
        return x;
      } else {
        return math::wrapping_abs<T>(x);
      }
    case UnaryOp::kRelu:
      return x < T(0) ? T(0) : x;
    case UnaryOp::kClamp: {
      T y = x;
      if (p.has_a) y = y < p.a ? p.a : y;
      if (p.has_b) y = y > p.b ? p.b : y;
      return y;
    }
    case UnaryOp::kSign:
      return math::sign<T>(x);
    case UnaryOp::kBitwiseNot:
      if constexpr (kBool) {
        return !x;
      } else if constexpr (!kFloat) {
        return static_cast<T>(~x);
      }
      break;
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kTrunc:
    case UnaryOp::kRound:
    case UnaryOp::kNanToNum:
      if constexpr (!kFloat) return x;
      break;
    case UnaryOp::kPowScalar:
      if constexpr (kFloat) {
        // The CPU's special exponents, then pow.
        if (p.a == T(2)) return x * x;
        if (p.a == T(1)) return x;
        if (p.a == T(0.5)) return std::sqrt(x);
        if (p.a == T(-1)) return T(1) / x;
        return std::pow(x, p.a);
      } else if constexpr (kBool) {
        return x || !p.a;
      } else {
        return math::int_pow<T>(x, p.a);
      }
    default:
      break;
  }
  if constexpr (kFloat) {
    switch (p.op) {
      case UnaryOp::kExp:
        return std::exp(x);
      case UnaryOp::kLog:
        return std::log(x);
      case UnaryOp::kSqrt:
        return std::sqrt(x);
      case UnaryOp::kSin:
        return std::sin(x);
      case UnaryOp::kCos:
        return std::cos(x);
      case UnaryOp::kTanh:
        return std::tanh(x);
      case UnaryOp::kSigmoid:
        return T(1) / (T(1) + std::exp(-x));
      case UnaryOp::kRsqrt:
        return T(1) / std::sqrt(x);
      case UnaryOp::kExp2:
        return std::exp2(x);
      case UnaryOp::kExpm1:
        return std::expm1(x);
      case UnaryOp::kLog1p:
        return std::log1p(x);
      case UnaryOp::kLog2:
        return std::log2(x);
      case UnaryOp::kLog10:
        return std::log10(x);
      case UnaryOp::kFloor:
        return std::floor(x);
      case UnaryOp::kCeil:
        return std::ceil(x);
      case UnaryOp::kTrunc:
        return std::trunc(x);
      case UnaryOp::kFrac:
        return x - std::trunc(x);
      case UnaryOp::kRound:
        return math::round_decimals<T>(x, p.int_arg);
      case UnaryOp::kNanToNum:
        return x != x ? p.a : math::is_inf<T>(x) ? (x > T(0) ? p.b : p.c) : x;
      case UnaryOp::kTan:
        return std::tan(x);
      case UnaryOp::kErf:
        return std::erf(x);
      case UnaryOp::kErfinv:
        return math::erfinv<T>(x);
      case UnaryOp::kLgamma:
        return math::log_gamma<T>(x);
      case UnaryOp::kDigamma:
        return math::digamma<T>(x);
      case UnaryOp::kPolygamma:
        return math::polygamma<T>(p.int_arg, x);
      case UnaryOp::kReciprocal:
        return T(1) / x;
      default:
        break;
    }
  }
  return x;  // not reached: native validated the op for this dtype
}

template <typename T>
struct UnaryFunctor {
  char* out;
  const char* in;
  OffsetCalc<2> calc;
  UnaryParams<T> params;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[2];
    calc.get(i, off);
    at<T>(out, off[0]) = unary_value<T>(params, at<T>(in, off[1]));
  }
};

// The unary ops with a bool result (is_predicate): logical_not, isnan, isinf, isfinite.
template <typename T>
struct PredicateFunctor {
  char* out;
  const char* in;
  OffsetCalc<2> calc;
  UnaryOp op;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[2];
    calc.get(i, off);
    const T x = at<T>(in, off[1]);
    bool r = x == T(0);
    if (op == UnaryOp::kIsNan) r = math::is_nan<T>(x);
    if (op == UnaryOp::kIsInf) r = math::is_inf<T>(x);
    if (op == UnaryOp::kIsFinite) r = math::is_finite<T>(x);
    at<bool>(out, off[0]) = r;
  }
};

template <typename T>
MG_HOST_DEVICE T binary_value(BinaryOp op, T x, T y) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  switch (op) {
    case BinaryOp::kAdd:
      if constexpr (kBool) {
        return x || y;
      } else {
        return math::wrapping_add<T>(x, y);
      }
    case BinaryOp::kSub:
      if constexpr (kBool) {
        return x != y;
      } else {
        return math::wrapping_sub<T>(x, y);
      }
    case BinaryOp::kMul:
      if constexpr (kBool) {
        return x && y;
      } else {
        return math::wrapping_mul<T>(x, y);
      }
    case BinaryOp::kDiv:
      if constexpr (kFloat) {
        return x / y;
      } else if constexpr (kBool) {
        return x;
      } else {
        return y == 0 ? T(0) : static_cast<T>(x / y);  // not reached from native
      }
    case BinaryOp::kPow:
      if constexpr (kFloat) {
        return std::pow(x, y);
      } else if constexpr (kBool) {
        return x || !y;
      } else {
        return math::int_pow<T>(x, y);
      }
    case BinaryOp::kMaximum:
      return math::max_propagate_nan<T>(x, y);
    case BinaryOp::kMinimum:
      return math::min_propagate_nan<T>(x, y);
    case BinaryOp::kRemainder:
      if constexpr (!kBool) return math::remainder<T>(x, y);
      break;
    case BinaryOp::kFmod:
      if constexpr (!kBool) return math::fmod<T>(x, y);
      break;
    case BinaryOp::kFloorDivide:
      if constexpr (!kBool) return math::floor_divide<T>(x, y);
      break;
    case BinaryOp::kTruncDivide:
      if constexpr (!kBool) return math::trunc_divide<T>(x, y);
      break;
    case BinaryOp::kBitwiseAnd:
      if constexpr (kBool) return x && y;
      if constexpr (!kFloat && !kBool) return static_cast<T>(x & y);
      break;
    case BinaryOp::kBitwiseOr:
      if constexpr (kBool) return x || y;
      if constexpr (!kFloat && !kBool) return static_cast<T>(x | y);
      break;
    case BinaryOp::kBitwiseXor:
      if constexpr (kBool) return x != y;
      if constexpr (!kFloat && !kBool) return static_cast<T>(x ^ y);
      break;
    case BinaryOp::kShiftLeft:
      if constexpr (!kFloat && !kBool) return math::shift_left<T>(x, y);
      break;
    case BinaryOp::kShiftRight:
      if constexpr (!kFloat && !kBool) return math::shift_right<T>(x, y);
      break;
    case BinaryOp::kAtan2:
      if constexpr (kFloat) return std::atan2(x, y);
      break;
    default:
      break;  // comparisons go through compare_value
  }
  return x;  // not reached for the arithmetic ops: native validated the op for this dtype
}

template <typename T>
MG_HOST_DEVICE bool compare_value(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::kEq:
      return x == y;
    case BinaryOp::kNe:
      return x != y;
    case BinaryOp::kLt:
      return x < y;
    case BinaryOp::kLe:
      return x <= y;
    case BinaryOp::kGt:
      return x > y;
    case BinaryOp::kGe:
      return x >= y;
    case BinaryOp::kLogicalAnd:
      return x != T(0) && y != T(0);
    case BinaryOp::kLogicalOr:
      return x != T(0) || y != T(0);
    case BinaryOp::kLogicalXor:
      return (x != T(0)) != (y != T(0));
    default:
      return false;  // arithmetic goes through binary_value
  }
}

template <typename T>
struct BinaryFunctor {
  char* out;
  const char* a;
  const char* b;
  OffsetCalc<3> calc;
  BinaryOp op;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[3];
    calc.get(i, off);
    at<T>(out, off[0]) = binary_value<T>(op, at<T>(a, off[1]), at<T>(b, off[2]));
  }
};

template <typename T>
struct CompareFunctor {
  char* out;
  const char* a;
  const char* b;
  OffsetCalc<3> calc;
  BinaryOp op;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[3];
    calc.get(i, off);
    at<bool>(out, off[0]) = compare_value<T>(op, at<T>(a, off[1]), at<T>(b, off[2]));
  }
};

template <typename T>
struct WhereFunctor {
  char* out;
  const char* cond;
  const char* a;
  const char* b;
  OffsetCalc<4> calc;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[4];
    calc.get(i, off);
    at<T>(out, off[0]) = at<bool>(cond, off[1]) ? at<T>(a, off[2]) : at<T>(b, off[3]);
  }
};

}  // namespace

void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) {
  const OffsetCalc<2> calc = make_offset_calc<2>({&out, &in});
  dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_predicate(op)) {
      launch(unary_op_name(op), out.numel(),
             PredicateFunctor<T>{device_data(out), device_data(in), calc, op});
      return;
    }
    const bool int_op = op == UnaryOp::kRound || op == UnaryOp::kPolygamma;
    const int64_t int_arg = int_op && args.has_arg ? args.arg.to<int64_t>() : 0;
    const UnaryParams<T> params{
        op,     args.arg.to<T>(), args.arg2.to<T>(), args.arg3.to<T>(), args.has_arg, args.has_arg2,
        int_arg};
    launch(unary_op_name(op), out.numel(),
           UnaryFunctor<T>{device_data(out), device_data(in), calc, params});
  });
}

void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  const OffsetCalc<3> calc = make_offset_calc<3>({&out, &a, &b});
  dispatch_compute_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_comparison(op)) {
      launch(binary_op_name(op), out.numel(),
             CompareFunctor<T>{device_data(out), device_data(a), device_data(b), calc, op});
    } else {
      launch(binary_op_name(op), out.numel(),
             BinaryFunctor<T>{device_data(out), device_data(a), device_data(b), calc, op});
    }
  });
}

void where_kernel(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  const OffsetCalc<4> calc = make_offset_calc<4>({&out, &cond, &a, &b});
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(
        "where", out.numel(),
        WhereFunctor<T>{device_data(out), device_data(cond), device_data(a), device_data(b), calc});
  });
}

}  // namespace mutagrad::cuda
