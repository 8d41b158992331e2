// The optimizer-step kernels: x op= value, x += alpha * y, addcmul_ and addcdiv_ in place, with
// the CPU backend's formulas (tensor/cpu/scalar_inplace.cc), any strides.
//
// Note [The CPU's bits for optimizer steps]
// An optimizer step is made of these writes; composed from binary kernels (the Backend
// defaults) add_(y, alpha) rounds alpha * y and then the sum, where the CPU rounds once, and
// after 20 Adam steps a float32 parameter differed in its last bits. Each kernel here is the
// CPU's formula element by element:
//   float32 add_(y, alpha):  (float)((double)x + (double)(float)alpha * (double)y): the
//                            product of two floats is exact in double, one rounding to float
//   float64 add_(y, alpha):  x + alpha * y, the product and the sum rounded separately
//   float32 addcmul_:        (float)((double)x + (double)(value * t1) * (double)t2)
//   float64 addcmul_:        x + (value * t1) * t2, each op rounded
//   addcdiv_:                x + (value * t1) / t2, each op rounded in the tensor's dtype
//   x op= value:             one IEEE op in the tensor's dtype
// Every step is written with an explicitly rounded operation (rn(), below): __dmul_rn,
// __dadd_rn, ... in nvcc's device pass, which never contracts them into an FMA whatever the
// --fmad setting (cuda.bzl passes --fmad=false too); plain operators for g++, which contracts
// nothing without -mfma. tests/optim/cuda_bitwise_test.cc checks the bits against the CPU for
// each op, dtype, strided operands and every optimizer option.
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

// x + alpha * y: float32 in double with one rounding, float64 as two roundings.
MG_HOST_DEVICE inline float axpy_value(float x, float y, float alpha) {
  return static_cast<float>(
      rn::add(static_cast<double>(x), rn::mul(static_cast<double>(alpha), static_cast<double>(y))));
}
MG_HOST_DEVICE inline double axpy_value(double x, double y, double alpha) {
  return rn::add(x, rn::mul(alpha, y));
}

// x + (value * t1) * t2: float32 rounds value * t1, then the rest once in double.
MG_HOST_DEVICE inline float addcmul_value(float x, float t1, float t2, float value) {
  const double product = rn::mul(static_cast<double>(rn::mul(value, t1)), static_cast<double>(t2));
  return static_cast<float>(rn::add(static_cast<double>(x), product));
}
MG_HOST_DEVICE inline double addcmul_value(double x, double t1, double t2, double value) {
  return rn::add(x, rn::mul(rn::mul(value, t1), t2));
}

template <typename T>
struct AxpyFunctor {
  char* out;
  const char* b;
  OffsetCalc<2> calc;
  T alpha;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[2];
    calc.get(i, off);
    at<T>(out, off[0]) = axpy_value(at<T>(out, off[0]), at<T>(b, off[1]), alpha);
  }
};

template <typename T>
struct AddcFunctor {
  char* out;
  const char* t1;
  const char* t2;
  OffsetCalc<3> calc;
  T value;
  bool is_div;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[3];
    calc.get(i, off);
    const T x = at<T>(out, off[0]);
    const T a = at<T>(t1, off[1]);
    const T b = at<T>(t2, off[2]);
    at<T>(out, off[0]) =
        is_div ? rn::add(x, rn::div(rn::mul(value, a), b)) : addcmul_value(x, a, b, value);
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

void axpy_inplace_kernel(const Tensor& out, const Tensor& b, double alpha) {
  const OffsetCalc<2> calc = make_offset_calc<2>({&out, &b});
  dispatch_float(out, [&](auto tag) {
    using T = decltype(tag);
    launch("add_", out.numel(),
           AxpyFunctor<T>{device_data(out), device_data(b), calc, static_cast<T>(alpha)});
  });
}

void addc_inplace_kernel(bool is_div, const Tensor& out, const Tensor& t1, const Tensor& t2,
                         double value) {
  const OffsetCalc<3> calc = make_offset_calc<3>({&out, &t1, &t2});
  dispatch_float(out, [&](auto tag) {
    using T = decltype(tag);
    launch(is_div ? "addcdiv_" : "addcmul_", out.numel(),
           AddcFunctor<T>{device_data(out), device_data(t1), device_data(t2), calc,
                          static_cast<T>(value), is_div});
  });
}

}  // namespace mutagrad::cuda
