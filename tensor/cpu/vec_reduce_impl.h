// The reduction kernels of the per-capability builds (vec_kernels.h): a run's fold and blocks of
// runs, compiled once per CPU capability. vec_kernels_impl.h includes this after
// vec_pointwise_impl.h, inside namespace mutagrad::cpu::MUTAGRAD_VEC_NS { namespace { ... } }.
// Not a header for other files.
//
// Note [Reduction kernels over runs]
// reduce.cc hands these a block of equal runs at once: `rows` runs of n contiguous elements, run
// r at x + r * xs. Two shapes, each with the bits of the one-run-at-a-time loop it replaces:
// - fold rows: run r folds into one accumulator, acc[r * as] = combine(acc[r * as], fold(run
//   r)), r increasing (as may be 0: the folds then combine into one accumulator in run order).
//   A sum's fold is Note [Reduction order]'s (8 double partials, pairwise): one run is one chain
//   of dependent adds, so kSumRows runs go at once as independent chains. A maximum or minimum
//   has no rounding: whatever the order, its value is the same, and only which signed zero or
//   which NaN it returns depends on the order. So the fast path takes the value over lanes of
//   several vectors (x86's maxps/minps, NaN lanes flagged on the side), and a run with a NaN or
//   whose result is 0 is folded again in the documented order (fold_run), which decides those
//   bits.
// - fold columns: run r folds element-wise into one row of accumulators, acc[k] =
//   combine(acc[k], x[r * xs + k]), r increasing: every accumulator sees the same operations in
//   the same order as row by row, while a block of kColVecs vectors of accumulators stays in
//   registers across all the runs.
#ifndef MUTAGRAD_VEC_NS
#error "vec_reduce_impl.h is included by vec_kernels_impl.h"
#endif

// The documented fold (Note [Reduction order] in reduce.cc), one element at a time: 8 partials
// of x[0, n) in A, element k into partial k % 8 while 8 remain, the rest into partial 0, then
// combined pairwise (0+4, 1+5, ...; 0+2, 1+3; 0+1); init is the op's identity. The order is the
// same in every build, so is the result.
template <typename A, VecBinaryOp kOp, typename T>
A fold_run(const T* x, int64_t n, A init) {
  constexpr int kFoldLanes = 8;
  A part[kFoldLanes];
  for (int j = 0; j < kFoldLanes; ++j) part[j] = init;
  int64_t k = 0;
  for (; k + kFoldLanes <= n; k += kFoldLanes) {
    for (int j = 0; j < kFoldLanes; ++j)
      part[j] = binary_formula<kOp>(part[j], static_cast<A>(x[k + j]));
  }
  for (; k < n; ++k) part[0] = binary_formula<kOp>(part[0], static_cast<A>(x[k]));
  for (int width = kFoldLanes / 2; width > 0; width /= 2) {
    for (int j = 0; j < width; ++j) part[j] = binary_formula<kOp>(part[j], part[j + width]);
  }
  return part[0];
}

// Loops over registers, unrolled so that the vectors stay in registers (GCC keeps an array it
// indexes in a loop on the stack).
#if defined(__clang__)
#define MUTAGRAD_UNROLL _Pragma("unroll")
#else
#define MUTAGRAD_UNROLL _Pragma("GCC unroll 16")
#endif

// Runs folded at once into their own 8 double partials (one chain each).
constexpr int kSumRows = kVecBytes == 16 ? 2 : 4;
// Vectors of accumulators a column block keeps in registers.
constexpr int kColVecs = 8;

using DoubleV = VecTypes<double>::V;
// Vectors of 8 double partials (1 in AVX-512, 2 in AVX2, 4 in SSE2).
constexpr int kPartVecs = static_cast<int>(8 / kVecLanes<double>);

// kVecLanes<double> elements of p, as double (GCC splits a generic conversion in two).
template <typename T>
inline DoubleV load_widened(const T* p) {
  if constexpr (std::is_same_v<T, double>) {
    return vload<DoubleV>(p);
  } else {
#if defined(__AVX512F__)
    return (DoubleV)_mm512_cvtps_pd(_mm256_loadu_ps(p));
#elif defined(__AVX2__)
    return (DoubleV)_mm256_cvtps_pd(_mm_loadu_ps(p));
#else
    typedef float Half __attribute__((vector_size(kVecBytes / 2)));
    return __builtin_convertvector(vload<Half>(p), DoubleV);
#endif
  }
}

// v's lanes rotated down by W: lane j holds v[(j + W) % L].
template <int W, typename V, size_t... I>
inline V rotate_lanes(const V& v, std::index_sequence<I...>) {
  return __builtin_shufflevector(v, v, ((I + W) % sizeof...(I))...);
}

// max or min of a and b for lanes that hold no NaN (x86's maxps/minps: a NaN operand gives b;
// the callers' NanFlags make up for that).
template <VecBinaryOp kOp, typename T>
inline typename VecTypes<T>::V value_op(const typename VecTypes<T>::V& a,
                                        const typename VecTypes<T>::V& b) {
  using V = typename VecTypes<T>::V;
  static_assert(sizeof(V) == kVecBytes);
  constexpr bool kMax = kOp == VecBinaryOp::kMaximum;
  constexpr bool kF = std::is_same_v<T, float>;
#if defined(__AVX512F__)
  if constexpr (kF)
    return (V)(kMax ? _mm512_max_ps((__m512)a, (__m512)b) : _mm512_min_ps((__m512)a, (__m512)b));
  else
    return (V)(kMax ? _mm512_max_pd((__m512d)a, (__m512d)b)
                    : _mm512_min_pd((__m512d)a, (__m512d)b));
#elif defined(__AVX2__)
  if constexpr (kF)
    return (V)(kMax ? _mm256_max_ps((__m256)a, (__m256)b) : _mm256_min_ps((__m256)a, (__m256)b));
  else
    return (V)(kMax ? _mm256_max_pd((__m256d)a, (__m256d)b)
                    : _mm256_min_pd((__m256d)a, (__m256d)b));
#else
  (void)kF;
  return kMax ? vselect(a > b, a, b) : vselect(a < b, a, b);
#endif
}

// Whether any lane of the vectors added was NaN.
template <typename T>
struct NanFlags {
  using V = typename VecTypes<T>::V;
#if defined(__AVX512F__)
  uint32_t bits = 0;
  void add(const V& x) {
    if constexpr (std::is_same_v<T, float>)
      bits |= _mm512_cmp_ps_mask((__m512)x, (__m512)x, _CMP_UNORD_Q);
    else
      bits |= _mm512_cmp_pd_mask((__m512d)x, (__m512d)x, _CMP_UNORD_Q);
  }
  bool any() const { return bits != 0; }
#elif defined(__AVX2__)
  // x86's unordered compare and a sign-bit test: GCC built the generic form below with two blends
  // per vector here, and amax along dim 1 of 256 x 256 took twice AVX-512's time.
  __m256 bits = _mm256_setzero_ps();
  void add(const V& x) {
    if constexpr (std::is_same_v<T, float>) {
      bits = _mm256_or_ps(bits, _mm256_cmp_ps((__m256)x, (__m256)x, _CMP_UNORD_Q));
    } else {
      bits = _mm256_or_ps(bits, (__m256)_mm256_cmp_pd((__m256d)x, (__m256d)x, _CMP_UNORD_Q));
    }
  }
  bool any() const { return _mm256_movemask_ps(bits) != 0; }
#else
  typename VecTypes<T>::M bits{};
  void add(const V& x) { bits |= (x != x); }
  bool any() const {
    for (int64_t j = 0; j < kVecLanes<T>; ++j) {
      if (bits[j] != 0) return true;
    }
    return false;
  }
#endif
};

// value_op over v's lanes (v holds no NaN), a tree of vector ops.
template <VecBinaryOp kOp, typename T>
inline T reduce_lanes(typename VecTypes<T>::V v) {
  constexpr size_t L = kVecLanes<T>;
  const auto lanes = std::make_index_sequence<L>{};
  if constexpr (L >= 16) v = value_op<kOp, T>(v, rotate_lanes<8>(v, lanes));
  if constexpr (L >= 8) v = value_op<kOp, T>(v, rotate_lanes<4>(v, lanes));
  if constexpr (L >= 4) v = value_op<kOp, T>(v, rotate_lanes<2>(v, lanes));
  v = value_op<kOp, T>(v, rotate_lanes<1>(v, lanes));
  return v[0];
}

// out[r] = the documented sum fold (Note [Reduction order]) of x[r * xs, r * xs + n), r < R.
template <int R, typename T>
inline void sum_folds(const T* x, int64_t xs, int64_t n, double* out) {
  DoubleV part[R][kPartVecs];
  MUTAGRAD_UNROLL
  for (int r = 0; r < R; ++r) {
    MUTAGRAD_UNROLL
    for (int i = 0; i < kPartVecs; ++i) part[r][i] = DoubleV{};
  }
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    MUTAGRAD_UNROLL
    for (int r = 0; r < R; ++r) {
      MUTAGRAD_UNROLL
      for (int i = 0; i < kPartVecs; ++i)
        part[r][i] += load_widened(x + r * xs + k + i * kVecLanes<double>);
    }
  }
  MUTAGRAD_UNROLL
  for (int r = 0; r < R; ++r) {
    if constexpr (kPartVecs == 1) {  // the pairwise steps as lane rotations: p[j] + p[j + w]
      DoubleV v = part[r][0];
      double p0 = v[0];
      for (int64_t t = k; t < n; ++t) p0 += static_cast<double>(x[r * xs + t]);
      v[0] = p0;
      const auto lanes = std::make_index_sequence<8>{};
      v = v + rotate_lanes<4>(v, lanes);
      v = v + rotate_lanes<2>(v, lanes);
      v = v + rotate_lanes<1>(v, lanes);
      out[r] = v[0];
    } else {
      double p[8];
      std::memcpy(p, part[r], sizeof(p));
      for (int64_t t = k; t < n; ++t) p[0] += static_cast<double>(x[r * xs + t]);
      for (int width = 4; width > 0; width /= 2) {
        for (int j = 0; j < width; ++j) p[j] = p[j] + p[j + width];
      }
      out[r] = p[0];
    }
  }
}

template <typename T>
void sum_rows(double* acc, int64_t as, const T* x, int64_t xs, int64_t rows, int64_t n) {
  double f[kSumRows];
  int64_t r = 0;
  for (; r + kSumRows <= rows; r += kSumRows) {
    sum_folds<kSumRows>(x + r * xs, xs, n, f);
    for (int j = 0; j < kSumRows; ++j) acc[(r + j) * as] += f[j];
  }
  if (kSumRows > 2 && r + 2 <= rows) {  // two chains (the two halves of reduce.cc's long runs)
    sum_folds<2>(x + r * xs, xs, n, f);
    acc[r * as] += f[0];
    acc[(r + 1) * as] += f[1];
    r += 2;
  }
  for (; r < rows; ++r) {
    sum_folds<1>(x + r * xs, xs, n, f);
    acc[r * as] += f[0];
  }
}

// out[r] = the extremum of x[r * xs, r * xs + n) (the op's identity for n = 0) with the bits of
// fold_run, r < R: R runs at once, K vectors of lanes each.
template <VecBinaryOp kOp, int R, int K, typename T>
inline void extremum_folds(const T* x, int64_t xs, int64_t n, T* out) {
  using V = typename VecTypes<T>::V;
  constexpr int64_t L = kVecLanes<T>;
  constexpr T id = (kOp == VecBinaryOp::kMaximum ? -1 : 1) * std::numeric_limits<T>::infinity();
  V m[R][K];
  NanFlags<T> nan[R];
  MUTAGRAD_UNROLL
  for (int r = 0; r < R; ++r) {
    MUTAGRAD_UNROLL
    for (int j = 0; j < K; ++j) m[r][j] = vsplat<T>(id);
  }
  int64_t k = 0;
  for (; k + K * L <= n; k += K * L) {
    MUTAGRAD_UNROLL
    for (int r = 0; r < R; ++r) {
      MUTAGRAD_UNROLL
      for (int j = 0; j < K; ++j) {
        const V v = vload<V>(x + r * xs + k + j * L);
        m[r][j] = value_op<kOp, T>(v, m[r][j]);
        nan[r].add(v);
      }
    }
  }
  for (; k + L <= n; k += L) {
    MUTAGRAD_UNROLL
    for (int r = 0; r < R; ++r) {
      const V v = vload<V>(x + r * xs + k);
      m[r][0] = value_op<kOp, T>(v, m[r][0]);
      nan[r].add(v);
    }
  }
  MUTAGRAD_UNROLL
  for (int r = 0; r < R; ++r) {
    V v = m[r][0];
    MUTAGRAD_UNROLL
    for (int j = 1; j < K; ++j) v = value_op<kOp, T>(v, m[r][j]);
    T f = reduce_lanes<kOp, T>(v);
    for (int64_t t = k; t < n; ++t) f = binary_formula<kOp>(f, x[r * xs + t]);
    // 0 or NaN: which zero or which NaN is the documented order's to say.
    if (nan[r].any() || f == T(0) || f != f) f = fold_run<T, kOp>(x + r * xs, n, id);
    out[r] = f;
  }
}

template <typename T, VecBinaryOp kOp>
void extremum_rows_op(T* acc, int64_t as, const T* x, int64_t xs, int64_t rows, int64_t n) {
  constexpr int R = 4;
  T f[R];
  int64_t r = 0;
  for (; r + R <= rows; r += R) {
    extremum_folds<kOp, R, 2>(x + r * xs, xs, n, f);
    for (int j = 0; j < R; ++j) acc[(r + j) * as] = binary_formula<kOp>(acc[(r + j) * as], f[j]);
  }
  for (; r < rows; ++r) {
    extremum_folds<kOp, 1, 4>(x + r * xs, xs, n, f);
    acc[r * as] = binary_formula<kOp>(acc[r * as], f[0]);
  }
}

template <typename T>
void extremum_rows(VecBinaryOp op, T* acc, int64_t as, const T* x, int64_t xs, int64_t rows,
                   int64_t n) {
  if (op == VecBinaryOp::kMinimum)
    return extremum_rows_op<T, VecBinaryOp::kMinimum>(acc, as, x, xs, rows, n);
  return extremum_rows_op<T, VecBinaryOp::kMaximum>(acc, as, x, xs, rows, n);
}

// acc[k] = op(acc[k], A(x[r * xs + k])) for r < rows (in order), k < n.
template <VecBinaryOp kOp, typename A, typename T>
void fold_cols(A* acc, const T* x, int64_t xs, int64_t rows, int64_t n) {
  using V = typename VecTypes<A>::V;
  constexpr int64_t L = kVecLanes<A>;
  auto load = [](const T* p) {
    if constexpr (std::is_same_v<A, T>) {
      return vload<V>(p);
    } else {
      return load_widened(p);
    }
  };
  int64_t k = 0;
  for (; k + kColVecs * L <= n; k += kColVecs * L) {
    V a[kColVecs];
    MUTAGRAD_UNROLL
    for (int c = 0; c < kColVecs; ++c) a[c] = vload<V>(acc + k + c * L);
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * xs + k;
      MUTAGRAD_UNROLL
      for (int c = 0; c < kColVecs; ++c) a[c] = binary_formula<kOp>(a[c], load(row + c * L));
    }
    MUTAGRAD_UNROLL
    for (int c = 0; c < kColVecs; ++c) vstore(acc + k + c * L, a[c]);
  }
  for (; k + L <= n; k += L) {
    V a = vload<V>(acc + k);
    for (int64_t r = 0; r < rows; ++r) a = binary_formula<kOp>(a, load(x + r * xs + k));
    vstore(acc + k, a);
  }
  for (; k < n; ++k) {
    A a = acc[k];
    for (int64_t r = 0; r < rows; ++r) a = binary_formula<kOp>(a, static_cast<A>(x[r * xs + k]));
    acc[k] = a;
  }
}

void sum_rows_f32(double* acc, int64_t as, const float* x, int64_t xs, int64_t rows, int64_t n) {
  sum_rows<float>(acc, as, x, xs, rows, n);
}
void sum_rows_f64(double* acc, int64_t as, const double* x, int64_t xs, int64_t rows, int64_t n) {
  sum_rows<double>(acc, as, x, xs, rows, n);
}
void extremum_rows_f32(VecBinaryOp op, float* acc, int64_t as, const float* x, int64_t xs,
                       int64_t rows, int64_t n) {
  extremum_rows<float>(op, acc, as, x, xs, rows, n);
}
void extremum_rows_f64(VecBinaryOp op, double* acc, int64_t as, const double* x, int64_t xs,
                       int64_t rows, int64_t n) {
  extremum_rows<double>(op, acc, as, x, xs, rows, n);
}
void sum_cols_f32(double* acc, const float* x, int64_t xs, int64_t rows, int64_t n) {
  fold_cols<VecBinaryOp::kAdd>(acc, x, xs, rows, n);
}
void sum_cols_f64(double* acc, const double* x, int64_t xs, int64_t rows, int64_t n) {
  fold_cols<VecBinaryOp::kAdd>(acc, x, xs, rows, n);
}
void extremum_cols_f32(VecBinaryOp op, float* acc, const float* x, int64_t xs, int64_t rows,
                       int64_t n) {
  if (op == VecBinaryOp::kMinimum) return fold_cols<VecBinaryOp::kMinimum>(acc, x, xs, rows, n);
  fold_cols<VecBinaryOp::kMaximum>(acc, x, xs, rows, n);
}
void extremum_cols_f64(VecBinaryOp op, double* acc, const double* x, int64_t xs, int64_t rows,
                       int64_t n) {
  if (op == VecBinaryOp::kMinimum) return fold_cols<VecBinaryOp::kMinimum>(acc, x, xs, rows, n);
  fold_cols<VecBinaryOp::kMaximum>(acc, x, xs, rows, n);
}

// One run: the folds of vec_kernels.h's sum_f32 ... add_widened_f32.
double sum_f32(const float* x, int64_t n) {
  double f;
  sum_folds<1>(x, 0, n, &f);
  return f;
}
double sum_f64(const double* x, int64_t n) {
  double f;
  sum_folds<1>(x, 0, n, &f);
  return f;
}
template <typename T>
T extremum(VecBinaryOp op, const T* x, int64_t n) {
  T f;
  if (op == VecBinaryOp::kMinimum)
    extremum_folds<VecBinaryOp::kMinimum, 1, 4>(x, 0, n, &f);
  else
    extremum_folds<VecBinaryOp::kMaximum, 1, 4>(x, 0, n, &f);
  return f;
}
float extremum_f32(VecBinaryOp op, const float* x, int64_t n) { return extremum<float>(op, x, n); }
double extremum_f64(VecBinaryOp op, const double* x, int64_t n) {
  return extremum<double>(op, x, n);
}
void add_widened_f32(double* acc, const float* x, int64_t n) { sum_cols_f32(acc, x, 0, 1, n); }
