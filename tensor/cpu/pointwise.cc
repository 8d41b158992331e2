// CPU element-wise kernels: unary, binary and where. Each op is a small functor applied by a
// strided loop whose contiguous (and scalar-broadcast) runs are plain vectorizable loops.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/element_math.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {

using math::int_pow;
using math::max_propagate_nan;
using math::min_propagate_nan;
using math::wrapping_abs;
using math::wrapping_add;
using math::wrapping_mul;
using math::wrapping_neg;
using math::wrapping_sub;
namespace {

template <typename T>
T& at(char* p, int64_t k, int64_t stride) {
  return *reinterpret_cast<T*>(p + k * stride);
}

// out = f(in) over every element.
template <typename Out, typename In, typename F>
void unary_loop(const Tensor& out, const Tensor& in, const F& f) {
  StridedLoop<2> it({&out, &in});
  parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
    it.run(begin, end, [&f](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
        Out* o = reinterpret_cast<Out*>(p[0]);
        const In* a = reinterpret_cast<const In*>(p[1]);
        for (int64_t k = 0; k < n; ++k) o[k] = f(a[k]);
      } else {
        for (int64_t k = 0; k < n; ++k) at<Out>(p[0], k, s[0]) = f(at<In>(p[1], k, s[1]));
      }
    });
  });
}

// Note [Vectorized transcendental edges]
// Eigen 3.4's SIMD exp and log are wrong at the edges: exp clamps its argument (exp(-inf) is
// 2.9e-39 in float and 5.6e-309 in double, not 0), log flushes subnormal inputs (log(1e-40f) is
// -87.3, not -92.1); the scalar head and tail of a run went through std::, so a result depended
// on its SIMD lane. Invariant: a vectorized kernel returns exactly f(x), its scalar std::
// function, for every x outside the op's VecDomain, and Eigen's value, within a few ulps of
// f(x), only inside it. Every domain leaves out nan; exp's and sigmoid's leave out the inputs
// whose exp is subnormal, zero or infinite, log's all but the positive normal numbers, sin's
// and cos's |x| > 65536. Inside them Eigen was measured accurate (tanh at +-inf too). Why a
// check per element: it is one vectorized pass (a few percent of exp's time), so ordinary
// inputs keep Eigen's speed. tests/tensor/pointwise_edges_test.cc checks it in every lane.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "vec_key reads the high word");

// The high 32 bits of *x: all of a float; sign, exponent and 20 mantissa bits of a double. Keys
// are compared in 32-bit lanes, which SSE2 has for float and double alike.
template <typename T>
uint32_t vec_key(const T* x) {
  uint32_t key;
  std::memcpy(&key, reinterpret_cast<const char*>(x) + sizeof(T) - sizeof(key), sizeof(key));
  return key;
}

// The inputs an op's Eigen function is used for: the keys with ((key & mask) - lo) <= width
// (unsigned). A double's bound is rounded outwards to its key: by at most 2^-20 relative.
struct VecDomain {
  uint32_t mask, lo, width;

  template <typename T>
  static VecDomain symmetric(T bound) {  // [-bound, bound]
    return {0x7fffffffu, 0, vec_key(&bound)};
  }
  template <typename T>
  static VecDomain positive(T lo, T hi) {  // [lo, hi], 0 < lo <= hi
    return {0xffffffffu, vec_key(&lo), vec_key(&hi) - vec_key(&lo)};
  }
  template <typename T>
  bool contains(const T* x) const {
    return ((vec_key(x) & mask) - lo) <= width;
  }
  template <typename T>
  bool contains_all(const T* x, int64_t n) const {
    uint32_t outside = 0;  // not a bool with early exit: this loop vectorizes
    for (int64_t k = 0; k < n; ++k) outside |= !contains(x + k);
    return outside == 0;
  }
};

// o[k] = f(a[k]) for k < n, through the Eigen array expression g(out_array, in_array) where the
// domain allows; o may be a. See Note [Vectorized transcendental edges].
template <typename T, typename F, typename G>
void unary_vec_run(T* o, const T* a, int64_t n, VecDomain domain, const F& f, const G& g) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  constexpr int64_t kBlock = 256, kLine = 16;
  alignas(64) T tmp[kBlock];
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t m = std::min(kBlock, n - start);
    const T* x = a + start;
    T* y = o + start;
    if (domain.contains_all(x, m)) {
      Eigen::Map<Array> out(y, m);
      g(out, Eigen::Map<const Array>(x, m));
      continue;
    }
    // Eigen works on a copy (x stays readable when y is x) where 1 stands in for the inputs
    // outside (no slow paths on nan, inf or subnormal results); those lanes take f(x).
    for (int64_t k = 0; k < m; ++k) tmp[k] = domain.contains(x + k) ? x[k] : T(1);
    Eigen::Map<Array> vec(tmp, m);
    g(vec, vec);
    for (int64_t k = 0; k < m; k += kLine) {
      const int64_t e = std::min(kLine, m - k);
      if (domain.contains_all(x + k, e)) {
        std::copy(tmp + k, tmp + k + e, y + k);
        continue;
      }
      for (int64_t j = k; j < k + e; ++j) y[j] = domain.contains(x + j) ? tmp[j] : f(x[j]);
    }
  }
}

// As unary_loop, but contiguous runs go through unary_vec_run (Eigen's SIMD exp, log, ...).
template <typename T, typename F, typename G>
void unary_vec_loop(const Tensor& out, const Tensor& in, VecDomain domain, const F& f, const G& g) {
  StridedLoop<2> it({&out, &in});
  parallel_for(
      it.numel(),
      [&](int64_t begin, int64_t end) {
        it.run(begin, end, [&](char** p, const int64_t* s, int64_t n) {
          if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
            unary_vec_run<T>(reinterpret_cast<T*>(p[0]), reinterpret_cast<const T*>(p[1]), n,
                             domain, f, g);
          } else {
            for (int64_t k = 0; k < n; ++k) at<T>(p[0], k, s[0]) = f(at<T>(p[1], k, s[1]));
          }
        });
      },
      kParallelThresholdCostly);
}

// out = f(a, b) over every element; fast paths for contiguous runs and a broadcast scalar.
template <typename Out, typename In, typename F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const F& f) {
  StridedLoop<3> it({&out, &a, &b});
  parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
    it.run(begin, end, [&f](char** p, const int64_t* s, int64_t n) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const In* x = reinterpret_cast<const In*>(p[1]);
      const In* y = reinterpret_cast<const In*>(p[2]);
      if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == sizeof(In)) {
        for (int64_t k = 0; k < n; ++k) o[k] = f(x[k], y[k]);
      } else if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {
        const In yv = *y;
        for (int64_t k = 0; k < n; ++k) o[k] = f(x[k], yv);
      } else if (s[0] == sizeof(Out) && s[1] == 0 && s[2] == sizeof(In)) {
        const In xv = *x;
        for (int64_t k = 0; k < n; ++k) o[k] = f(xv, y[k]);
      } else {
        for (int64_t k = 0; k < n; ++k) {
          at<Out>(p[0], k, s[0]) = f(at<In>(p[1], k, s[1]), at<In>(p[2], k, s[2]));
        }
      }
    });
  });
}

template <typename T>
void unary_typed(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  auto bad = [&] {
    MG_INTERNAL_ASSERT(false, "cpu unary ", unary_op_name(op), " on ", in.dtype());
  };
  switch (op) {
    case UnaryOp::kNeg:
      if constexpr (kBool)
        return bad();
      else
        return unary_loop<T, T>(out, in, [](T x) { return wrapping_neg<T>(x); });
    case UnaryOp::kAbs:
      if constexpr (kBool)
        return unary_loop<T, T>(out, in, [](T x) { return x; });
      else
        return unary_loop<T, T>(out, in, [](T x) { return wrapping_abs<T>(x); });
    case UnaryOp::kRelu:
      return unary_loop<T, T>(out, in, [](T x) { return x < T(0) ? T(0) : x; });
    case UnaryOp::kLogicalNot:
      return unary_loop<bool, T>(out, in, [](T x) { return x == T(0); });
    case UnaryOp::kClamp: {
      const bool has_lo = args.has_arg, has_hi = args.has_arg2;
      const T lo = args.arg.to<T>(), hi = args.arg2.to<T>();
      if (has_lo && has_hi) {
        return unary_loop<T, T>(out, in, [lo, hi](T x) {
          T y = x < lo ? lo : x;
          return y > hi ? hi : y;
        });
      }
      if (has_lo) return unary_loop<T, T>(out, in, [lo](T x) { return x < lo ? lo : x; });
      if (has_hi) return unary_loop<T, T>(out, in, [hi](T x) { return x > hi ? hi : x; });
      return unary_loop<T, T>(out, in, [](T x) { return x; });
    }
    case UnaryOp::kSign:
      return unary_loop<T, T>(out, in, [](T x) { return math::sign<T>(x); });
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kTrunc:
    case UnaryOp::kRound:
    case UnaryOp::kNanToNum:
      if constexpr (!kFloat) return unary_loop<T, T>(out, in, [](T x) { return x; });
      break;  // floating: below
    case UnaryOp::kIsNan:
      return unary_loop<bool, T>(out, in, [](T x) { return math::is_nan<T>(x); });
    case UnaryOp::kIsInf:
      return unary_loop<bool, T>(out, in, [](T x) { return math::is_inf<T>(x); });
    case UnaryOp::kIsFinite:
      return unary_loop<bool, T>(out, in, [](T x) { return math::is_finite<T>(x); });
    case UnaryOp::kBitwiseNot:
      if constexpr (kBool) {
        return unary_loop<T, T>(out, in, [](T x) { return !x; });
      } else if constexpr (!kFloat) {
        return unary_loop<T, T>(out, in, [](T x) { return static_cast<T>(~x); });
      }
      return bad();
    case UnaryOp::kPowScalar: {
      if constexpr (kFloat) {
        const T e = args.arg.to<T>();
        if (e == T(2)) return unary_loop<T, T>(out, in, [](T x) { return x * x; });
        if (e == T(1)) return unary_loop<T, T>(out, in, [](T x) { return x; });
        if (e == T(0.5)) return unary_loop<T, T>(out, in, [](T x) { return std::sqrt(x); });
        if (e == T(-1)) return unary_loop<T, T>(out, in, [](T x) { return T(1) / x; });
        return unary_loop<T, T>(out, in, [e](T x) { return std::pow(x, e); });
      } else if constexpr (kBool) {
        const bool e = args.arg.to<bool>();
        return unary_loop<T, T>(out, in, [e](T x) { return x || !e; });
      } else {
        const T e = args.arg.to<T>();
        return unary_loop<T, T>(out, in, [e](T x) { return int_pow<T>(x, e); });
      }
    }
    default:
      break;
  }
  if constexpr (kFloat) {
    // Within where Eigen 3.4's SIMD functions were measured accurate (every 5th float, 6*10^7
    // doubles, SSE2 and AVX2/FMA builds); see Note [Vectorized transcendental edges]. Each
    // holds 1, the stand-in of unary_vec_run.
    using L = std::numeric_limits<T>;
    const T exp_bound = std::is_same_v<T, float> ? T(87) : T(708);  // exp(+-bound) is normal
    const VecDomain exp_domain = VecDomain::symmetric(exp_bound);   // sigmoid's exp(-x) too
    const VecDomain log_domain = VecDomain::positive(L::min(), L::max());
    const VecDomain trig_domain = VecDomain::symmetric(T(65536));       // fast argument reduction
    const VecDomain tanh_domain = VecDomain::symmetric(L::infinity());  // all but nan
    switch (op) {
      case UnaryOp::kExp:
        return unary_vec_loop<T>(
            out, in, exp_domain, [](T x) { return std::exp(x); },
            [](auto& o, const auto& a) { o = a.exp(); });
      case UnaryOp::kLog:
        return unary_vec_loop<T>(
            out, in, log_domain, [](T x) { return std::log(x); },
            [](auto& o, const auto& a) { o = a.log(); });
      case UnaryOp::kSqrt:  // not Eigen's: its fast-math float sqrt is not correctly rounded
        return unary_loop<T, T>(out, in, [](T x) { return std::sqrt(x); });
      case UnaryOp::kSin:
        return unary_vec_loop<T>(
            out, in, trig_domain, [](T x) { return std::sin(x); },
            [](auto& o, const auto& a) { o = a.sin(); });
      case UnaryOp::kCos:
        return unary_vec_loop<T>(
            out, in, trig_domain, [](T x) { return std::cos(x); },
            [](auto& o, const auto& a) { o = a.cos(); });
      case UnaryOp::kTanh:
        return unary_vec_loop<T>(
            out, in, tanh_domain, [](T x) { return std::tanh(x); },
            [](auto& o, const auto& a) { o = a.tanh(); });
      case UnaryOp::kSigmoid:
        return unary_vec_loop<T>(
            out, in, exp_domain, [](T x) { return T(1) / (T(1) + std::exp(-x)); },
            [](auto& o, const auto& a) { o = (T(1) + (-a).exp()).inverse(); });
      case UnaryOp::kRsqrt:
        return unary_loop<T, T>(out, in, [](T x) { return T(1) / std::sqrt(x); });
      case UnaryOp::kExp2:
        return unary_loop<T, T>(out, in, [](T x) { return std::exp2(x); });
      case UnaryOp::kExpm1:
        return unary_loop<T, T>(out, in, [](T x) { return std::expm1(x); });
      case UnaryOp::kLog1p:
        return unary_loop<T, T>(out, in, [](T x) { return std::log1p(x); });
      case UnaryOp::kLog2:
        return unary_loop<T, T>(out, in, [](T x) { return std::log2(x); });
      case UnaryOp::kLog10:
        return unary_loop<T, T>(out, in, [](T x) { return std::log10(x); });
      case UnaryOp::kFloor:
        return unary_loop<T, T>(out, in, [](T x) { return std::floor(x); });
      case UnaryOp::kCeil:
        return unary_loop<T, T>(out, in, [](T x) { return std::ceil(x); });
      case UnaryOp::kTrunc:
        return unary_loop<T, T>(out, in, [](T x) { return std::trunc(x); });
      case UnaryOp::kFrac:
        return unary_loop<T, T>(out, in, [](T x) { return x - std::trunc(x); });
      case UnaryOp::kRound: {
        const int64_t decimals = args.has_arg ? args.arg.to<int64_t>() : 0;
        return unary_loop<T, T>(out, in,
                                [decimals](T x) { return math::round_decimals<T>(x, decimals); });
      }
      case UnaryOp::kNanToNum: {
        const T nan = args.arg.to<T>(), pos = args.arg2.to<T>(), neg = args.arg3.to<T>();
        return unary_loop<T, T>(out, in, [nan, pos, neg](T x) {
          return x != x ? nan : x == L::infinity() ? pos : x == -L::infinity() ? neg : x;
        });
      }
      default:
        break;
    }
  }
  bad();
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  switch (op) {
    case BinaryOp::kAdd:
      if constexpr (kBool)
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return x || y; });
      else
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return wrapping_add<T>(x, y); });
    case BinaryOp::kSub:
      if constexpr (kBool)
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return x != y; });
      else
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return wrapping_sub<T>(x, y); });
    case BinaryOp::kMul:
      if constexpr (kBool)
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return x && y; });
      else
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return wrapping_mul<T>(x, y); });
    case BinaryOp::kDiv:
      if constexpr (kFloat) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return x / y; });
      } else if constexpr (kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T) { return x; });
      } else {
        // Never reached from native (integer division promotes to float); no SIGFPE on 0.
        return binary_loop<T, T>(out, a, b,
                                 [](T x, T y) { return y == 0 ? T(0) : static_cast<T>(x / y); });
      }
    case BinaryOp::kPow:
      if constexpr (kFloat) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return std::pow(x, y); });
      } else if constexpr (kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return x || !y; });
      } else {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return int_pow<T>(x, y); });
      }
    case BinaryOp::kMaximum:
      return binary_loop<T, T>(out, a, b, [](T x, T y) { return max_propagate_nan<T>(x, y); });
    case BinaryOp::kMinimum:
      return binary_loop<T, T>(out, a, b, [](T x, T y) { return min_propagate_nan<T>(x, y); });
    case BinaryOp::kRemainder:
      if constexpr (!kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return math::remainder<T>(x, y); });
      }
      break;
    case BinaryOp::kFmod:
      if constexpr (!kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return math::fmod<T>(x, y); });
      }
      break;
    case BinaryOp::kFloorDivide:
      if constexpr (!kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return math::floor_divide<T>(x, y); });
      }
      break;
    case BinaryOp::kTruncDivide:
      if constexpr (!kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return math::trunc_divide<T>(x, y); });
      }
      break;
    case BinaryOp::kBitwiseAnd:
      if constexpr (kBool) return binary_loop<T, T>(out, a, b, [](T x, T y) { return x && y; });
      if constexpr (!kFloat && !kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return static_cast<T>(x & y); });
      }
      break;
    case BinaryOp::kBitwiseOr:
      if constexpr (kBool) return binary_loop<T, T>(out, a, b, [](T x, T y) { return x || y; });
      if constexpr (!kFloat && !kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return static_cast<T>(x | y); });
      }
      break;
    case BinaryOp::kBitwiseXor:
      if constexpr (kBool) return binary_loop<T, T>(out, a, b, [](T x, T y) { return x != y; });
      if constexpr (!kFloat && !kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return static_cast<T>(x ^ y); });
      }
      break;
    case BinaryOp::kShiftLeft:
      if constexpr (!kFloat && !kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return math::shift_left<T>(x, y); });
      }
      break;
    case BinaryOp::kShiftRight:
      if constexpr (!kFloat && !kBool) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return math::shift_right<T>(x, y); });
      }
      break;
    case BinaryOp::kEq:
      return binary_loop<bool, T>(out, a, b, [](T x, T y) { return x == y; });
    case BinaryOp::kNe:
      return binary_loop<bool, T>(out, a, b, [](T x, T y) { return x != y; });
    case BinaryOp::kLt:
      return binary_loop<bool, T>(out, a, b, [](T x, T y) { return x < y; });
    case BinaryOp::kLe:
      return binary_loop<bool, T>(out, a, b, [](T x, T y) { return x <= y; });
    case BinaryOp::kGt:
      return binary_loop<bool, T>(out, a, b, [](T x, T y) { return x > y; });
    case BinaryOp::kGe:
      return binary_loop<bool, T>(out, a, b, [](T x, T y) { return x >= y; });
    case BinaryOp::kLogicalAnd:
      return binary_loop<bool, T>(out, a, b, [](T x, T y) { return x != T(0) && y != T(0); });
    case BinaryOp::kLogicalOr:
      return binary_loop<bool, T>(out, a, b, [](T x, T y) { return x != T(0) || y != T(0); });
    case BinaryOp::kLogicalXor:
      return binary_loop<bool, T>(out, a, b, [](T x, T y) { return (x != T(0)) != (y != T(0)); });
  }
  MG_INTERNAL_ASSERT(false, "cpu binary: unknown op ", static_cast<int>(op));
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) {
  if (out.numel() == 0) return;
  dispatch_compute_dtype(
      in.dtype(), [&](auto tag) { unary_typed<typename decltype(tag)::type>(op, out, in, args); });
}

void CpuBackend::binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  dispatch_compute_dtype(
      a.dtype(), [&](auto tag) { binary_typed<typename decltype(tag)::type>(op, out, a, b); });
}

void CpuBackend::where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  StridedLoop<4> it({&out, &cond, &a, &b});
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
      it.run(begin, end, [](char** p, const int64_t* s, int64_t n) {
        if (s[0] == sizeof(T) && s[1] == 1 && s[2] == sizeof(T) && s[3] == sizeof(T)) {
          T* o = reinterpret_cast<T*>(p[0]);
          const bool* c = reinterpret_cast<const bool*>(p[1]);
          const T* x = reinterpret_cast<const T*>(p[2]);
          const T* y = reinterpret_cast<const T*>(p[3]);
          for (int64_t k = 0; k < n; ++k) o[k] = c[k] ? x[k] : y[k];
        } else {
          for (int64_t k = 0; k < n; ++k) {
            at<T>(p[0], k, s[0]) =
                at<bool>(p[1], k, s[1]) ? at<T>(p[2], k, s[2]) : at<T>(p[3], k, s[3]);
          }
        }
      });
    });
  });
}

}  // namespace mutagrad::cpu
