// The optimizer-step kernels: x op= value and addcdiv_ in place, and Backend::fma (add with
// alpha, addcmul, lerp), with the CPU backend's formulas (tensor/cpu/scalar_inplace.cc), any
// strides.
//
// Note [The CPU's bits for optimizer steps]
// An optimizer step is made of these writes; composed from binary kernels (the Backend
// defaults) add_(y, alpha) rounded alpha * y and then the sum where torch and the CPU round
// once, and after 20 Adam steps a float32 parameter differed in its last bits. Each kernel here
// is the CPU's formula element by element:
//   add(y, alpha):    fma(alpha, y, x), alpha converted to the dtype first
//   addcmul:          fma(value * t1, t2, x), value * t1 rounded
//   lerp:             |w| < 0.5 ? fma(w, y - x, x) : fma(-(y - x), 1 - w, y)
//   addcdiv_:         x + (value * t1) / t2, each op rounded in the tensor's dtype
//   x op= value:      one IEEE op in the tensor's dtype
// (Note [Torch's fused multiply-adds] in tensor/native/fma.h). Every step is written with an
// explicitly rounded operation (rn(), below): __fmaf_rn, __dmul_rn, __dadd_rn, ... in nvcc's
// device pass, which never contracts them into an FMA whatever the --fmad setting (cuda.bzl
// passes --fmad=false too); std::fma and plain operators for g++, which contracts nothing
// without -mfma. tests/optim/cuda_bitwise_test.cc checks the bits against the CPU for each
// op, dtype, strided operands and every optimizer option.
#include <cmath>

#include "cuda/kernel_util.h"
#include "cuda/kernels.h"

namespace mutagrad::cuda {
namespace {

// a op b rounded to nearest, never fused with a neighbouring op.
struct rn {
#ifdef __CUDA_ARCH__
  static __device__ float mul(float a, float b) { return __fmul_rn(a, b); }
  static __device__ double mul(double a, double b) { return __dmul_rn(a, b); }
  static __device__ float add(float a, float b) { return __fadd_rn(a, b); }
  static __device__ double add(double a, double b) { return __dadd_rn(a, b); }
  static __device__ float sub(float a, float b) { return __fsub_rn(a, b); }
  static __device__ double sub(double a, double b) { return __dsub_rn(a, b); }
  static __device__ float div(float a, float b) { return __fdiv_rn(a, b); }
  static __device__ double div(double a, double b) { return __ddiv_rn(a, b); }
  static __device__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
  static __device__ double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
#else
  template <typename T>
  static T mul(T a, T b) {
    return a * b;
  }
  template <typename T>
  static T add(T a, T b) {
    return a + b;
  }
  template <typename T>
  static T sub(T a, T b) {
    return a - b;
  }
  template <typename T>
  static T div(T a, T b) {
    return a / b;
  }
  template <typename T>
  static T fma(T a, T b, T c) {
    return std::fma(a, b, c);
  }
#endif
};

template <typename T>
struct ScalarInplaceFunctor {
  char* out;
  OffsetCalc<1> calc;
  BinaryOp op;
  T value;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[1];
    calc.get(i, off);
    T& x = at<T>(out, off[0]);
    switch (op) {
      case BinaryOp::kAdd:
        x = rn::add(x, value);
        break;
      case BinaryOp::kSub:
        x = rn::sub(x, value);
        break;
      case BinaryOp::kMul:
        x = rn::mul(x, value);
        break;
      default:
        x = rn::div(x, value);
        break;
    }
  }
};

// Backend::fma's formulas (FmaOp in tensor/backend.h), one rounding per multiply-add; c is read
// only where the op takes it (has_c), else the weight or alpha is `value`.
template <typename T>
struct FmaFunctor {
  char* out;
  const char* a;
  const char* b;
  const char* c;
  OffsetCalc<4> calc;
  FmaOp op;
  T value;
  bool has_c;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[4];
    calc.get(i, off);
    const T x = at<T>(a, off[1]);
    const T y = at<T>(b, off[2]);
    const T z = has_c ? at<T>(c, off[3]) : value;
    T r;
    switch (op) {
      case FmaOp::kAddAlpha:
        r = rn::fma(value, y, x);
        break;
      case FmaOp::kAddcmul:
        r = rn::fma(rn::mul(value, y), z, x);
        break;
      default: {  // kLerp, weight z
        const T d = rn::sub(y, x);
        const T abs_w = z < T(0) ? -z : z;
        r = abs_w < T(0.5) ? rn::fma(z, d, x) : rn::fma(-d, rn::sub(T(1), z), y);
        break;
      }
    }
    at<T>(out, off[0]) = r;
  }
};

// addcdiv_.
template <typename T>
struct AddcdivFunctor {
  char* out;
  const char* t1;
  const char* t2;
  OffsetCalc<3> calc;
  T value;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[3];
    calc.get(i, off);
    const T x = at<T>(out, off[0]);
    const T a = at<T>(t1, off[1]);
    const T b = at<T>(t2, off[2]);
    at<T>(out, off[0]) = rn::add(x, rn::div(rn::mul(value, a), b));
  }
};

template <typename F>
void dispatch_float(const Tensor& t, const F& f) {
  if (t.dtype() == kFloat32) {
    f(float{});
  } else {
    MG_INTERNAL_ASSERT(t.dtype() == kFloat64, "optimizer-step kernels: float32/float64 only");
    f(double{});
  }
}

}  // namespace

void binary_scalar_inplace_kernel(BinaryOp op, const Tensor& out, const Scalar& value) {
  const OffsetCalc<1> calc = make_offset_calc<1>({&out});
  dispatch_float(out, [&](auto tag) {
    using T = decltype(tag);
    launch(binary_op_name(op), out.numel(),
           ScalarInplaceFunctor<T>{device_data(out), calc, op, value.to<T>()});
  });
}

void fma_kernel(FmaOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                double value) {
  // c's place is a's when the op has no c: its offsets are computed, never read.
  const Tensor& third = c.defined() ? c : a;
  const OffsetCalc<4> calc = make_offset_calc<4>({&out, &a, &b, &third});
  dispatch_float(out, [&](auto tag) {
    using T = decltype(tag);
    launch(fma_op_name(op), out.numel(),
           FmaFunctor<T>{device_data(out), device_data(a), device_data(b), device_data(third), calc,
                         op, static_cast<T>(value), c.defined()});
  });
}

void addcdiv_inplace_kernel(const Tensor& out, const Tensor& t1, const Tensor& t2, double value) {
  const OffsetCalc<3> calc = make_offset_calc<3>({&out, &t1, &t2});
  dispatch_float(out, [&](auto tag) {
    using T = decltype(tag);
    launch("addcdiv_", out.numel(),
           AddcdivFunctor<T>{device_data(out), device_data(t1), device_data(t2), calc,
                             static_cast<T>(value)});
  });
}

}  // namespace mutagrad::cuda
