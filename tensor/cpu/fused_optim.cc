// One-pass optimizer steps: see fused_optim.h (Note [Fused optimizer steps]).
#include "tensor/cpu/fused_optim.h"

#include <cmath>

#include "tensor/cpu/parallel.h"
#include "tensor/element_math.h"

namespace mutagrad::cpu {
namespace {

// x + alpha * y as CpuBackend::axpy_inplace: float rounds alpha to float, then the sum once in
// double; double rounds the product and the sum.
inline float axpy(float x, float y, float alpha) {
  return static_cast<float>(static_cast<double>(x) +
                            static_cast<double>(alpha) * static_cast<double>(y));
}
inline double axpy(double x, double y, double alpha) { return x + alpha * y; }

// x + (value * t1) * t2 as addcmul_inplace: float rounds value * t1, then the rest once.
inline float addcmul(float x, float t1, float t2, float value) {
  const double product = static_cast<double>(value * t1) * static_cast<double>(t2);
  return static_cast<float>(static_cast<double>(x) + product);
}
inline double addcmul(double x, double t1, double t2, double value) {
  return x + (value * t1) * t2;
}

}  // namespace

template <typename T>
void adam_step(const AdamStep<T>& s) {
  // Each number as the op-by-op step converts it (Scalar::to<T>, static_cast<float>(alpha)).
  const T beta1 = static_cast<T>(s.beta1), beta2 = static_cast<T>(s.beta2);
  const T one_minus_beta1 = static_cast<T>(1 - s.beta1);
  const T one_minus_beta2 = static_cast<T>(1 - s.beta2);
  const T wd = static_cast<T>(s.weight_decay);
  const T bc2 = static_cast<T>(s.bias_correction2_sqrt);
  const T eps = static_cast<T>(s.eps);
  const T neg_step = static_cast<T>(-s.step_size);
  const T decay = static_cast<T>(1 - s.lr * s.weight_decay);
  const bool l2 = !s.decoupled && s.weight_decay != 0;
  const bool decay_param = s.decoupled && s.weight_decay != 0;
  parallel_for(s.n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T g = s.maximize ? -s.grad[i] : s.grad[i];
      const T p = s.param[i];
      if (l2) g = axpy(g, p, wd);
      const T m = axpy(s.exp_avg[i] * beta1, g, one_minus_beta1);
      const T v = addcmul(s.exp_avg_sq[i] * beta2, g, g, one_minus_beta2);
      s.exp_avg[i] = m;
      s.exp_avg_sq[i] = v;
      T second = v;
      if (s.max_exp_avg_sq != nullptr) {
        second = math::max_propagate_nan<T>(s.max_exp_avg_sq[i], v);
        s.max_exp_avg_sq[i] = second;
      }
      const T denom = std::sqrt(second) / bc2 + eps;
      const T base = decay_param ? p * decay : p;
      s.param[i] = base + (neg_step * m) / denom;
    }
  });
}

template <typename T>
void sgd_step(const SGDStep<T>& s) {
  const T wd = static_cast<T>(s.weight_decay);
  const T momentum = static_cast<T>(s.momentum);
  const T one_minus_dampening = static_cast<T>(1 - s.dampening);
  const T neg_lr = static_cast<T>(-s.lr);
  parallel_for(s.n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T d = s.maximize ? -s.grad[i] : s.grad[i];
      if (s.weight_decay != 0) d = axpy(d, s.param[i], wd);
      if (s.momentum_buffer != nullptr) {
        const T buf = axpy(s.momentum_buffer[i] * momentum, d, one_minus_dampening);
        s.momentum_buffer[i] = buf;
        d = s.nesterov ? axpy(d, buf, momentum) : buf;
      }
      s.param[i] = axpy(s.param[i], d, neg_lr);
    }
  });
}

template void adam_step<float>(const AdamStep<float>&);
template void adam_step<double>(const AdamStep<double>&);
template void sgd_step<float>(const SGDStep<float>&);
template void sgd_step<double>(const SGDStep<double>&);

}  // namespace mutagrad::cpu
