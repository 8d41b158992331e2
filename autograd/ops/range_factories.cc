// eye, linspace and logspace (shape_ops.h). The values are computed on the host, in torch's
// arithmetic, and copied to the requested device.
//
// Note [linspace's values]
// torch 1.13 computes linspace with step = (end - start) / (steps - 1) in the result's type
// (double for integers): element i < steps / 2 is start + step * i, the others are
// end - step * (steps - i - 1), each formula rounded once (its CPU kernel is compiled with
// fused multiply-add). Its CPU kernel (RangeFactoriesKernel.cpp, the AVX2 build torch picks on
// x86) also vectorizes: the first (steps / (2 * L)) * 2 * L elements come in blocks of
// L = 32 / sizeof(element) whose first element is the formula above and whose element j is
// first + j * step (two roundings, not fused); the tail uses the formula. We reproduce that
// arithmetic, so linspace matches torch's CPU result bit for bit (tested for float32, float64
// and the integer dtypes), on every device. Not reproduced: torch's values for more than 32768
// steps also depend on how its thread pool splits the range (each chunk restarts the blocks),
// and torch's CUDA kernel uses the formula for every element.
// logspace is base ** x with x computed as above but in double and not fused (torch's loop in
// RangeFactories.cpp), then converted to the result's type.
#include <cmath>
#include <type_traits>

#include "autograd/ops/shape_ops.h"
#include "tensor/native/copy.h"
#include "tensor/native/views.h"

namespace mutagrad {
namespace {

// a + b * c with two roundings, whatever the compiler's contraction setting.
template <typename T>
T add_product_unfused(T a, T b, T c) {
  volatile T product = b * c;
  return a + product;
}

// torch's formula for element idx (Note [linspace's values]), in Step arithmetic.
template <typename T, typename Step>
T linspace_formula(T start, T end, Step step, int64_t idx, int64_t steps) {
  if (idx < steps / 2) {
    return static_cast<T>(std::fma(step, static_cast<Step>(idx), static_cast<Step>(start)));
  }
  return static_cast<T>(
      std::fma(-step, static_cast<Step>(steps - idx - 1), static_cast<Step>(end)));
}

template <typename T>
void fill_linspace(T* out, const Scalar& start_value, const Scalar& end_value, int64_t steps) {
  using Step = std::conditional_t<std::is_integral_v<T>, double, T>;
  const T start = start_value.to<T>();
  const T end = end_value.to<T>();
  if (steps == 1) {
    out[0] = start;
    return;
  }
  const Step step =
      (static_cast<Step>(end) - static_cast<Step>(start)) / static_cast<Step>(steps - 1);
  constexpr int64_t kLanes = 32 / static_cast<int64_t>(sizeof(T));
  const int64_t blocked = steps / (2 * kLanes) * (2 * kLanes);
  int64_t idx = 0;
  for (; idx < blocked; idx += kLanes) {
    const T first = linspace_formula(start, end, step, idx, steps);
    out[idx] = first;
    for (int64_t j = 1; j < kLanes; ++j) {
      out[idx + j] =
          static_cast<T>(add_product_unfused(static_cast<Step>(first), static_cast<Step>(j), step));
    }
  }
  for (; idx < steps; ++idx) out[idx] = linspace_formula(start, end, step, idx, steps);
}

template <typename T>
void fill_logspace(T* out, const Scalar& start_value, const Scalar& end_value, int64_t steps,
                   double base) {
  if (steps == 1) {
    out[0] = static_cast<T>(std::pow(base, start_value.to<double>()));
    return;
  }
  const T start = start_value.to<T>();
  const T end = end_value.to<T>();
  const double step = static_cast<double>(static_cast<T>(end - start)) / (steps - 1);
  for (int64_t i = 0; i < steps; ++i) {
    const double x = i < steps / 2 ? add_product_unfused(static_cast<double>(start), step,
                                                         static_cast<double>(i))
                                   : add_product_unfused(static_cast<double>(end), -step,
                                                         static_cast<double>(steps - i - 1));
    out[i] = static_cast<T>(std::pow(base, x));
  }
}

void check_steps(int64_t steps, ScalarType dtype, const char* op) {
  if (steps < 0) {
    throw ValueError(str(op, "(): number of steps must be non-negative, got ", steps));
  }
  if (dtype == kBool) {
    throw DTypeError(str(op, "(): \"", op,
                         "_cpu\" not implemented for 'Bool'; ask for an "
                         "integer or floating dtype"));
  }
}

// A host tensor filled by fill(T*), then moved to options' device.
template <typename Fill>
Tensor host_range(int64_t steps, TensorOptions options, Fill&& fill) {
  // Note [Reduced dtypes]: float16/bfloat16 (and the narrow integers) are computed in their
  // opmath dtype and rounded once.
  Tensor host = empty({steps}, opmath_dtype(options.dtype()));
  if (steps > 0) {
    dispatch_compute_dtype(host.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) fill(host.data_ptr<T>());
    });
  }
  return native::to(native::to(host, options.dtype()), options.device());
}

}  // namespace

Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions options) {
  const int64_t cols = m.value_or(n);
  if (n < 0) throw ValueError(str("eye(): n must be greater or equal to 0, got ", n));
  if (cols < 0) throw ValueError(str("eye(): m must be greater or equal to 0, got ", cols));
  Tensor result = zeros({n, cols}, options);
  if (n > 0 && cols > 0) native::fill_(native::diagonal(result, 0, 0, 1), Scalar(1));
  return result;
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options) {
  check_steps(steps, options.dtype(), "linspace");
  return host_range(steps, options, [&](auto* out) { fill_linspace(out, start, end, steps); });
}

Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base,
                TensorOptions options) {
  check_steps(steps, options.dtype(), "logspace");
  return host_range(steps, options,
                    [&](auto* out) { fill_logspace(out, start, end, steps, base); });
}

}  // namespace mutagrad
