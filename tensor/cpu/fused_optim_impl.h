// The loops of the one-pass optimizer steps (Note [Fused optimizer steps] in fused_optim.h),
// compiled once per CPU capability: vec_kernels_impl.h includes this inside
// namespace mutagrad::cpu::MUTAGRAD_VEC_NS { namespace { ... } }. Not a header for other files.
//
// Note [Fused steps per capability]
// Every operation here is one IEEE operation (+, *, /, sqrt, conversions) and every capability's
// library is compiled with -ffp-contract=off, so no build fuses a multiply and an add: each
// build computes the same bits, and the same as the op-by-op step in the baseline build; only
// the register width changes (a float32 add_(alpha) rounds through double: 2 doubles per SSE2
// register, 4 per AVX2 one, 8 per AVX-512 one). Nothing here may call an inline function
// defined outside this namespace (the linker could keep this build's copy for every caller:
// Note [CPU capability dispatch]); hence max_nan below instead of math::max_propagate_nan.
#ifndef MUTAGRAD_VEC_NS
#error "fused_optim_impl.h is included by vec_kernels_impl.h"
#endif

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

// math::max_propagate_nan's formula.
template <typename T>
inline T max_nan(T a, T b) {
  return (b > a || b != b) ? b : a;
}

// The loops take each option as a template argument, so the inner loop has no branch and the
// compiler vectorizes it (GCC unswitches no loop at -O2); __restrict: the caller checked that no
// two operands overlap.
template <typename T, bool kMaximize, bool kL2, bool kDecayParam, bool kAmsgrad>
void adam_loop(const AdamStep<T>& s, int64_t begin, int64_t end) {
  T* __restrict param = s.param;
  const T* __restrict grad = s.grad;
  T* __restrict exp_avg = s.exp_avg;
  T* __restrict exp_avg_sq = s.exp_avg_sq;
  T* __restrict max_sq = s.max_exp_avg_sq;
  // Each number as the op-by-op step converts it (Scalar::to<T>, static_cast<float>(alpha)).
  const T beta1 = static_cast<T>(s.beta1), beta2 = static_cast<T>(s.beta2);
  const T one_minus_beta1 = static_cast<T>(1 - s.beta1);
  const T one_minus_beta2 = static_cast<T>(1 - s.beta2);
  const T wd = static_cast<T>(s.weight_decay);
  const T bc2 = static_cast<T>(s.bias_correction2_sqrt);
  const T eps = static_cast<T>(s.eps);
  const T neg_step = static_cast<T>(-s.step_size);
  const T decay = static_cast<T>(1 - s.lr * s.weight_decay);
  for (int64_t i = begin; i < end; ++i) {
    T g = kMaximize ? -grad[i] : grad[i];
    const T p = param[i];
    if constexpr (kL2) g = axpy(g, p, wd);
    const T m = axpy(exp_avg[i] * beta1, g, one_minus_beta1);
    const T v = addcmul(exp_avg_sq[i] * beta2, g, g, one_minus_beta2);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    T second = v;
    if constexpr (kAmsgrad) {
      second = max_nan<T>(max_sq[i], v);
      max_sq[i] = second;
    }
    const T denom = std::sqrt(second) / bc2 + eps;
    const T base = kDecayParam ? p * decay : p;
    param[i] = base + (neg_step * m) / denom;
  }
}

// Note [A unit alpha needs no double]
// axpy(x, y, 1) is the float sum x + y: the product 1 * y is exact, and a sum of two floats
// rounded to double and then to float is the correctly rounded float sum (double's 53 bits are
// at least 2 * 24 + 2, so the double rounding is innocuous for one operation). SGD's momentum
// buffer without dampening adds the gradient so, as one float add per element instead of a trip
// through double, with the same bits (fused_step_test compares them with the op-by-op step).
template <typename T, bool kMaximize, bool kWeightDecay, bool kMomentum, bool kNesterov,
          bool kUnitDampening>
void sgd_loop(const SGDStep<T>& s, int64_t begin, int64_t end) {
  T* __restrict param = s.param;
  const T* __restrict grad = s.grad;
  T* __restrict momentum_buffer = s.momentum_buffer;
  const T wd = static_cast<T>(s.weight_decay);
  const T momentum = static_cast<T>(s.momentum);
  const T one_minus_dampening = static_cast<T>(1 - s.dampening);
  const T neg_lr = static_cast<T>(-s.lr);
  for (int64_t i = begin; i < end; ++i) {
    T d = kMaximize ? -grad[i] : grad[i];
    if constexpr (kWeightDecay) d = axpy(d, param[i], wd);
    if constexpr (kMomentum) {
      const T decayed = momentum_buffer[i] * momentum;
      const T buf = kUnitDampening ? decayed + d : axpy(decayed, d, one_minus_dampening);
      momentum_buffer[i] = buf;
      d = kNesterov ? axpy(d, buf, momentum) : buf;
    }
    param[i] = axpy(param[i], d, neg_lr);
  }
}

// Calls f(std::bool_constant<b0>{}, std::bool_constant<b1>{}, ...) for the run-time flags.
template <typename F>
void with_flags(F&& f) {
  f();
}
template <typename F, typename... Rest>
void with_flags(F&& f, bool first, Rest... rest) {
  if (first) {
    with_flags([&](auto... b) { f(std::true_type{}, b...); }, rest...);
  } else {
    with_flags([&](auto... b) { f(std::false_type{}, b...); }, rest...);
  }
}

// Elements [begin, end) of the step (fused_optim.cc splits the range across threads).
template <typename T>
void adam_range(const AdamStep<T>& s, int64_t begin, int64_t end) {
  with_flags(
      [&](auto maximize, auto l2, auto decay_param, auto amsgrad) {
        adam_loop<T, decltype(maximize)::value, decltype(l2)::value, decltype(decay_param)::value,
                  decltype(amsgrad)::value>(s, begin, end);
      },
      s.maximize, !s.decoupled && s.weight_decay != 0, s.decoupled && s.weight_decay != 0,
      s.max_exp_avg_sq != nullptr);
}

template <typename T>
void sgd_range(const SGDStep<T>& s, int64_t begin, int64_t end) {
  with_flags(
      [&](auto maximize, auto weight_decay, auto momentum, auto nesterov, auto unit_dampening) {
        sgd_loop<T, decltype(maximize)::value, decltype(weight_decay)::value,
                 decltype(momentum)::value, decltype(nesterov)::value,
                 decltype(unit_dampening)::value>(s, begin, end);
      },
      s.maximize, s.weight_decay != 0, s.momentum_buffer != nullptr,
      s.momentum_buffer != nullptr && s.nesterov,
      s.momentum_buffer != nullptr && static_cast<T>(1 - s.dampening) == T(1));
}
