// The float32/float64 binary ops and comparisons of the per-capability kernels
// (vec_kernels.h), compiled once per CPU capability: vec_kernels_impl.h includes this inside
// namespace mutagrad::cpu::MUTAGRAD_VEC_NS { namespace { ... } }. Not a header for other files.
//
// Note [Pointwise kernels per capability]
// A binary op or comparison runs GCC/Clang vector types as wide as the build's registers (16
// bytes in the baseline build, 32 in AVX2's, 64 in AVX-512's: 16 float or 8 double lanes), one
// IEEE operation per lane, no contraction (-ffp-contract=off): every build gives the bits of the
// scalar formula (math::max_propagate_nan's (b > a || b != b) ? b : a for maximum), as each
// lane runs the instruction the scalar code runs; a NaN operand's payload propagates, and only
// an arithmetic op on two NaNs leaves which one to the operand order (x86 keeps the first; a
// compiler may swap a commutative op's operands in scalar code too: Note [NaN bits]). The AVX-512
// build ends a run with one masked load and store (the edge lanes of a vector constant mask: no
// scalar tail, and no read past the end); the others end it with the scalar formula.
//
// The reduction folds are in vec_reduce_impl.h (Note [Reduction kernels over runs]).
#ifndef MUTAGRAD_VEC_NS
#error "vec_pointwise_impl.h is included by vec_kernels_impl.h"
#endif

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX2__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

// T's vector of the build's width, the integer vector of its lane masks, and a byte per lane.
template <typename T>
struct VecTypes;
template <>
struct VecTypes<float> {
  typedef float V __attribute__((vector_size(kVecBytes)));
  typedef int32_t M __attribute__((vector_size(kVecBytes)));
  typedef int8_t B __attribute__((vector_size(kVecBytes / 4)));
};
template <>
struct VecTypes<double> {
  typedef double V __attribute__((vector_size(kVecBytes)));
  typedef int64_t M __attribute__((vector_size(kVecBytes)));
  typedef int8_t B __attribute__((vector_size(kVecBytes / 8)));
};

template <typename T>
constexpr int64_t kVecLanes = kVecBytes / static_cast<int64_t>(sizeof(T));

template <typename V>
inline V vload(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <typename V>
inline void vstore(void* p, const V& v) {
  std::memcpy(p, &v, sizeof(V));
}
template <typename T>
inline typename VecTypes<T>::V vsplat(T s) {
  typename VecTypes<T>::V v;
  for (int64_t j = 0; j < kVecLanes<T>; ++j) v[j] = s;
  return v;
}

// m ? b : a per lane (m all ones or zero), by bits: no vector ?: (Clang 14 lacks it in C++).
template <typename V, typename M>
inline V vselect(const M& m, const V& b, const V& a) {
  return (V)(((M)b & m) | ((M)a & ~m));
}

// The op's scalar formula, and the same on vectors (x, y scalars or vectors).
template <VecBinaryOp kOp, typename X>
inline X binary_formula(const X& x, const X& y) {
  if constexpr (kOp == VecBinaryOp::kAdd) return x + y;
  if constexpr (kOp == VecBinaryOp::kSub) return x - y;
  if constexpr (kOp == VecBinaryOp::kMul) return x * y;
  if constexpr (kOp == VecBinaryOp::kDiv) return x / y;
  if constexpr (kOp == VecBinaryOp::kMaximum) {
    if constexpr (std::is_floating_point_v<X>) {
      return (y > x || y != y) ? y : x;
    } else {
      return vselect((y > x) | (y != y), y, x);
    }
  }
  if constexpr (kOp == VecBinaryOp::kMinimum) {
    if constexpr (std::is_floating_point_v<X>) {
      return (y < x || y != y) ? y : x;
    } else {
      return vselect((y < x) | (y != y), y, x);
    }
  }
}

// Comparisons: a bool for scalars, the lane mask (all ones or zero) for vectors.
template <VecCompareOp kOp, typename X>
inline auto compare_formula(const X& x, const X& y) {
  if constexpr (kOp == VecCompareOp::kEq) return x == y;
  if constexpr (kOp == VecCompareOp::kNe) return x != y;
  if constexpr (kOp == VecCompareOp::kLt) return x < y;
  if constexpr (kOp == VecCompareOp::kLe) return x <= y;
  if constexpr (kOp == VecCompareOp::kGt) return x > y;
  if constexpr (kOp == VecCompareOp::kGe) return x >= y;
}

#if defined(__AVX512F__)
// The first n < lanes lanes of p, zeros beyond (never read: masked), and the masked stores.
inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline VecTypes<float>::V tail_load(const float* p, int64_t n) {
  return (VecTypes<float>::V)_mm512_maskz_loadu_ps(tail_mask(n), p);
}
inline VecTypes<double>::V tail_load(const double* p, int64_t n) {
  return (VecTypes<double>::V)_mm512_maskz_loadu_pd(static_cast<__mmask8>(tail_mask(n)), p);
}
inline void tail_store(float* p, int64_t n, const VecTypes<float>::V& v) {
  _mm512_mask_storeu_ps(p, tail_mask(n), (__m512)v);
}
inline void tail_store(double* p, int64_t n, const VecTypes<double>::V& v) {
  _mm512_mask_storeu_pd(p, static_cast<__mmask8>(tail_mask(n)), (__m512d)v);
}
template <typename B>
inline void tail_store_bytes(bool* p, int64_t n, const B& bytes) {
  __m128i v = _mm_setzero_si128();
  std::memcpy(&v, &bytes, sizeof(B));
  _mm_mask_storeu_epi8(p, tail_mask(n), v);
}
#endif

// The 0/1 bytes of a lane mask (each lane 0 or -1). In the AVX2 build GCC narrowed the lanes one
// at a time: a float comparison of 64Ki elements took 17 us there against 4-5 us with AVX-512
// (docs/performance/cpu-kernels.md, session 11). Saturating packs (float) and the sign bits
// spread to bytes by one multiplication (double: four bits at 0, 7, 14, 21, no carries) do it.
template <typename T>
inline typename VecTypes<T>::B mask_bytes(const typename VecTypes<T>::M& m) {
#if defined(__AVX2__) && !defined(__AVX512F__)
  typename VecTypes<T>::B out;
  if constexpr (std::is_same_v<T, float>) {
    const __m256i w = (__m256i)m;
    const __m128i words =
        _mm_packs_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    const __m128i bytes = _mm_and_si128(_mm_packs_epi16(words, words), _mm_set1_epi8(1));
    std::memcpy(&out, &bytes, sizeof(out));
  } else {
    const uint32_t bits = static_cast<uint32_t>(_mm256_movemask_pd((__m256d)m));
    const uint32_t bytes = (bits * 0x204081u) & 0x01010101u;
    std::memcpy(&out, &bytes, sizeof(out));
  }
  return out;
#else
  return __builtin_convertvector(m, typename VecTypes<T>::B) & 1;
#endif
}

// o[k] = op(a[k], b[k]); kBroadcast says which operand is one scalar (its [0] only). o may be a
// or b (exactly: each lane is read before it is written).
template <typename T, VecBinaryOp kOp, VecBroadcast kBroadcast>
void binary_run(T* o, const T* a, const T* b, int64_t n) {
  using V = typename VecTypes<T>::V;
  constexpr int64_t L = kVecLanes<T>;
  const V as = vsplat<T>(*a), bs = vsplat<T>(*b);
  auto load_a = [&](int64_t k) {
    return kBroadcast == VecBroadcast::kScalarA ? as : vload<V>(a + k);
  };
  auto load_b = [&](int64_t k) {
    return kBroadcast == VecBroadcast::kScalarB ? bs : vload<V>(b + k);
  };
  int64_t k = 0;
  for (; k + L <= n; k += L) vstore(o + k, binary_formula<kOp>(load_a(k), load_b(k)));
  if (k == n) return;
#if defined(__AVX512F__)
  const int64_t e = n - k;
  const V x = kBroadcast == VecBroadcast::kScalarA ? as : tail_load(a + k, e);
  const V y = kBroadcast == VecBroadcast::kScalarB ? bs : tail_load(b + k, e);
  tail_store(o + k, e, binary_formula<kOp>(x, y));
#else
  for (; k < n; ++k) {
    const T x = kBroadcast == VecBroadcast::kScalarA ? *a : a[k];
    const T y = kBroadcast == VecBroadcast::kScalarB ? *b : b[k];
    o[k] = binary_formula<kOp>(x, y);
  }
#endif
}

template <typename T, VecCompareOp kOp, VecBroadcast kBroadcast>
void compare_run(bool* o, const T* a, const T* b, int64_t n) {
  using V = typename VecTypes<T>::V;
  constexpr int64_t L = kVecLanes<T>;
  const V as = vsplat<T>(*a), bs = vsplat<T>(*b);
  auto load_a = [&](int64_t k) {
    return kBroadcast == VecBroadcast::kScalarA ? as : vload<V>(a + k);
  };
  auto load_b = [&](int64_t k) {
    return kBroadcast == VecBroadcast::kScalarB ? bs : vload<V>(b + k);
  };
  int64_t k = 0;
  for (; k + L <= n; k += L)
    vstore(o + k, mask_bytes<T>(compare_formula<kOp>(load_a(k), load_b(k))));
  if (k == n) return;
#if defined(__AVX512F__)
  const int64_t e = n - k;
  const V x = kBroadcast == VecBroadcast::kScalarA ? as : tail_load(a + k, e);
  const V y = kBroadcast == VecBroadcast::kScalarB ? bs : tail_load(b + k, e);
  tail_store_bytes(o + k, e, mask_bytes<T>(compare_formula<kOp>(x, y)));
#else
  for (; k < n; ++k) {
    const T x = kBroadcast == VecBroadcast::kScalarA ? *a : a[k];
    const T y = kBroadcast == VecBroadcast::kScalarB ? *b : b[k];
    o[k] = compare_formula<kOp>(x, y);
  }
#endif
}

// The run functions, one per (op, broadcast): resolved once per call, not per lane.
// with_broadcast calls f with the broadcast as a compile-time constant.
template <typename F>
void with_broadcast(VecBroadcast bc, const F& f) {
  using B = VecBroadcast;
  switch (bc) {
    case B::kNone:
      return f(std::integral_constant<B, B::kNone>{});
    case B::kScalarA:
      return f(std::integral_constant<B, B::kScalarA>{});
    case B::kScalarB:
      return f(std::integral_constant<B, B::kScalarB>{});
  }
}

// `rows` runs of n, run r of o, a and b at r * step[0], step[1] and step[2] elements; the op and
// the broadcast are resolved once for all of them. binary<T> and compare<T> are VecKernels'
// *_rows entries.
template <typename T, VecBinaryOp kOp>
void binary_op(VecBroadcast bc, T* o, const T* a, const T* b, int64_t n, int64_t rows,
               const int64_t* step) {
  with_broadcast(bc, [&](auto k) {
    for (int64_t r = 0; r < rows; ++r)
      binary_run<T, kOp, decltype(k)::value>(o + r * step[0], a + r * step[1], b + r * step[2], n);
  });
}

template <typename T>
void binary(VecBinaryOp op, VecBroadcast bc, T* o, const T* a, const T* b, int64_t n, int64_t rows,
            const int64_t* step) {
  if (n <= 0) return;
  switch (op) {
    case VecBinaryOp::kAdd:
      return binary_op<T, VecBinaryOp::kAdd>(bc, o, a, b, n, rows, step);
    case VecBinaryOp::kSub:
      return binary_op<T, VecBinaryOp::kSub>(bc, o, a, b, n, rows, step);
    case VecBinaryOp::kMul:
      return binary_op<T, VecBinaryOp::kMul>(bc, o, a, b, n, rows, step);
    case VecBinaryOp::kDiv:
      return binary_op<T, VecBinaryOp::kDiv>(bc, o, a, b, n, rows, step);
    case VecBinaryOp::kMaximum:
      return binary_op<T, VecBinaryOp::kMaximum>(bc, o, a, b, n, rows, step);
    case VecBinaryOp::kMinimum:
      return binary_op<T, VecBinaryOp::kMinimum>(bc, o, a, b, n, rows, step);
  }
}

template <typename T, VecCompareOp kOp>
void compare_op(VecBroadcast bc, bool* o, const T* a, const T* b, int64_t n, int64_t rows,
                const int64_t* step) {
  with_broadcast(bc, [&](auto k) {
    for (int64_t r = 0; r < rows; ++r)
      compare_run<T, kOp, decltype(k)::value>(o + r * step[0], a + r * step[1], b + r * step[2], n);
  });
}

template <typename T>
void compare(VecCompareOp op, VecBroadcast bc, bool* o, const T* a, const T* b, int64_t n,
             int64_t rows, const int64_t* step) {
  if (n <= 0) return;
  switch (op) {
    case VecCompareOp::kEq:
      return compare_op<T, VecCompareOp::kEq>(bc, o, a, b, n, rows, step);
    case VecCompareOp::kNe:
      return compare_op<T, VecCompareOp::kNe>(bc, o, a, b, n, rows, step);
    case VecCompareOp::kLt:
      return compare_op<T, VecCompareOp::kLt>(bc, o, a, b, n, rows, step);
    case VecCompareOp::kLe:
      return compare_op<T, VecCompareOp::kLe>(bc, o, a, b, n, rows, step);
    case VecCompareOp::kGt:
      return compare_op<T, VecCompareOp::kGt>(bc, o, a, b, n, rows, step);
    case VecCompareOp::kGe:
      return compare_op<T, VecCompareOp::kGe>(bc, o, a, b, n, rows, step);
  }
}
