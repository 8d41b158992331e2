// CpuBackend::activation_backward: tanh's and sigmoid's backward formulas in one loop over
// contiguous float32/float64 memory (Note [Fused activation backward] in
// tensor/native/activation_backward.h); other layouts take the default's binary kernels.
#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

// Each step rounds in T, in the formula's order: this library is built without floating-point
// contraction (CPU_COPTS), and GCC's vectorized loop keeps the per-element operations.
template <typename T>
void activation_backward_loop(ActivationGrad op, T* out, const T* grad, const T* y, int64_t n) {
  const T one = 1;
  parallel_for(n, [&](int64_t begin, int64_t end) {
    if (op == ActivationGrad::kTanh) {
      for (int64_t i = begin; i < end; ++i) {
        const T square = y[i] * y[i];
        const T slope = one - square;
        out[i] = grad[i] * slope;
      }
    } else {
      for (int64_t i = begin; i < end; ++i) {
        const T rest = one - y[i];
        const T slope = y[i] * rest;
        out[i] = grad[i] * slope;
      }
    }
  });
}

}  // namespace

void CpuBackend::activation_backward(ActivationGrad op, const Tensor& out, const Tensor& grad,
                                     const Tensor& y) {
  if (!out.is_contiguous() || !grad.is_contiguous() || !y.is_contiguous()) {
    Backend::activation_backward(op, out, grad, y);
    return;
  }
  if (out.dtype() == kFloat32) {
    activation_backward_loop(op, static_cast<float*>(out.unsafe_impl()->data()),
                             static_cast<const float*>(grad.unsafe_impl()->data()),
                             static_cast<const float*>(y.unsafe_impl()->data()), out.numel());
  } else {
    MG_INTERNAL_ASSERT(out.dtype() == kFloat64, "activation_backward: float32/float64 only");
    activation_backward_loop(op, static_cast<double*>(out.unsafe_impl()->data()),
                             static_cast<const double*>(grad.unsafe_impl()->data()),
                             static_cast<const double*>(y.unsafe_impl()->data()), out.numel());
  }
}

}  // namespace mutagrad::cpu
