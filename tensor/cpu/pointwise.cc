// CPU element-wise kernels: unary, binary and where. Each op is a small functor applied by a
// strided loop whose contiguous (and scalar-broadcast) runs are plain vectorizable loops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/cpu/vec_kernels.h"
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

// As unary_loop, but contiguous runs go through the vectorized kernel of the CPU's build
// (vec_kernels.h: Eigen's SIMD exp, log, ...; Note [Vectorized transcendental edges] in
// vec_kernels_impl.h), strided elements through f, the op's std:: function.
template <typename T, typename F>
void unary_vec_loop(const Tensor& out, const Tensor& in, VecUnaryOp op, const F& f) {
  const VecKernels& vk = vec_kernels();
  StridedLoop<2> it({&out, &in});
  parallel_for(
      it.numel(),
      [&](int64_t begin, int64_t end) {
        it.run(begin, end, [&](char** p, const int64_t* s, int64_t n) {
          if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
            if constexpr (std::is_same_v<T, float>)
              vk.unary_f32(op, reinterpret_cast<float*>(p[0]), reinterpret_cast<const float*>(p[1]),
                           n);
            else
              vk.unary_f64(op, reinterpret_cast<double*>(p[0]),
                           reinterpret_cast<const double*>(p[1]), n);
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

// As binary_loop for float and double, but contiguous and scalar-broadcast runs of kVecMinRun or
// more go through the build's vectorized kernel (vec_kernels.h; the same bits as f: Note
// [Pointwise kernels per capability]); shorter runs (a broadcast's short rows) stay inline.
constexpr int64_t kVecMinRun = 16;

// Note [Flat operands]
// A tensor below the parallel threshold whose operands are each contiguous or one element read
// for every position (all strides 0: a broadcast number) is one run of its numel: binary_vec_loop
// then skips the StridedLoop set-up, a tiny op's largest fixed cost in its kernel. The loop makes
// the same single run for such operands (it coalesces them into one dim), so the bits are the
// same. flat_step: the operand's byte step in that run, or -1 when it is neither.
inline int64_t flat_step(const Tensor& t) {
  if (t.is_contiguous()) return static_cast<int64_t>(t.element_size());
  for (int64_t s : t.strides()) {
    if (s != 0) return -1;
  }
  return 0;
}

// The broadcast of a run with byte strides s (output, a, b) that the kernel takes: both inputs
// contiguous, or one of them a scalar repeated; false for any other run, and for runs shorter
// than kVecMinRun.
template <typename Out, typename T>
bool vec_broadcast(const int64_t* s, int64_t n, VecBroadcast* bc) {
  if (n < kVecMinRun || s[0] != static_cast<int64_t>(sizeof(Out))) return false;
  const int64_t e = static_cast<int64_t>(sizeof(T));
  if (s[1] == e && s[2] == e) return *bc = VecBroadcast::kNone, true;
  if (s[1] == e && s[2] == 0) return *bc = VecBroadcast::kScalarB, true;
  if (s[1] == 0 && s[2] == e) return *bc = VecBroadcast::kScalarA, true;
  return false;
}

// The run of binary_vec_loop: kernel for contiguous and scalar-broadcast runs of kVecMinRun or
// more, f inline otherwise.
template <typename Out, typename T, typename Kernel, typename F>
void binary_vec_run(char** p, const int64_t* s, int64_t n, const Kernel& kernel, const F& f) {
  static constexpr int64_t kOneRow[3] = {0, 0, 0};
  VecBroadcast bc;
  if (vec_broadcast<Out, T>(s, n, &bc)) {
    kernel(bc, reinterpret_cast<Out*>(p[0]), reinterpret_cast<const T*>(p[1]),
           reinterpret_cast<const T*>(p[2]), n, 1, kOneRow);
  } else {
    for (int64_t k = 0; k < n; ++k) {
      at<Out>(p[0], k, s[0]) = f(at<T>(p[1], k, s[1]), at<T>(p[2], k, s[2]));
    }
  }
}

// Note [Blocks of runs]
// A broadcast (a + row, a * column) or a strided slice is many short runs; each cost the
// StridedLoop's set-up and a kernel call (dispatch on op and broadcast): 16 % of a 256 x 256
// float add of a row (docs/performance/cpu-kernels.md, session 11). StridedLoop::run_rows hands
// whole blocks of runs over, and one kernel call (VecKernels' *_rows) takes every run of a block,
// when the runs are ones the kernel takes and their steps are whole elements. The runs go in the
// same order with the same formula per element, so the bits are those of one run at a time.
template <typename Out, typename T, typename Kernel, typename F>
void binary_vec_block(char** p, const int64_t* s, const int64_t* outer, int64_t n, int64_t rows,
                      const Kernel& kernel, const F& f) {
  VecBroadcast bc;
  const int64_t sizes[3] = {static_cast<int64_t>(sizeof(Out)), static_cast<int64_t>(sizeof(T)),
                            static_cast<int64_t>(sizeof(T))};
  int64_t step[3];
  bool whole = true;
  for (int k = 0; k < 3; ++k) {
    whole = whole && outer[k] % sizes[k] == 0;
    step[k] = outer[k] / sizes[k];
  }
  if (whole && vec_broadcast<Out, T>(s, n, &bc)) {
    kernel(bc, reinterpret_cast<Out*>(p[0]), reinterpret_cast<const T*>(p[1]),
           reinterpret_cast<const T*>(p[2]), n, rows, step);
    return;
  }
  char* q[3] = {p[0], p[1], p[2]};
  for (int64_t r = 0; r < rows; ++r) {
    binary_vec_run<Out, T>(q, s, n, kernel, f);
    for (int k = 0; k < 3; ++k) q[k] += outer[k];
  }
}

template <typename Out, typename T, typename Kernel, typename F>
void binary_vec_loop(const Tensor& out, const Tensor& a, const Tensor& b, const Kernel& kernel,
                     const F& f) {
  const int64_t n = out.numel();
  if (n < kParallelThreshold && out.is_contiguous()) {  // Note [Flat operands]
    const int64_t steps[3] = {static_cast<int64_t>(sizeof(Out)), flat_step(a), flat_step(b)};
    if (steps[1] >= 0 && steps[2] >= 0) {
      char* p[3] = {static_cast<char*>(out.raw_data()), static_cast<char*>(a.raw_data()),
                    static_cast<char*>(b.raw_data())};
      return binary_vec_run<Out, T>(p, steps, n, kernel, f);
    }
  }
  StridedLoop<3> it({&out, &a, &b});
  parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
    it.run_rows(
        begin, end,
        [&](char** p, const int64_t* s, int64_t run) {
          binary_vec_run<Out, T>(p, s, run, kernel, f);
        },
        [&](char** p, const int64_t* s, const int64_t* outer, int64_t run, int64_t rows) {
          binary_vec_block<Out, T>(p, s, outer, run, rows, kernel, f);
        });
  });
}

template <typename T, typename F>
void binary_vec(VecBinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const F& f) {
  const VecKernels& vk = vec_kernels();
  binary_vec_loop<T, T>(
      out, a, b,
      [&](VecBroadcast bc, T* o, const T* x, const T* y, int64_t n, int64_t rows,
          const int64_t* step) {
        if constexpr (std::is_same_v<T, float>)
          vk.binary_rows_f32(op, bc, o, x, y, n, rows, step);
        else
          vk.binary_rows_f64(op, bc, o, x, y, n, rows, step);
      },
      f);
}

template <typename T, typename F>
void compare_vec(VecCompareOp op, const Tensor& out, const Tensor& a, const Tensor& b, const F& f) {
  const VecKernels& vk = vec_kernels();
  binary_vec_loop<bool, T>(
      out, a, b,
      [&](VecBroadcast bc, bool* o, const T* x, const T* y, int64_t n, int64_t rows,
          const int64_t* step) {
        if constexpr (std::is_same_v<T, float>)
          vk.compare_rows_f32(op, bc, o, x, y, n, rows, step);
        else
          vk.compare_rows_f64(op, bc, o, x, y, n, rows, step);
      },
      f);
}

// The float and double ops with a vectorized kernel; false for the others.
template <typename T>
bool binary_vectorized(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    switch (op) {
      case BinaryOp::kAdd:
        return binary_vec<T>(VecBinaryOp::kAdd, out, a, b, [](T x, T y) { return x + y; }), true;
      case BinaryOp::kSub:
        return binary_vec<T>(VecBinaryOp::kSub, out, a, b, [](T x, T y) { return x - y; }), true;
      case BinaryOp::kMul:
        return binary_vec<T>(VecBinaryOp::kMul, out, a, b, [](T x, T y) { return x * y; }), true;
      case BinaryOp::kDiv:
        return binary_vec<T>(VecBinaryOp::kDiv, out, a, b, [](T x, T y) { return x / y; }), true;
      case BinaryOp::kMaximum:
        return binary_vec<T>(VecBinaryOp::kMaximum, out, a, b,
                             [](T x, T y) { return max_propagate_nan<T>(x, y); }),
               true;
      case BinaryOp::kMinimum:
        return binary_vec<T>(VecBinaryOp::kMinimum, out, a, b,
                             [](T x, T y) { return min_propagate_nan<T>(x, y); }),
               true;
      case BinaryOp::kEq:
        return compare_vec<T>(VecCompareOp::kEq, out, a, b, [](T x, T y) { return x == y; }), true;
      case BinaryOp::kNe:
        return compare_vec<T>(VecCompareOp::kNe, out, a, b, [](T x, T y) { return x != y; }), true;
      case BinaryOp::kLt:
        return compare_vec<T>(VecCompareOp::kLt, out, a, b, [](T x, T y) { return x < y; }), true;
      case BinaryOp::kLe:
        return compare_vec<T>(VecCompareOp::kLe, out, a, b, [](T x, T y) { return x <= y; }), true;
      case BinaryOp::kGt:
        return compare_vec<T>(VecCompareOp::kGt, out, a, b, [](T x, T y) { return x > y; }), true;
      case BinaryOp::kGe:
        return compare_vec<T>(VecCompareOp::kGe, out, a, b, [](T x, T y) { return x >= y; }), true;
      default:
        break;
    }
  }
  return false;
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
    using L = std::numeric_limits<T>;
    switch (op) {
      case UnaryOp::kExp:
        return unary_vec_loop<T>(out, in, VecUnaryOp::kExp, [](T x) { return std::exp(x); });
      case UnaryOp::kLog:
        return unary_vec_loop<T>(out, in, VecUnaryOp::kLog, [](T x) { return std::log(x); });
      case UnaryOp::kSqrt:  // not Eigen's: its fast-math float sqrt is not correctly rounded
        return unary_loop<T, T>(out, in, [](T x) { return std::sqrt(x); });
      case UnaryOp::kSin:
        return unary_vec_loop<T>(out, in, VecUnaryOp::kSin, [](T x) { return std::sin(x); });
      case UnaryOp::kCos:
        return unary_vec_loop<T>(out, in, VecUnaryOp::kCos, [](T x) { return std::cos(x); });
      case UnaryOp::kTanh:
        return unary_vec_loop<T>(out, in, VecUnaryOp::kTanh, [](T x) { return std::tanh(x); });
      case UnaryOp::kSigmoid:
        return unary_vec_loop<T>(out, in, VecUnaryOp::kSigmoid,
                                 [](T x) { return T(1) / (T(1) + std::exp(-x)); });
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
      case UnaryOp::kTan:
        return unary_loop<T, T>(out, in, [](T x) { return std::tan(x); });
      case UnaryOp::kErf:
        return unary_loop<T, T>(out, in, [](T x) { return std::erf(x); });
      case UnaryOp::kErfinv:
        return unary_loop<T, T>(out, in, [](T x) { return math::erfinv<T>(x); });
      case UnaryOp::kLgamma:
        return unary_loop<T, T>(out, in, [](T x) { return math::log_gamma<T>(x); });
      case UnaryOp::kDigamma:
        return unary_loop<T, T>(out, in, [](T x) { return math::digamma<T>(x); });
      case UnaryOp::kPolygamma: {
        const int64_t n = args.arg.to<int64_t>();
        return unary_loop<T, T>(out, in, [n](T x) { return math::polygamma<T>(n, x); });
      }
      case UnaryOp::kReciprocal:
        return unary_loop<T, T>(out, in, [](T x) { return T(1) / x; });
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
  if (binary_vectorized<T>(op, out, a, b)) return;
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
    case BinaryOp::kAtan2:
      if constexpr (kFloat) {
        return binary_loop<T, T>(out, a, b, [](T x, T y) { return std::atan2(x, y); });
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
