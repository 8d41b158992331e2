// The source of the per-capability kernels (Note [CPU capability dispatch] in vec_kernels.h).
// Not a header for other files: vec_kernels_baseline.cc, vec_kernels_avx2.cc and
// vec_kernels_avx512.cc include it with MUTAGRAD_VEC_NS set to their namespace (and the AVX ones
// with namespace Eigen renamed).
#ifndef MUTAGRAD_VEC_NS
#error "vec_kernels_impl.h is included by vec_kernels_<capability>.cc with MUTAGRAD_VEC_NS set"
#endif

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tensor/cpu/vec_kernels.h"

namespace mutagrad::cpu::MUTAGRAD_VEC_NS {
namespace {

// Note [Vectorized transcendental edges]
// Eigen 3.4's SIMD exp and log are wrong at the edges: exp clamps its argument (exp(-inf) is
// 2.9e-39 in float and 5.6e-309 in double, not 0), log flushes subnormal inputs (log(1e-40f) is
// -87.3, not -92.1); the scalar head and tail of a run went through std::, so a result depended
// on its SIMD lane. Invariant: a vectorized kernel returns exactly f(x), its scalar std::
// function, for every x outside the op's VecDomain, and Eigen's value, within a few ulps of
// f(x), only inside it. Every domain leaves out nan; exp's and sigmoid's leave out the inputs
// whose exp is subnormal, zero or infinite, but for those where f is +0 exactly (Note [Exact
// zeros in the vector pass]), log's all but the positive normal numbers and the zeros (f is
// -inf exactly), sin's and cos's |x| > 65536. Inside them Eigen was measured accurate (tanh at
// +-inf too) in the SSE2, AVX2/FMA and AVX-512 builds. Why a check per element: it is one
// vectorized pass (a few percent of exp's time), so ordinary inputs keep Eigen's speed. A block
// with inputs outside still runs Eigen over all its lanes; only the lanes outside take f, one at a
// time (a bit mask per line of 16 finds them), and a repeated input (a mask's -inf) reuses the last
// f. tests/tensor/pointwise_edges_test.cc checks it in every lane, under each capability.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "vec_key reads the high word");

// The high 32 bits of *x: all of a float; sign, exponent and 20 mantissa bits of a double. Keys
// are compared in 32-bit lanes, which SSE2 has for float and double alike.
template <typename T>
uint32_t vec_key(const T* x) {
  uint32_t key;
  std::memcpy(&key, reinterpret_cast<const char*>(x) + sizeof(T) - sizeof(key), sizeof(key));
  return key;
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// The inputs an op's vector function is used for: the keys with ((key & mask) - lo) <= width
// (unsigned), and the inputs where f(x) is one value exactly, `exact_value`, which the vector
// pass blends in (Note [Exact zeros in the vector pass]): x <= exact_bound (never nan) for
// kAtMost, x == 0 (either sign) for kZero. A double's bound is rounded outwards to its key: by
// at most 2^-20 relative.
enum class ExactKind { kNone, kAtMost, kZero };
template <typename T>
struct VecDomain {
  uint32_t mask, lo, width;
  ExactKind exact = ExactKind::kNone;
  T exact_bound = T(0), exact_value = T(0);

  static VecDomain symmetric(T bound) {  // [-bound, bound]
    return {0x7fffffffu, 0, vec_key(&bound)};
  }
  static VecDomain positive(T lo, T hi) {  // [lo, hi], 0 < lo <= hi
    return {0xffffffffu, vec_key(&lo), vec_key(&hi) - vec_key(&lo)};
  }
  VecDomain with_exact(ExactKind kind, T bound, T value) const {
    return {mask, lo, width, kind, bound, value};
  }
  bool in_range(const T* x) const { return ((vec_key(x) & mask) - lo) <= width; }
  bool is_exact(T x) const {
    return exact == ExactKind::kAtMost ? x <= exact_bound : exact == ExactKind::kZero && x == T(0);
  }
  bool is_symmetric() const { return mask == 0x7fffffffu && lo == 0; }
  // [low(), high()]: exactly the T in the key range, for a float compare (false for nan), for
  // every domain with an exact pass (a symmetric one up to infinity, tanh's, has none: its
  // double high() is a nan). A double's key is its high word: its low word runs from all zeros
  // to all ones.
  T high() const { return from_key(is_symmetric() ? width : lo + width, ~uint32_t{0}); }
  T low() const { return is_symmetric() ? -high() : from_key(lo, 0); }

  // Where x[0, n) lies: all in the key range, all in the domain (some of them exact), or not.
  // The keys alone first: the cheaper loop, and the only one a block of ordinary inputs needs.
  enum Coverage { kInRange, kWithExact, kPartly };
  Coverage coverage(const T* x, int64_t n) const {
    uint32_t outside = 0;  // no early exit, no branch: the loops vectorize
    for (int64_t k = 0; k < n; ++k) outside |= !in_range(x + k);
    if (outside == 0) return kInRange;
    outside = 0;  // a loop per kind: is_exact's branch would keep them scalar
    if (exact == ExactKind::kAtMost) {
      for (int64_t k = 0; k < n; ++k) outside |= !(in_range(x + k) | (x[k] <= exact_bound));
    } else if (exact == ExactKind::kZero) {
      for (int64_t k = 0; k < n; ++k) outside |= !(in_range(x + k) | (x[k] == T(0)));
    } else {
      return kPartly;
    }
    return outside == 0 ? kWithExact : kPartly;
  }

 private:
  static T from_key(uint32_t key, uint32_t low_word) {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const Bits bits = sizeof(T) == 4 ? Bits{key} : (Bits{key} << 31 << 1) | low_word;
    T x;
    std::memcpy(&x, &bits, sizeof(x));
    return x;
  }
};

// Note [Exact zeros in the vector pass]
// exp(x) is +0 for every x at or below -104 (float) or -746 (double), a mask's -inf among them,
// and so is sigmoid(x) = 1 / (1 + exp(-x)) at or below -89 or -710 (exp(-x) overflows). Eigen's
// exp clamps its argument and returns a tiny number there, not 0, so these inputs were outside
// the domain: in a masked input nearly every block took the lane-by-lane path, and a masked
// sigmoid ran at 1.85x libtorch 2.x's time. The domain now counts them in (ExactKind::kAtMost),
// and a block of inputs in the key range or at most the bound runs one loop over packets,
// packets_exact: such a lane goes into the approximation as 1 (no infinity and no subnormal
// result slows it down) and comes out as +0 by a blend. log's zeros (either sign; log is -inf
// there: a masked log's or an entropy's) are the same kind of input since session 12
// (ExactKind::kZero: masked log f32 47 -> 29 us, 23 us with log_packet, AVX-512). Inside the key
// range it computes what Eigen's expression does (the same packet functions, or exp_packet's equal
// bits). The thresholds keep a margin from where f reaches 0 (-103.97 and -745.13 for exp, -88.72
// and -709.78 for sigmoid); the margin stays outside and takes f. Which loop a block takes: after
// a block of ordinary inputs, the key-only check (one cheap pass) and then the plain loop, so
// unmasked inputs pay nothing; after a block with exact inputs, packets_exact at once, which
// tests the domain as it computes (a separate pass for both tests cost a masked sigmoid 4 us of
// its 18), and only if some lane was outside does the block go back to the check and the
// lane-by-lane path. pointwise_edges_test checks both sides of every threshold in every lane,
// and masked stretches that end in each edge value, under each capability.

// Note [Exp without the range work]
// Eigen 3.4's pexp clamps its argument, scales by 2^m in four multiplications (pldexp, built for
// any m, subnormal results included) and takes a max with the argument (for infinities). Inside
// exp's and sigmoid's VecDomain (|x| <= 87 in float, about 708 in double) none of that changes
// a bit: m stays within the normal exponents, each scaling is exact, and exp(x) > x. exp_packet
// takes Eigen's steps in Eigen's order (the Cephes polynomial in float, its rational form in
// double, the same packet functions, so FMA or not as the build's pmadd), then builds 2^m
// directly: m + (bias + 2^mantissa bits) holds m + bias in its low bits, shifted into the
// exponent: under AVX2, 12 of the 45 instructions of a masked sigmoid, and exp f32 went from
// 19.5 to 11.4 us on 64Ki elements (docs/performance/cpu-kernels.md, session 12). Eigen's
// AVX-512 float exp (pexp<Packet16f>) builds 2^m directly already but clamps and takes the max
// too; it reduces x - m ln 2 in one FMA where the generic one takes two steps, which
// exp_packet follows there (kOneStepReduction). Outside the domain the lanes hold garbage
// (never a trap); the callers take f there. Checked once bit for bit against Eigen's pexp, on every
// float of the domain and 1.35e8 doubles across it, in each build (session 12); vec_kernels_test
// checks a sweep of the whole domain against std::exp in each build.
#if defined(__AVX512F__)
constexpr bool kOneStepReduction = true;  // as Eigen's own pexp<Packet16f>
#else
constexpr bool kOneStepReduction = false;
#endif
template <typename P>
__attribute__((always_inline)) inline P exp_packet(const P& x) {
  using namespace Eigen::internal;  // NOLINT: the packet functions
  using T = typename unpacket_traits<P>::type;
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  typedef Bits BitsP __attribute__((vector_size(sizeof(P))));  // NOLINT: a GCC vector type
  constexpr int kMantissa = std::numeric_limits<T>::digits - 1;
  constexpr T kExponentMagic =
      T(std::numeric_limits<T>::max_exponent - 1) + T(Bits{1} << kMantissa);
  P y, m;
  if constexpr (sizeof(T) == 4) {
    m = pfloor(pmadd(x, pset1<P>(1.44269504088896341f), pset1<P>(0.5f)));
    P r;
    if constexpr (kOneStepReduction) {
      r = pmadd(m, pset1<P>(-0.6931471805599453f), x);
    } else {
      r = pmadd(m, pset1<P>(-0.693359375f), x);
      r = pmadd(m, pset1<P>(2.12194440e-4f), r);
    }
    const P r2 = pmul(r, r), r3 = pmul(r2, r);
    P a = pmadd(pset1<P>(1.9875691500E-4f), r, pset1<P>(1.3981999507E-3f));
    P b = pmadd(pset1<P>(4.1665795894E-2f), r, pset1<P>(1.6666665459E-1f));
    const P c = padd(r, pset1<P>(1.0f));
    a = pmadd(a, r, pset1<P>(8.3334519073E-3f));
    b = pmadd(b, r, pset1<P>(5.0000001201E-1f));
    y = pmadd(pmadd(a, r3, b), r2, c);
  } else {
    m = pfloor(pmadd(pset1<P>(1.4426950408889634073599), x, pset1<P>(0.5)));
    P r = psub(x, pmul(m, pset1<P>(0.693145751953125)));
    r = psub(r, pmul(m, pset1<P>(1.42860682030941723212e-6)));
    const P r2 = pmul(r, r);
    P p = pmadd(pset1<P>(1.26177193074810590878e-4), r2, pset1<P>(3.02994407707441961300e-2));
    p = pmul(pmadd(p, r2, pset1<P>(9.99999999999999999910e-1)), r);
    P q = pmadd(pset1<P>(3.00198505138664455042e-6), r2, pset1<P>(2.52448340349684104192e-3));
    q = pmadd(q, r2, pset1<P>(2.27265548208155028766e-1));
    q = pmadd(q, r2, pset1<P>(2.00000000000000000009e0));
    y = pmadd(pset1<P>(2.0), pdiv(p, psub(q, p)), pset1<P>(1.0));
  }
  const P biased = padd(m, pset1<P>(kExponentMagic));
  BitsP bits;
  std::memcpy(&bits, &biased, sizeof(bits));
  bits <<= kMantissa;
  P scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return pmul(y, scale);
}

// sigmoid(x) = 1 / (1 + exp(-x)), as Eigen's expression (1 + (-x).exp()).inverse() computes it.
template <typename P>
__attribute__((always_inline)) inline P sigmoid_packet(const P& x) {
  const P one = Eigen::internal::pset1<P>(typename Eigen::internal::unpacket_traits<P>::type(1));
  return Eigen::internal::pdiv(one,
                               Eigen::internal::padd(one, exp_packet(Eigen::internal::pnegate(x))));
}

// log(x) for x in log's VecDomain (the positive normal numbers), bit for bit Eigen 3.4's plog
// there: its steps in its order, without the clamp to the smallest normal in front and the
// three selects behind (for 0, +inf and negative or nan inputs), none of which changes a
// positive normal input's result (Note [Exp without the range work]: the same reasoning, and
// the same one-off check on every float of the domain and a sweep of doubles, session 12).
template <typename P>
__attribute__((always_inline)) inline P log_packet(const P& v) {
  using namespace Eigen::internal;  // NOLINT: the packet functions
  using T = typename unpacket_traits<P>::type;
  constexpr bool kFloat = sizeof(T) == 4;
  const P one = pset1<P>(T(1));
  P e;
  P x = pfrexp(v, e);  // x in [0.5, 1); into [sqrt(1/2), sqrt(2)) - 1
  const P below =
      pcmp_lt(x, pset1<P>(kFloat ? T(0.707106781186547524f) : T(0.70710678118654752440E0)));
  const P shift = pand(x, below);
  x = psub(x, one);
  e = psub(e, pand(one, below));
  x = padd(x, shift);
  const P x2 = pmul(x, x), x3 = pmul(x2, x);
  P y;
  if constexpr (kFloat) {
    P a = pmadd(pset1<P>(7.0376836292E-2f), x, pset1<P>(-1.1514610310E-1f));
    P b = pmadd(pset1<P>(-1.2420140846E-1f), x, pset1<P>(+1.4249322787E-1f));
    P c = pmadd(pset1<P>(+2.0000714765E-1f), x, pset1<P>(-2.4999993993E-1f));
    a = pmadd(a, x, pset1<P>(1.1676998740E-1f));
    b = pmadd(b, x, pset1<P>(-1.6668057665E-1f));
    c = pmadd(c, x, pset1<P>(+3.3333331174E-1f));
    a = pmadd(a, x3, b);
    a = pmadd(a, x3, c);
    y = pmul(a, x3);
  } else {
    P a = pmadd(pset1<P>(1.01875663804580931796E-4), x, pset1<P>(4.97494994976747001425E-1));
    P b = pmadd(pset1<P>(1.44989225341610930846E1), x, pset1<P>(1.79368678507819816313E1));
    a = pmadd(a, x, pset1<P>(4.70579119878881725854E0));
    b = pmadd(b, x, pset1<P>(7.70838733755885391666E0));
    const P num = pmadd(a, x3, b);
    P c = pmadd(pset1<P>(1.0), x, pset1<P>(1.12873587189167450590E1));
    P d = pmadd(pset1<P>(8.29875266912776603211E1), x, pset1<P>(7.11544750618563894466E1));
    c = pmadd(c, x, pset1<P>(4.52279145837532221105E1));
    d = pmadd(d, x, pset1<P>(2.31251620126765340583E1));
    const P den = pmadd(c, x3, d);
    y = pdiv(pmul(num, x3), den);
  }
  y = pmadd(pset1<P>(T(-0.5)), x2, y);
  x = padd(x, y);
  // ln 2 rounded once from its long double value, as Eigen's EIGEN_LN2.
  return pmadd(e, pset1<P>(static_cast<T>(0.693147180559945309417232121458176568L)), x);
}

// y[k] = packet_f(x[k]) for k < n by packets, the tail by f; y may be x.
template <typename T, typename F, typename PacketF>
void packets(T* y, const T* x, int64_t n, const F& f, const PacketF& packet_f) {
  using P = typename Eigen::internal::packet_traits<T>::type;
  constexpr int64_t kLanes = sizeof(P) / sizeof(T);
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    Eigen::internal::pstoreu(y + k, packet_f(Eigen::internal::ploadu<P>(x + k)));
  }
  for (; k < n; ++k) y[k] = f(x[k]);
}

// y[k] for k < n when every x[k] is in the domain: true, or false when some x[k] is not (y then
// holds nothing useful; y and x do not overlap). The domain's test rides along with the
// arithmetic, so a run of masked blocks needs no pass of its own to check them. kSymmetric and
// kExact are the domain's, as the caller knows them (a domain of another shape returns false).
template <bool kSymmetric, ExactKind kExact, typename T, typename F, typename PacketF>
__attribute__((always_inline)) inline bool packets_exact(T* __restrict y, const T* __restrict x,
                                                         int64_t n, const VecDomain<T>& domain,
                                                         const F& f, const PacketF& packet_f) {
  using P = typename Eigen::internal::packet_traits<T>::type;  // a GCC vector type
  using FloatP = typename Eigen::internal::packet_traits<float>::type;
  static_assert(sizeof(P) == sizeof(FloatP), "one width per build");
  static_assert(kExact != ExactKind::kNone, "a domain without exact inputs has no such pass");
  constexpr int64_t kLanes = sizeof(P) / sizeof(T);
  if (domain.is_symmetric() != kSymmetric || domain.exact != kExact) return false;
  if (kExact == ExactKind::kAtMost && !same_bits(domain.exact_value, T(0))) return false;
  const P bound = Eigen::internal::pset1<P>(domain.exact_bound);
  const P high = Eigen::internal::pset1<P>(domain.high());
  const P one = Eigen::internal::pset1<P>(T(1)), zero = one - one;
  // VecDomain's key test as float compares (false for nan): fewer instructions than the key
  // arithmetic, which AVX2 has no unsigned compare for (masked sigmoid f32 under AVX2,
  // docs/performance/cpu-kernels.md, session 12).
  auto inside = one == one;  // lane masks: all ones while every lane was inside
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    const P v = Eigen::internal::ploadu<P>(x + k);
    // GCC's vector compares and blends: an instruction each.
    const auto lanes = kExact == ExactKind::kAtMost ? v <= bound : v == zero;
    if constexpr (kSymmetric) {
      inside &= (Eigen::internal::pabs(v) <= high) | lanes;
    } else {
      inside &= ((v >= Eigen::internal::pset1<P>(domain.low())) & (v <= high)) | lanes;
    }
    const P r = packet_f(lanes ? one : v);
    if constexpr (kExact == ExactKind::kAtMost) {  // exp's and sigmoid's +0: an and-not
      Eigen::internal::pstoreu(y + k, lanes ? zero : r);
    } else {
      Eigen::internal::pstoreu(y + k, lanes ? Eigen::internal::pset1<P>(domain.exact_value) : r);
    }
  }
  const auto outside = ~inside;
  FloatP outside_lanes;
  std::memcpy(&outside_lanes, &outside, sizeof(outside_lanes));
  bool any_outside = Eigen::internal::predux_any(outside_lanes);
  for (; k < n; ++k) {  // the tail, as Eigen's own: f, exactly
    any_outside |= !(domain.in_range(x + k) || domain.is_exact(x[k]));
    y[k] = f(x[k]);
  }
  return !any_outside;
}

// f(x) for the inputs outside a domain, one at a time, remembering the last one: a masked
// input repeats a few values (-inf, 0, nan), whose f is then a compare of bits.
template <typename T, typename F>
class OutsideValue {
 public:
  explicit OutsideValue(const F& f) : f_(f) {}
  T operator()(T x) {
    if (!valid_ || std::memcmp(&x, &x_, sizeof(T)) != 0) {
      x_ = x;
      y_ = f_(x);
      valid_ = true;
    }
    return y_;
  }

 private:
  const F& f_;
  T x_ = T(0), y_ = T(0);
  bool valid_ = false;
};

// o[k] = f(a[k]) for k < n, through g(out_array, in_array) (an Eigen array expression, or
// packets) where the domain allows, or exact(out, in, count) for a block with some of the
// domain's exact inputs (packets_exact); o may be a. A block with inputs outside the domain still
// goes through Eigen whole (1 stands in for those lanes: no slow paths on nan, inf or subnormal
// results); then only the lanes outside the key range, found by a bit mask per line of 16, take f.
template <typename T, typename F, typename G, typename Z>
void unary_vec_run(T* o, const T* a, int64_t n, VecDomain<T> domain, const F& f, const G& g,
                   const Z& exact) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  constexpr int64_t kBlock = 1024, kLine = 16;
  alignas(64) T tmp[kBlock];
  OutsideValue<T, F> outside_value(f);
  // exact into y (through tmp in place: on false the block is redone from x); false if some
  // input was outside the domain.
  const auto by_exact = [&](T* y, const T* x, int64_t m) {
    if constexpr (std::is_same_v<Z, std::nullptr_t>) {
      return false;
    } else {
      T* out = y == x ? tmp : y;
      if (!exact(out, x, m)) return false;
      if (out != y) std::memcpy(y, out, static_cast<size_t>(m) * sizeof(T));
      return true;
    }
  };
  auto coverage = VecDomain<T>::kInRange;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t m = n - start < kBlock ? n - start : kBlock;
    const T* x = a + start;
    T* y = o + start;
    // After a block with exact inputs, the next is tried the same way at once.
    if (coverage == VecDomain<T>::kWithExact && by_exact(y, x, m)) continue;
    coverage = domain.coverage(x, m);
    if (coverage == VecDomain<T>::kInRange) {
      Eigen::Map<Array> out(y, m);
      g(out, Eigen::Map<const Array>(x, m));
      continue;
    }
    if (coverage == VecDomain<T>::kWithExact && by_exact(y, x, m)) continue;  // true here
    // Eigen works on a copy, so x stays readable when y is x until the block is written.
    for (int64_t k = 0; k < m; ++k) tmp[k] = domain.in_range(x + k) ? x[k] : T(1);
    Eigen::Map<Array> vec(tmp, m);
    g(vec, vec);
    for (int64_t k = 0; k < m; k += kLine) {
      const int64_t e = m - k < kLine ? m - k : kLine;
      uint32_t lanes = 0;  // bit j: x[k + j] is outside
      for (int64_t j = 0; j < e; ++j) lanes |= uint32_t{!domain.in_range(x + k + j)} << j;
      for (; lanes != 0; lanes &= lanes - 1) {
        const int64_t j = k + __builtin_ctz(lanes);
        tmp[j] = outside_value(x[j]);
      }
    }
    std::memcpy(y, tmp, static_cast<size_t>(m) * sizeof(T));
  }
}

// unary_vec_run for an op computed by our own packet function: the plain packet loop inside the
// key range, packets_exact for blocks with the domain's exact inputs (of kind kExact, the
// domain symmetric or not).
template <bool kSymmetric, ExactKind kExact, typename T, typename F, typename PacketF>
void packet_vec_run(T* o, const T* a, int64_t n, const VecDomain<T>& domain, const F& f,
                    const PacketF& packet_f) {
  unary_vec_run(
      o, a, n, domain, f,
      [&](auto& r, const auto& x) { packets(r.data(), x.data(), r.size(), f, packet_f); },
      [&](T* y, const T* x, int64_t m) {
        return packets_exact<kSymmetric, kExact>(y, x, m, domain, f, packet_f);
      });
}

template <typename T>
void unary(VecUnaryOp op, T* o, const T* a, int64_t n) {
  // Within where Eigen 3.4's SIMD functions were measured accurate (every 5th float, 6*10^7
  // doubles, SSE2 and AVX2/FMA builds). Each holds 1, the stand-in of unary_vec_run.
  using L = std::numeric_limits<T>;
  constexpr bool kFloat = std::is_same_v<T, float>;
  const T exp_bound = kFloat ? T(87) : T(708);                         // exp(+-bound) is normal
  const VecDomain<T> exp_domain = VecDomain<T>::symmetric(exp_bound);  // sigmoid's exp(-x) too
  switch (op) {
    case VecUnaryOp::kExp: {
      const VecDomain<T> domain =
          exp_domain.with_exact(ExactKind::kAtMost, kFloat ? T(-104) : T(-746), T(0));
      const auto f = [](T x) { return std::exp(x); };
      const auto packet_f = [](const auto& v) __attribute__((always_inline)) {
        return exp_packet(v);
      };
      return packet_vec_run<true, ExactKind::kAtMost>(o, a, n, domain, f, packet_f);
    }
    case VecUnaryOp::kLog: {
      const VecDomain<T> domain = VecDomain<T>::positive(L::min(), L::max())
                                      .with_exact(ExactKind::kZero, T(0), -L::infinity());
      const auto f = [](T x) { return std::log(x); };
      const auto packet_f = [](const auto& v) __attribute__((always_inline)) {
        return log_packet(v);
      };
      return packet_vec_run<false, ExactKind::kZero>(o, a, n, domain, f, packet_f);
    }
    case VecUnaryOp::kSin:  // fast argument reduction up to 65536
      return unary_vec_run(
          o, a, n, VecDomain<T>::symmetric(T(65536)), [](T x) { return std::sin(x); },
          [](auto& r, const auto& x) { r = x.sin(); }, nullptr);
    case VecUnaryOp::kCos:
      return unary_vec_run(
          o, a, n, VecDomain<T>::symmetric(T(65536)), [](T x) { return std::cos(x); },
          [](auto& r, const auto& x) { r = x.cos(); }, nullptr);
    case VecUnaryOp::kTanh:  // all but nan
      return unary_vec_run(
          o, a, n, VecDomain<T>::symmetric(L::infinity()), [](T x) { return std::tanh(x); },
          [](auto& r, const auto& x) { r = x.tanh(); }, nullptr);
    case VecUnaryOp::kSigmoid: {
      const VecDomain<T> domain =
          exp_domain.with_exact(ExactKind::kAtMost, kFloat ? T(-89) : T(-710), T(0));
      const auto f = [](T x) { return T(1) / (T(1) + std::exp(-x)); };
      const auto packet_f = [](const auto& v) __attribute__((always_inline)) {
        return sigmoid_packet(v);
      };
      return packet_vec_run<true, ExactKind::kAtMost>(o, a, n, domain, f, packet_f);
    }
  }
}

void unary_f32(VecUnaryOp op, float* o, const float* a, int64_t n) { unary<float>(op, o, a, n); }
void unary_f64(VecUnaryOp op, double* o, const double* a, int64_t n) { unary<double>(op, o, a, n); }

template <typename T>
using RowMajorMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                               Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using ConstRowMajorMap =
    Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
               Eigen::Unaligned, Eigen::OuterStride<>>;

template <typename T>
void gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, bool a_t, const T* b,
          int64_t ldb, bool b_t, T* c, int64_t ldc) {
  RowMajorMap<T> o(c, m, n, Eigen::OuterStride<>(ldc));
  if (k == 0) {
    o.setZero();
    return;
  }
  // A transposed operand is the row-major map of its transpose.
  ConstRowMajorMap<T> am(a, a_t ? k : m, a_t ? m : k, Eigen::OuterStride<>(lda));
  ConstRowMajorMap<T> bm(b, b_t ? n : k, b_t ? k : n, Eigen::OuterStride<>(ldb));
  if (!a_t && !b_t)
    o.noalias() = am * bm;
  else if (!a_t)
    o.noalias() = am * bm.transpose();
  else if (!b_t)
    o.noalias() = am.transpose() * bm;
  else
    o.noalias() = am.transpose() * bm.transpose();
}

// Note [Vectorized bounds screen]
// An advanced write that is not staged reads all its indices once before writing (the strong
// guarantee; Note [Staged writes] in tensor/native/index_ops.cc), so this loop is on the hot
// path of index_put_ and the scatters (26% of scatter_add_'s time when it compared). x86-64's
// baseline (SSE2) has no 64-bit compare, so a comparison does not vectorize: the loop instead
// computes the borrow of u - span (u = x - lower, unsigned) from subtraction and bit
// operations only, which SSE2 has, and ANDs the borrows: every index is in range exactly when every
// borrow's top bit is set (u < span). The AVX2 build runs the same operations four lanes wide
// instead of two. GCC's -O2 cost model vectorizes no loop that needs a scalar epilogue, hence the
// optimize attribute. The screen is a streaming read: halves of a large index run on two threads
// (CpuBackend::index_in_range).
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#endif
bool any_out_of_range(const int64_t* data, int64_t n, uint64_t lower, uint64_t span) {
  uint64_t all_borrow = ~uint64_t{0};
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t u = static_cast<uint64_t>(data[i]) - lower;
    all_borrow &= (~u & span) | (~(u ^ span) & (u - span));
  }
  return (all_borrow >> 63) == 0;
}

// Note [Streaming copies] (tensor/cpu/copy.cc): d[0, bytes) = s[0, bytes) with non-temporal
// stores of the build's vector width from d's first aligned byte, the ends through memcpy. A
// 64-byte store writes a whole line at once: x[:, 1:-1] = y on 4096 x 4096 float32 (rows of
// 16 KiB, two threads) took 2.61 ms with AVX-512's against 3.07 ms with SSE2's 16-byte stores
// and 3.9 ms with memcpy, in a standalone loop on an AMD EPYC (docs/performance/cpu-kernels.md,
// session 11). The caller fences (stream_fence) before its results are read.
void stream_copy(char* d, const char* s, size_t bytes) {
#if defined(__SSE2__)
#if defined(__AVX512F__)
  using Line = __m512i;
#elif defined(__AVX2__)
  using Line = __m256i;
#else
  using Line = __m128i;
#endif
  constexpr size_t W = sizeof(Line);
  // A ternary, not std::min: no function template of its own in this object (Note [CPU
  // capability dispatch]: a weak symbol the linker may share with the other builds).
  const size_t to_boundary = (W - reinterpret_cast<uintptr_t>(d) % W) % W;
  const size_t head = bytes < to_boundary ? bytes : to_boundary;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<Line*>(d), _mm512_loadu_si512(s));
#elif defined(__AVX2__)
    const Line a = _mm256_loadu_si256(reinterpret_cast<const Line*>(s));
    const Line b = _mm256_loadu_si256(reinterpret_cast<const Line*>(s + 32));
    _mm256_stream_si256(reinterpret_cast<Line*>(d), a);
    _mm256_stream_si256(reinterpret_cast<Line*>(d + 32), b);
#else
    for (size_t k = 0; k < 64; k += W) {
      _mm_stream_si128(reinterpret_cast<Line*>(d + k),
                       _mm_loadu_si128(reinterpret_cast<const Line*>(s + k)));
    }
#endif
  }
#endif  // no streaming stores without SSE2: memcpy copies it all
  std::memcpy(d, s, bytes);
}

#include "tensor/cpu/fused_optim_impl.h"
#include "tensor/cpu/vec_pointwise_impl.h"
#include "tensor/cpu/vec_reduce_impl.h"
// After the two above: kVecBytes and MUTAGRAD_UNROLL.
#include "tensor/cpu/vec_philox_impl.h"

}  // namespace

extern const VecKernels kVecKernels;
const VecKernels kVecKernels = {MUTAGRAD_VEC_CAPABILITY,
                                unary_f32,
                                unary_f64,
                                binary<float>,
                                binary<double>,
                                compare<float>,
                                compare<double>,
                                sum_f32,
                                sum_f64,
                                extremum_f32,
                                extremum_f64,
                                add_widened_f32,
                                sum_rows_f32,
                                sum_rows_f64,
                                extremum_rows_f32,
                                extremum_rows_f64,
                                sum_cols_f32,
                                sum_cols_f64,
                                extremum_cols_f32,
                                extremum_cols_f64,
                                gemm<float>,
                                gemm<double>,
                                gemm<uint32_t>,
                                gemm<uint64_t>,
                                any_out_of_range,
                                stream_copy,
                                fma_run<float>,
                                fma_run<double>,
                                sgd_range<float>,
                                sgd_range<double>,
                                adam_range<float>,
                                adam_range<double>,
                                philox};

}  // namespace mutagrad::cpu::MUTAGRAD_VEC_NS
