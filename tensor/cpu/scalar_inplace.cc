// CpuBackend::binary_scalar_inplace (x op= value) and axpy_inplace (x += alpha * y, rounded
// once) over contiguous float32/float64 memory (Notes [Scalar in-place fast path] and [Fused
// add with alpha] in tensor/native/scalar_inplace.h); other layouts take the defaults.
#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

template <typename T>
void apply(BinaryOp op, T* p, int64_t n, T v) {
  // One loop per op, each vectorized by the compiler; the same operation as binary()'s.
  parallel_for(n, [&](int64_t begin, int64_t end) {
    if (op == BinaryOp::kAdd) {
      for (int64_t i = begin; i < end; ++i) p[i] = p[i] + v;
    } else if (op == BinaryOp::kSub) {
      for (int64_t i = begin; i < end; ++i) p[i] = p[i] - v;
    } else if (op == BinaryOp::kMul) {
      for (int64_t i = begin; i < end; ++i) p[i] = p[i] * v;
    } else {
      for (int64_t i = begin; i < end; ++i) p[i] = p[i] / v;
    }
  });
}

// out + alpha * b with one rounding for float (Note [Fused add with alpha]).
void axpy_float(float* out, const float* b, int64_t n, float alpha) {
  const double a = alpha;
  parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out[i] = static_cast<float>(static_cast<double>(out[i]) + a * static_cast<double>(b[i]));
    }
  });
}

void axpy_double(double* out, const double* b, int64_t n, double alpha) {
  parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = out[i] + alpha * b[i];
  });
}

// out + (value * t1) * t2: float rounds value * t1, then the rest once (in double), as
// torch's vec::fmadd(value * t1, t2, out).
void addcmul_float(float* out, const float* t1, const float* t2, int64_t n, float value) {
  parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double product = static_cast<double>(value * t1[i]) * static_cast<double>(t2[i]);
      out[i] = static_cast<float>(static_cast<double>(out[i]) + product);
    }
  });
}

void addcmul_double(double* out, const double* t1, const double* t2, int64_t n, double value) {
  parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = out[i] + (value * t1[i]) * t2[i];
  });
}

// out + (value * t1) / t2, each op rounded in T (a division: nothing to fuse).
template <typename T>
void addcdiv_loop(T* out, const T* t1, const T* t2, int64_t n, T value) {
  parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T term = (value * t1[i]) / t2[i];
      out[i] = out[i] + term;
    }
  });
}

}  // namespace

void CpuBackend::addcdiv_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2,
                                 double value) {
  if (!out.is_contiguous() || !t1.is_contiguous() || !t2.is_contiguous()) {
    Backend::addcdiv_inplace(out, t1, t2, value);
    return;
  }
  if (out.dtype() == kFloat32) {
    addcdiv_loop(static_cast<float*>(out.unsafe_impl()->data()),
                 static_cast<const float*>(t1.unsafe_impl()->data()),
                 static_cast<const float*>(t2.unsafe_impl()->data()), out.numel(),
                 static_cast<float>(value));
  } else {
    addcdiv_loop(static_cast<double*>(out.unsafe_impl()->data()),
                 static_cast<const double*>(t1.unsafe_impl()->data()),
                 static_cast<const double*>(t2.unsafe_impl()->data()), out.numel(), value);
  }
}

void CpuBackend::addcmul_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2,
                                 double value) {
  if (!out.is_contiguous() || !t1.is_contiguous() || !t2.is_contiguous()) {
    Backend::addcmul_inplace(out, t1, t2, value);
    return;
  }
  if (out.dtype() == kFloat32) {
    addcmul_float(static_cast<float*>(out.unsafe_impl()->data()),
                  static_cast<const float*>(t1.unsafe_impl()->data()),
                  static_cast<const float*>(t2.unsafe_impl()->data()), out.numel(),
                  static_cast<float>(value));
  } else {
    addcmul_double(static_cast<double*>(out.unsafe_impl()->data()),
                   static_cast<const double*>(t1.unsafe_impl()->data()),
                   static_cast<const double*>(t2.unsafe_impl()->data()), out.numel(), value);
  }
}

void CpuBackend::axpy_inplace(const Tensor& out, const Tensor& b, double alpha) {
  if (!out.is_contiguous() || !b.is_contiguous()) {
    Backend::axpy_inplace(out, b, alpha);
    return;
  }
  if (out.dtype() == kFloat32) {
    axpy_float(static_cast<float*>(out.unsafe_impl()->data()),
               static_cast<const float*>(b.unsafe_impl()->data()), out.numel(),
               static_cast<float>(alpha));
  } else {
    axpy_double(static_cast<double*>(out.unsafe_impl()->data()),
                static_cast<const double*>(b.unsafe_impl()->data()), out.numel(), alpha);
  }
}

void CpuBackend::binary_scalar_inplace(BinaryOp op, const Tensor& out, const Scalar& value) {
  if (!out.is_contiguous()) {
    Backend::binary_scalar_inplace(op, out, value);
    return;
  }
  void* data = out.unsafe_impl()->data();
  if (out.dtype() == kFloat32) {
    apply(op, static_cast<float*>(data), out.numel(), value.to<float>());
  } else {
    MG_INTERNAL_ASSERT(out.dtype() == kFloat64, "binary_scalar_inplace: float32/float64 only");
    apply(op, static_cast<double*>(data), out.numel(), value.to<double>());
  }
}

}  // namespace mutagrad::cpu
