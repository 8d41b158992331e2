// The loops of the one-pass optimizer steps (Note [Fused optimizer steps] in fused_optim.h) and
// of Backend::fma on the CPU (VecKernels::fma_f32 / fma_f64), compiled once per CPU capability:
// vec_kernels_impl.h includes this inside namespace mutagrad::cpu::MUTAGRAD_VEC_NS { namespace {
// ... } }. Not a header for other files.
//
// Note [Fused steps per capability]
// Every operation here is one IEEE operation (+, *, /, sqrt, fused multiply-add) and every
// capability's library is compiled with -ffp-contract=off, so no build fuses a multiply and an
// add that the formula does not: each build computes the same bits, and the same as the
// op-by-op step in the baseline build; only the register width changes. The fused
// multiply-adds are __builtin_fma: a vfmadd in the AVX2 and AVX-512 builds, libm's correctly
// rounded fma in the baseline build (Note [Torch's fused multiply-adds] in tensor/native/fma.h).
// Nothing here may call an inline function defined outside this namespace (the linker could
// keep this build's copy for every caller: Note [CPU capability dispatch]); hence the builtins
// rather than std::fma, and max_nan below instead of math::max_propagate_nan.
#ifndef MUTAGRAD_VEC_NS
#error "fused_optim_impl.h is included by vec_kernels_impl.h"
#endif

inline float fused_multiply_add(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline double fused_multiply_add(double a, double b, double c) { return __builtin_fma(a, b, c); }

// x + alpha * y, rounded once (add(y, alpha=)).
template <typename T>
inline T axpy(T x, T y, T alpha) {
  return fused_multiply_add(alpha, y, x);
}

// x + (value * t1) * t2: value * t1 rounded, then one FMA (addcmul).
template <typename T>
inline T addcmul(T x, T t1, T t2, T value) {
  return fused_multiply_add(value * t1, t2, x);
}

// x + w * (y - x) as torch's lerp: from x for a small weight, from y for the others.
template <typename T>
inline T lerp(T x, T y, T w) {
  const T d = y - x;
  const T abs_w = w < T(0) ? -w : w;  // no std::abs: see the Note
  return abs_w < T(0.5) ? fused_multiply_add(w, d, x) : fused_multiply_add(-d, T(1) - w, y);
}

// math::max_propagate_nan's formula.
template <typename T>
inline T max_nan(T a, T b) {
  return (b > a || b != b) ? b : a;
}

// o[k] = f(a[k], b[k], c[k]) over contiguous memory. __restrict where it holds: o is a (in
// place) or a fresh tensor; an operand that is o besides a (x.add_(x, alpha=2): the same
// elements, each read before it is written) takes the loop without it.
template <typename T, typename F>
void fma_flat(T* o, const T* a, const T* b, const T* c, int64_t n, const F& f) {
  if (b == o || c == o) {
    for (int64_t k = 0; k < n; ++k) o[k] = f(a[k], b[k], c[k]);
    return;
  }
  const T* __restrict bb = b;
  const T* __restrict cc = c;
  if (a == o) {
    T* __restrict oo = o;
    for (int64_t k = 0; k < n; ++k) oo[k] = f(oo[k], bb[k], cc[k]);
    return;
  }
  T* __restrict oo = o;
  const T* __restrict aa = a;
  for (int64_t k = 0; k < n; ++k) oo[k] = f(aa[k], bb[k], cc[k]);
}

// VecKernels::fma_f32 / fma_f64 (vec_kernels.h): one run of Backend::fma.
template <typename T>
void fma_run(VecFmaOp op, T* o, const T* a, const T* b, const T* c, T value, int64_t n,
             const int64_t* s) {
  const T* third = c != nullptr ? c : b;  // read, not used, by the ops that take `value`
  const int64_t s3 = c != nullptr ? s[3] : s[2];
  const auto run = [&](const auto& f) {
    if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s3 == 1) return fma_flat(o, a, b, third, n, f);
    for (int64_t k = 0; k < n; ++k) o[k * s[0]] = f(a[k * s[1]], b[k * s[2]], third[k * s3]);
  };
  switch (op) {
    case VecFmaOp::kAddAlpha:
      return run([value](T x, T y, T) { return axpy(x, y, value); });
    case VecFmaOp::kAddcmul:
      return run([value](T x, T y, T z) { return addcmul(x, y, z, value); });
    case VecFmaOp::kLerp:
      if (c == nullptr) return run([value](T x, T y, T) { return lerp(x, y, value); });
      return run([](T x, T y, T w) { return lerp(x, y, w); });
  }
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

// Note [A unit alpha is a plain add]
// axpy(x, y, 1) is the sum x + y: the product 1 * y is exact, so the FMA rounds x + y once, as
// + does. SGD's momentum buffer without dampening adds the gradient so, one add per element,
// with the same bits (fused_step_test compares them with the op-by-op step).
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
