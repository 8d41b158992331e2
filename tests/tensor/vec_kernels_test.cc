// The per-capability kernels (Note [CPU capability dispatch] in tensor/cpu/vec_kernels.h): the
// choice at run time (MUTAGRAD_CPU_CAPABILITY, set_cpu_capability), each build's GEMM against a
// naive product (integers exactly), each build's transcendentals against std:: (exactly outside
// the vectorized domain), and ops through the Tensor API after a switch.
#include "tensor/cpu/vec_kernels.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/element_math.h"
#include "tensor/error.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/philox.h"
#include "tensor/tensor.h"
#include "tests/tensor/fma_reference.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers
using cpu::CpuCapability;
using cpu::VecKernels;
using cpu::VecUnaryOp;

// What cpuid says, read independently of the library's check.
CpuCapability cpuid_best() {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw");
  return avx512 ? CpuCapability::kAvx512 : avx2 ? CpuCapability::kAvx2 : CpuCapability::kBaseline;
}

// The builds this CPU runs: baseline always, AVX2 and AVX-512 where cpuid says so.
std::vector<const VecKernels*> runnable_builds() {
  std::vector<const VecKernels*> builds = {&cpu::baseline::kVecKernels};
  if (cpuid_best() >= CpuCapability::kAvx2) builds.push_back(&cpu::avx2::kVecKernels);
  if (cpuid_best() >= CpuCapability::kAvx512) builds.push_back(&cpu::avx512::kVecKernels);
  return builds;
}

// Leaves the capability as the test found it.
class VecKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = cpu::cpu_capability(); }
  void TearDown() override { cpu::set_cpu_capability(saved_); }
  CpuCapability saved_ = CpuCapability::kBaseline;
};

TEST_F(VecKernelsTest, CapabilityIsTheEnvironmentsOrTheBestSupported) {
  const char* env = std::getenv("MUTAGRAD_CPU_CAPABILITY");
  std::string expected = env != nullptr && *env != '\0'
                             ? env
                             : cpu::cpu_capability_name(cpu::cpu_capability_supported());
  if (expected == "default") expected = "baseline";  // torch's ATEN_CPU_CAPABILITY spelling
  EXPECT_EQ(cpu::cpu_capability_name(cpu::cpu_capability()), expected);
  EXPECT_EQ(cpu::vec_kernels().capability, cpu::cpu_capability());
  EXPECT_EQ(cpu::cpu_capability_supported(), cpuid_best());
  for (CpuCapability c : cpu::kCpuCapabilities)
    EXPECT_EQ(cpu::cpu_capability_runs(c), c <= cpuid_best());
}

TEST_F(VecKernelsTest, SwitchingChangesTheTableOrRefusesAnUnsupportedBuild) {
  const VecKernels* tables[] = {&cpu::baseline::kVecKernels, &cpu::avx2::kVecKernels,
                                &cpu::avx512::kVecKernels};
  for (CpuCapability c : cpu::kCpuCapabilities) {
    const VecKernels* table = tables[static_cast<int>(c)];
    EXPECT_EQ(table->capability, c);
    cpu::set_cpu_capability(CpuCapability::kBaseline);
    if (c <= cpuid_best()) {
      cpu::set_cpu_capability(c);
      EXPECT_EQ(&cpu::vec_kernels(), table) << cpu::cpu_capability_name(c);
    } else {  // never run: refused, and the table in use stays
      EXPECT_THROW(cpu::set_cpu_capability(c), ValueError) << cpu::cpu_capability_name(c);
      EXPECT_EQ(&cpu::vec_kernels(), &cpu::baseline::kVecKernels);
    }
  }
}

// c = op(a) op(b) by the definition, in T (integers wrap in their unsigned type).
template <typename T>
std::vector<T> naive_gemm(int64_t m, int64_t n, int64_t k, const std::vector<T>& a, int64_t lda,
                          bool a_t, const std::vector<T>& b, int64_t ldb, bool b_t) {
  std::vector<T> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const T x = a_t ? a[p * lda + i] : a[i * lda + p];
        const T y = b_t ? b[j * ldb + p] : b[p * ldb + j];
        acc = static_cast<T>(acc + static_cast<T>(x * y));
      }
      c[i * n + j] = acc;
    }
  }
  return c;
}

template <typename T, typename Gemm>
void check_gemm(Gemm gemm, const char* build) {
  std::mt19937_64 rng(7);
  // Empty, vector-like, odd, and beyond Eigen's register blocks and its cache blocking (k 300).
  const int64_t shapes[][3] = {{1, 1, 1},     {3, 5, 0},     {1, 17, 9},
                               {17, 1, 9},    {7, 13, 5},    {33, 31, 29},
                               {64, 128, 64}, {32, 10, 128}, {130, 70, 300}};
  for (const auto& s : shapes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    for (int t = 0; t < 4; ++t) {
      const bool a_t = t & 1, b_t = t & 2;
      // Leading dimensions wider than the rows: the maps must honour them.
      const int64_t lda = (a_t ? m : k) + 3, ldb = (b_t ? k : n) + 1, ldc = n + 2;
      std::vector<T> a(static_cast<size_t>((a_t ? k : m) * lda));
      std::vector<T> b(static_cast<size_t>((b_t ? n : k) * ldb));
      for (T& v : a) v = static_cast<T>(static_cast<int64_t>(rng() % 19) - 9) / T(4);
      for (T& v : b) v = static_cast<T>(static_cast<int64_t>(rng() % 23) - 11) / T(2);
      if constexpr (std::is_integral_v<T>) {  // large values, so that products wrap
        for (T& v : a) v = static_cast<T>(rng());
        for (T& v : b) v = static_cast<T>(rng());
      }
      std::vector<T> c(static_cast<size_t>(m * ldc), T(99));  // stale values must go
      gemm(m, n, k, a.data(), lda, a_t, b.data(), ldb, b_t, c.data(), ldc);
      const std::vector<T> want = naive_gemm<T>(m, n, k, a, lda, a_t, b, ldb, b_t);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const T got = c[i * ldc + j], w = want[i * n + j];
          // Floating inputs are multiples of 1/8 with small sums: exact in float and double.
          ASSERT_EQ(got, w) << build << " m " << m << " n " << n << " k " << k << " a_t " << a_t
                            << " b_t " << b_t << " at (" << i << ", " << j << ")";
        }
        for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], T(99)) << "wrote past a row";
      }
    }
  }
}

// Note [Vectorized bounds screen]: each build's screen equals the plain unsigned comparison for
// every length (each lane and the scalar tail), every position of one offender, the boundary
// values on both sides of [lower, lower + span), a negative lower (wrapping indices) and the
// extremes of int64.
TEST_F(VecKernelsTest, EachBuildsBoundsScreenEqualsTheComparison) {
  const int64_t lo_min = std::numeric_limits<int64_t>::min();
  const int64_t hi_max = std::numeric_limits<int64_t>::max();
  for (const VecKernels* vk : runnable_builds()) {
    const char* build = cpu::cpu_capability_name(vk->capability);
    for (int64_t size : {int64_t{1}, int64_t{5}, int64_t{4096}}) {
      for (int64_t lower : {int64_t{0}, -size}) {
        const uint64_t low = static_cast<uint64_t>(lower);
        const uint64_t span = static_cast<uint64_t>(size - lower);
        for (int64_t n = 0; n <= 19; ++n) {
          std::vector<int64_t> data(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) data[size_t(i)] = lower + (i * 3) % (size - lower);
          ASSERT_FALSE(vk->any_out_of_range(data.data(), n, low, span)) << build << " n " << n;
          for (int64_t pos = 0; pos < n; ++pos) {
            for (int64_t v : {lower - 1, size, size - 1, lower, lo_min, hi_max, int64_t{-1}}) {
              std::vector<int64_t> one = data;
              one[size_t(pos)] = v;
              const bool want = v < lower || v >= size;
              ASSERT_EQ(vk->any_out_of_range(one.data(), n, low, span), want)
                  << build << " size " << size << " lower " << lower << " n " << n << " at " << pos
                  << " value " << v;
            }
          }
        }
      }
    }
  }
}

TEST_F(VecKernelsTest, EachBuildsGemmEqualsTheNaiveProduct) {
  for (const VecKernels* vk : runnable_builds()) {
    const char* build = cpu::cpu_capability_name(vk->capability);
    check_gemm<float>(vk->gemm_f32, build);
    check_gemm<double>(vk->gemm_f64, build);
    check_gemm<uint32_t>(vk->gemm_u32, build);
    check_gemm<uint64_t>(vk->gemm_u64, build);
  }
}

template <typename T>
T reference(VecUnaryOp op, T x) {
  switch (op) {
    case VecUnaryOp::kExp:
      return std::exp(x);
    case VecUnaryOp::kLog:
      return std::log(x);
    case VecUnaryOp::kSin:
      return std::sin(x);
    case VecUnaryOp::kCos:
      return std::cos(x);
    case VecUnaryOp::kTanh:
      return std::tanh(x);
    case VecUnaryOp::kSigmoid:
      return T(1) / (T(1) + std::exp(-x));
  }
  return x;
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Where the op may take the SIMD approximation (the documented VecDomains; a double's bound is
// rounded outwards by at most 2^-20 relative, far from the values used here).
template <typename T>
bool in_domain(VecUnaryOp op, T x) {
  using L = std::numeric_limits<T>;
  const T exp_bound = std::is_same_v<T, float> ? T(87) : T(708);
  switch (op) {
    case VecUnaryOp::kExp:
    case VecUnaryOp::kSigmoid:
      return std::abs(x) <= exp_bound;
    case VecUnaryOp::kLog:
      return x >= L::min() && x <= L::max();
    case VecUnaryOp::kSin:
    case VecUnaryOp::kCos:
      return std::abs(x) <= T(65536);
    case VecUnaryOp::kTanh:
      return !std::isnan(x);
  }
  return false;
}

// Random ordinary inputs within kEps relative (+ a tiny absolute floor near zeros of sin/cos)
// of std::; inputs outside the op's domain (nan, +-inf, huge, subnormal, 0, negative for log)
// bit for bit.
template <typename T>
void check_unary(const VecKernels& vk, VecUnaryOp op) {
  using L = std::numeric_limits<T>;
  constexpr double kEps = 4;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> dist(op == VecUnaryOp::kLog ? 1e-3 : -20.0, 20.0);
  std::vector<T> x(1000);
  for (T& v : x) v = static_cast<T>(dist(rng));
  const T outside[] = {L::quiet_NaN(),  L::infinity(), -L::infinity(), T(1e5),   T(-1e5),
                       L::denorm_min(), T(0),          L::max(),       -L::max()};
  for (size_t i = 0; i < std::size(outside); ++i) x[i * 97 + 3] = outside[i];
  std::vector<T> y(x.size());
  if constexpr (std::is_same_v<T, float>)
    vk.unary_f32(op, y.data(), x.data(), static_cast<int64_t>(x.size()));
  else
    vk.unary_f64(op, y.data(), x.data(), static_cast<int64_t>(x.size()));
  const char* build = cpu::cpu_capability_name(vk.capability);
  for (size_t i = 0; i < x.size(); ++i) {
    const T want = reference(op, x[i]);
    if (!in_domain(op, x[i])) {
      ASSERT_TRUE(same_bits(y[i], want)) << build << " op " << static_cast<int>(op) << " x " << x[i]
                                         << ": " << y[i] << " is not std::'s " << want;
      continue;
    }
    const double tol = kEps * L::epsilon() * std::abs(static_cast<double>(want)) + 8 * L::min();
    ASSERT_NEAR(static_cast<double>(y[i]), static_cast<double>(want), tol)
        << build << " op " << static_cast<int>(op) << " x " << x[i];
  }
}

TEST_F(VecKernelsTest, EachBuildsTranscendentalsAreStdOutsideTheirDomainAndCloseInside) {
  for (const VecKernels* vk : runnable_builds()) {
    for (VecUnaryOp op : {VecUnaryOp::kExp, VecUnaryOp::kLog, VecUnaryOp::kSin, VecUnaryOp::kCos,
                          VecUnaryOp::kTanh, VecUnaryOp::kSigmoid}) {
      check_unary<float>(*vk, op);
      check_unary<double>(*vk, op);
    }
  }
}

// A block with inputs outside the domain (a masked softmax's -inf, log's zeros, nan, dense or
// one per line, in every lane position, in place and not; lengths within one block of the
// kernels (1,024) and across blocks): the lanes outside are std::'s bits and the lanes inside
// within kEps of std:: (a run's tail takes std::, so inside values are not compared bitwise).
template <typename T>
void check_masked(const VecKernels& vk, VecUnaryOp op) {
  using L = std::numeric_limits<T>;
  constexpr double kEps = 4;
  const T fills[] = {-L::infinity(), T(0), L::quiet_NaN(), L::infinity(), T(-3), T(1e5), T(-0.0)};
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> dist(op == VecUnaryOp::kLog ? 1e-3 : -20.0, 20.0);
  auto run = [&](T* o, const T* a, int64_t n) {
    if constexpr (std::is_same_v<T, float>)
      vk.unary_f32(op, o, a, n);
    else
      vk.unary_f64(op, o, a, n);
  };
  const char* build = cpu::cpu_capability_name(vk.capability);
  for (int64_t n : {int64_t{17}, int64_t{255}, int64_t{256}, int64_t{700}, int64_t{1023},
                    int64_t{1024}, int64_t{1025}, int64_t{2600}}) {
    for (int pattern = 0; pattern < 4; ++pattern) {
      std::vector<T> x(static_cast<size_t>(n));
      for (size_t i = 0; i < x.size(); ++i) {
        // every 10th, every 3rd, lanes 0 and 15 of each line, one in 97
        const bool masked = pattern == 0   ? i % 10 == 3
                            : pattern == 1 ? i % 3 == 0
                            : pattern == 2 ? i % 16 == 0 || i % 16 == 15
                                           : i % 97 == 50;
        x[i] = masked ? fills[(i / 7) % std::size(fills)] : static_cast<T>(dist(rng));
      }
      std::vector<T> y(x.size()), in_place = x;
      run(y.data(), x.data(), n);
      run(in_place.data(), in_place.data(), n);
      for (size_t i = 0; i < x.size(); ++i) {
        const T want = reference(op, x[i]);
        for (T got : {y[i], in_place[i]}) {
          if (!in_domain(op, x[i])) {
            ASSERT_TRUE(same_bits(got, want))
                << build << " op " << static_cast<int>(op) << " n " << n << " pattern " << pattern
                << " at " << i << " x " << x[i] << ": " << got << " is not std::'s " << want;
            continue;
          }
          const double tol =
              kEps * L::epsilon() * std::abs(static_cast<double>(want)) + 8 * L::min();
          ASSERT_NEAR(static_cast<double>(got), static_cast<double>(want), tol)
              << build << " op " << static_cast<int>(op) << " n " << n << " at " << i;
        }
      }
    }
  }
}

TEST_F(VecKernelsTest, EachBuildsTranscendentalsHandleMaskedLanesOneByOne) {
  for (const VecKernels* vk : runnable_builds()) {
    for (VecUnaryOp op : {VecUnaryOp::kExp, VecUnaryOp::kLog, VecUnaryOp::kSin, VecUnaryOp::kCos,
                          VecUnaryOp::kTanh, VecUnaryOp::kSigmoid}) {
      check_masked<float>(*vk, op);
      check_masked<double>(*vk, op);
    }
  }
}

// exp, sigmoid and log across their whole VecDomain (Note [Exp without the range work]: 2^m
// built from m's bits; log without Eigen's clamp and selects): inputs spread over every binade
// of the domain ([-bound, bound]; log: the positive normal numbers), within kEps of std::
// relatively (every result there is a normal number, so a wrong power of two fails even at the
// bottom); the domain's ends inside, and their neighbours outside bit for bit std::'s (a
// double's bound is 708 rounded outwards to its key: the low word all ones). Once as they are
// (the packet loop) and once with every 10th lane a mask's value (-inf; log: 0), the loop that
// blends in exact results, whose lanes are then std::'s.
template <typename T>
void check_whole_domain(const VecKernels& vk, VecUnaryOp op) {
  using L = std::numeric_limits<T>;
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr double kEps = 4;
  const bool log_op = op == VecUnaryOp::kLog;
  T bound = log_op ? L::max() : std::is_same_v<T, float> ? T(87) : T(708);
  const T first = log_op ? L::min() : T(0);
  Bits top, bottom;
  std::memcpy(&top, &bound, sizeof(top));
  if (!log_op && sizeof(T) == 8) {  // the key's rounding: 708.00048828124989
    top |= Bits{0xffffffffu};
    std::memcpy(&bound, &top, sizeof(bound));
  }
  std::memcpy(&bottom, &first, sizeof(bottom));
  const Bits stride = std::is_same_v<T, float> ? Bits{4099} : (Bits{1} << 43) + 7;
  std::vector<T> x;
  for (Bits b = bottom; b < top && b >= bottom; b += stride) {
    T v;
    std::memcpy(&v, &b, sizeof(v));
    x.push_back(v);
    if (!log_op) x.push_back(-v);
  }
  // The ends, inside; then their neighbours, outside.
  const std::vector<T> ends = log_op ? std::vector<T>{first, bound} : std::vector<T>{bound, -bound};
  const std::vector<T> beyond = log_op ? std::vector<T>{std::nextafter(first, T(0)), L::infinity()}
                                       : std::vector<T>{std::nextafter(bound, L::infinity()),
                                                        -std::nextafter(bound, L::infinity())};
  x.insert(x.end(), ends.begin(), ends.end());
  x.insert(x.end(), beyond.begin(), beyond.end());
  const size_t n_inside = x.size() - beyond.size();
  const char* build = cpu::cpu_capability_name(vk.capability);
  for (bool masked : {false, true}) {
    std::vector<T> in = x, y(x.size());
    if (masked)
      for (size_t i = 0; i + 4 < in.size(); i += 10) in[i] = log_op ? T(0) : -L::infinity();
    if constexpr (std::is_same_v<T, float>)
      vk.unary_f32(op, y.data(), in.data(), static_cast<int64_t>(in.size()));
    else
      vk.unary_f64(op, y.data(), in.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      const T want = reference(op, in[i]);
      if ((masked && i % 10 == 0 && i + 4 < in.size()) || i >= n_inside) {
        ASSERT_TRUE(same_bits(y[i], want)) << build << " op " << static_cast<int>(op) << " x "
                                           << in[i] << ": " << y[i] << " is not std::'s " << want;
        continue;
      }
      const double tol = kEps * L::epsilon() * std::abs(static_cast<double>(want));
      ASSERT_NEAR(static_cast<double>(y[i]), static_cast<double>(want), tol)
          << build << " op " << static_cast<int>(op) << " x " << in[i] << " masked " << masked;
    }
  }
}

TEST_F(VecKernelsTest, EachBuildsExpSigmoidAndLogAreCloseAcrossTheirWholeDomain) {
  for (const VecKernels* vk : runnable_builds()) {
    for (VecUnaryOp op : {VecUnaryOp::kExp, VecUnaryOp::kSigmoid, VecUnaryOp::kLog}) {
      check_whole_domain<float>(*vk, op);
      check_whole_domain<double>(*vk, op);
    }
  }
}

// Whether a and b are the same number: equal bits, or both nan (Note [NaN bits]: a vectorized
// loop may swap the operands of a commutative op, and which nan's payload propagates).
template <typename T>
bool same_value(T a, T b) {
  return same_bits(a, b) || (std::isnan(a) && std::isnan(b));
}

// The documented formulas of the one-pass steps (Note [Fused optimizer steps] in
// tensor/cpu/fused_optim.h), element by element in this file's baseline build: add_(alpha) and
// addcmul_ are one fused multiply-add (Note [Torch's fused multiply-adds]).
using fma_reference::addcmul;
using fma_reference::axpy;

template <typename T>
void ref_sgd(const cpu::SGDStep<T>& s) {
  for (int64_t i = 0; i < s.n; ++i) {
    T d = s.maximize ? -s.grad[i] : s.grad[i];
    if (s.weight_decay != 0) d = axpy(d, s.param[i], static_cast<T>(s.weight_decay));
    if (s.momentum_buffer != nullptr) {
      const T buf = axpy(s.momentum_buffer[i] * static_cast<T>(s.momentum), d,
                         static_cast<T>(1 - s.dampening));
      s.momentum_buffer[i] = buf;
      d = s.nesterov ? axpy(d, buf, static_cast<T>(s.momentum)) : buf;
    }
    s.param[i] = axpy(s.param[i], d, static_cast<T>(-s.lr));
  }
}

template <typename T>
void ref_adam(const cpu::AdamStep<T>& s) {
  for (int64_t i = 0; i < s.n; ++i) {
    T g = s.maximize ? -s.grad[i] : s.grad[i];
    const T p = s.param[i];
    const bool wd = s.weight_decay != 0;
    if (wd && !s.decoupled) g = axpy(g, p, static_cast<T>(s.weight_decay));
    const T m = axpy(s.exp_avg[i] * static_cast<T>(s.beta1), g, static_cast<T>(1 - s.beta1));
    const T v =
        addcmul(s.exp_avg_sq[i] * static_cast<T>(s.beta2), g, g, static_cast<T>(1 - s.beta2));
    s.exp_avg[i] = m;
    s.exp_avg_sq[i] = v;
    T second = v;
    if (s.max_exp_avg_sq != nullptr) {
      const T old = s.max_exp_avg_sq[i];
      second = (v > old || v != v) ? v : old;
      s.max_exp_avg_sq[i] = second;
    }
    const T denom =
        std::sqrt(second) / static_cast<T>(s.bias_correction2_sqrt) + static_cast<T>(s.eps);
    const T base = wd && s.decoupled ? p * static_cast<T>(1 - s.lr * s.weight_decay) : p;
    s.param[i] = base + (static_cast<T>(-s.step_size) * m) / denom;
  }
}

// Random values at several scales, with edge values (signed zeros, subnormals, huge, inf, nan)
// in some positions; positive for the second moments.
template <typename T>
std::vector<T> step_values(std::mt19937_64& rng, int64_t n, bool positive) {
  using L = std::numeric_limits<T>;
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> exponent(-6, 6);
  const T edges[] = {T(0),          -T(0),          L::denorm_min(), L::min(), L::max(),
                     L::infinity(), L::quiet_NaN(), T(1e-30),        T(1)};
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    T x = static_cast<T>(normal(rng) * std::pow(10.0, exponent(rng)));
    if (i % 37 == 5) x = edges[(i / 37) % std::size(edges)];
    v[size_t(i)] = positive ? std::abs(x) : x;
  }
  return v;
}

// Each build's optimizer loops give the documented formula's bits for every option (all
// builds alike: Note [Fused steps per capability]), over ranges that start and end off any
// vector width.
template <typename T>
void check_steps(const VecKernels& vk) {
  const char* build = cpu::cpu_capability_name(vk.capability);
  constexpr int64_t kN = 1031;
  std::mt19937_64 rng(13);
  for (int flags = 0; flags < 32; ++flags) {
    const std::vector<T> param0 = step_values<T>(rng, kN, false);
    const std::vector<T> grad = step_values<T>(rng, kN, false);
    const std::vector<T> buf0 = step_values<T>(rng, kN, false);
    const std::vector<T> sq0 = step_values<T>(rng, kN, true);
    const std::vector<T> max0 = step_values<T>(rng, kN, true);
    const bool maximize = flags & 1, wd = flags & 2, opt3 = flags & 4, opt4 = flags & 8;
    const int64_t begin = (flags & 16) ? 3 : 0, end = (flags & 16) ? kN - 5 : kN;
    {  // SGD: opt3 momentum, opt4 nesterov
      std::vector<T> p = param0, b = buf0, rp = param0, rb = buf0;
      cpu::SGDStep<T> s{p.data(), grad.data(), opt3 ? b.data() : nullptr, end};
      s.lr = 0.05, s.momentum = 0.9, s.dampening = 0.1, s.weight_decay = wd ? 0.01 : 0;
      s.nesterov = opt4, s.maximize = maximize;
      cpu::SGDStep<T> r = s;
      r.param = rp.data(), r.momentum_buffer = opt3 ? rb.data() : nullptr;
      if constexpr (std::is_same_v<T, float>)
        vk.sgd_f32(s, begin, end);
      else
        vk.sgd_f64(s, begin, end);
      r.param += begin, r.grad += begin, r.n -= begin;
      if (r.momentum_buffer != nullptr) r.momentum_buffer += begin;
      ref_sgd(r);
      for (int64_t i = 0; i < kN; ++i) {
        ASSERT_TRUE(same_value(p[size_t(i)], rp[size_t(i)]) &&
                    same_value(b[size_t(i)], rb[size_t(i)]))
            << build << " SGD flags " << flags << " at " << i << ": " << p[size_t(i)] << " vs "
            << rp[size_t(i)];
      }
    }
    {  // Adam: opt3 decoupled (AdamW), opt4 amsgrad
      std::vector<T> p = param0, m = buf0, v = sq0, mx = max0;
      std::vector<T> rp = p, rm = m, rv = v, rmx = mx;
      cpu::AdamStep<T> s{p.data(), grad.data(), m.data(), v.data(), opt4 ? mx.data() : nullptr,
                         end};
      s.lr = 1e-3, s.weight_decay = wd ? 0.01 : 0, s.step_size = 1e-3 / (1 - 0.9 * 0.9);
      s.bias_correction2_sqrt = std::sqrt(1 - 0.999 * 0.999), s.maximize = maximize;
      s.decoupled = opt3;
      cpu::AdamStep<T> r = s;
      r.param = rp.data() + begin, r.grad = grad.data() + begin, r.exp_avg = rm.data() + begin;
      r.exp_avg_sq = rv.data() + begin, r.n = end - begin;
      r.max_exp_avg_sq = opt4 ? rmx.data() + begin : nullptr;
      if constexpr (std::is_same_v<T, float>)
        vk.adam_f32(s, begin, end);
      else
        vk.adam_f64(s, begin, end);
      ref_adam(r);
      for (int64_t i = 0; i < kN; ++i) {
        const size_t k = size_t(i);
        ASSERT_TRUE(same_value(p[k], rp[k]) && same_value(m[k], rm[k]) && same_value(v[k], rv[k]) &&
                    same_value(mx[k], rmx[k]))
            << build << " Adam flags " << flags << " at " << i << ": " << p[k] << " vs " << rp[k];
      }
    }
  }
}

TEST_F(VecKernelsTest, EachBuildsOptimizerStepsGiveTheDocumentedBits) {
  for (const VecKernels* vk : runnable_builds()) {
    check_steps<float>(*vk);
    check_steps<double>(*vk);
  }
}

// Through the Tensor API, the op follows a switch: the same product and exp in each build
// (exact inputs for matmul; std::exp outside exp's domain).
TEST_F(VecKernelsTest, TensorOpsRunOnTheChosenBuild) {
  Tensor a = tensor({{0.0, 1.0, 2.0, 3.0}, {4.0, 5.0, 6.0, 7.0}, {8.0, 9.0, 10.0, 11.0}});
  Tensor b = tensor({{0.0, 1.0}, {2.0, 3.0}, {4.0, 5.0}, {6.0, 7.0}});
  Tensor big = full({40}, 200.0, kFloat32);  // exp overflows: std::exp's inf
  for (const VecKernels* vk : runnable_builds()) {
    cpu::set_cpu_capability(vk->capability);
    const char* build = cpu::cpu_capability_name(vk->capability);
    EXPECT_EQ(elements(native::matmul(a, b)), (std::vector<double>{28, 34, 76, 98, 124, 162}))
        << build;
    EXPECT_EQ(elements(native::unary(UnaryOp::kExp, big)),
              std::vector<double>(40, std::exp(200.0f)))
        << build;
  }
}

// ---- Binary ops, comparisons and reduction folds (Note [Pointwise kernels per capability]) ----

using cpu::VecBinaryOp;
using cpu::VecBroadcast;
using cpu::VecCompareOp;

// n elements ending at a page whose successor is PROT_NONE: a kernel that reads or writes one
// element past the end faults (the AVX-512 build's masked tail must not touch it).
template <typename T>
class GuardedArray {
 public:
  explicit GuardedArray(int64_t n) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = (static_cast<size_t>(n) * sizeof(T) + page - 1) / page * page + page;
    base_ = static_cast<char*>(
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base_, MAP_FAILED);
    EXPECT_EQ(mprotect(base_ + bytes_ - page, page, PROT_NONE), 0);
    data_ = reinterpret_cast<T*>(base_ + bytes_ - page) - n;
  }
  ~GuardedArray() { munmap(base_, bytes_); }
  GuardedArray(const GuardedArray&) = delete;
  GuardedArray& operator=(const GuardedArray&) = delete;
  T* data() { return data_; }

 private:
  char* base_ = nullptr;
  size_t bytes_ = 0;
  T* data_ = nullptr;
};

// Values whose results exercise every lane rule: signed zeros, infinities, NaNs with payloads
// and signs (which NaN an op returns is part of its bits), subnormals, ties of max/min.
template <typename T>
std::vector<T> edge_values(std::mt19937_64& rng, int64_t n) {
  using L = std::numeric_limits<T>;
  T payload_nan;
  if constexpr (std::is_same_v<T, float>) {
    const uint32_t bits = 0xffc01234u;  // negative quiet NaN with a payload
    std::memcpy(&payload_nan, &bits, sizeof(bits));
  } else {
    const uint64_t bits = 0xfff8000000abcdefull;
    std::memcpy(&payload_nan, &bits, sizeof(bits));
  }
  const T specials[] = {T(0),           -T(0),       L::infinity(),   -L::infinity(),
                        L::quiet_NaN(), payload_nan, L::denorm_min(), -L::min(),
                        L::max(),       T(1),        T(-1),           T(3)};
  std::uniform_real_distribution<double> dist(-4.0, 4.0);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) {
    const uint64_t r = rng();
    x = r % 3 == 0 ? specials[(r >> 8) % std::size(specials)] : static_cast<T>(dist(rng));
  }
  return v;
}

template <typename T>
T binary_reference(VecBinaryOp op, T x, T y) {
  switch (op) {
    case VecBinaryOp::kAdd:
      return x + y;
    case VecBinaryOp::kSub:
      return x - y;
    case VecBinaryOp::kMul:
      return x * y;
    case VecBinaryOp::kDiv:
      return x / y;
    case VecBinaryOp::kMaximum:
      return math::max_propagate_nan<T>(x, y);
    case VecBinaryOp::kMinimum:
      return math::min_propagate_nan<T>(x, y);
  }
  return x;
}

template <typename T>
bool compare_reference(VecCompareOp op, T x, T y) {
  switch (op) {
    case VecCompareOp::kEq:
      return x == y;
    case VecCompareOp::kNe:
      return x != y;
    case VecCompareOp::kLt:
      return x < y;
    case VecCompareOp::kLe:
      return x <= y;
    case VecCompareOp::kGt:
      return x > y;
    case VecCompareOp::kGe:
      return x >= y;
  }
  return false;
}

// Bitwise, except an arithmetic op's NaN from two NaN operands: x86 returns the first operand's,
// and the compiler may swap a commutative op's operands in scalar code, so that NaN is any NaN
// (Note [NaN bits] in tests/cuda/conformance_util.h). maximum/minimum select: always bitwise.
template <typename T>
bool same_result(VecBinaryOp op, T got, T want, T x, T y) {
  const bool selects = op == VecBinaryOp::kMaximum || op == VecBinaryOp::kMinimum;
  if (!selects && std::isnan(x) && std::isnan(y)) return std::isnan(got);
  return same_bits(got, want);
}

// One run: the *_rows kernels with rows = 1.
constexpr int64_t kOneRow[3] = {0, 0, 0};
constexpr VecBinaryOp kVecBinaryOps[] = {VecBinaryOp::kAdd,     VecBinaryOp::kSub,
                                         VecBinaryOp::kMul,     VecBinaryOp::kDiv,
                                         VecBinaryOp::kMaximum, VecBinaryOp::kMinimum};
constexpr VecCompareOp kVecCompareOps[] = {VecCompareOp::kEq, VecCompareOp::kNe, VecCompareOp::kLt,
                                           VecCompareOp::kLe, VecCompareOp::kGt, VecCompareOp::kGe};
constexpr VecBroadcast kVecBroadcasts[] = {VecBroadcast::kNone, VecBroadcast::kScalarA,
                                           VecBroadcast::kScalarB};

// Every length 0..2x16+1 (every tail of every build's lanes) and a long run, each broadcast,
// out of place and in place, operands ending at a guard page: each lane's bits are the scalar
// formula's, nothing past n is read or written.
template <typename T>
void check_binary(const VecKernels& vk) {
  const char* build = cpu::cpu_capability_name(vk.capability);
  std::mt19937_64 rng(17);
  auto run = [&](VecBinaryOp op, VecBroadcast bc, T* o, const T* a, const T* b, int64_t n) {
    if constexpr (std::is_same_v<T, float>)
      vk.binary_rows_f32(op, bc, o, a, b, n, 1, kOneRow);
    else
      vk.binary_rows_f64(op, bc, o, a, b, n, 1, kOneRow);
  };
  for (int64_t n = 0; n <= 40; n += (n < 33 ? 1 : 7)) {
    for (VecBinaryOp op : kVecBinaryOps) {
      for (VecBroadcast bc : kVecBroadcasts) {
        const std::vector<T> x = edge_values<T>(rng, n + 1), y = edge_values<T>(rng, n + 1);
        GuardedArray<T> ga(n), gb(n), go(n);
        std::copy_n(x.begin(), n, ga.data());
        std::copy_n(y.begin(), n, gb.data());
        // A broadcast scalar lives outside the guarded run.
        const T* a = bc == VecBroadcast::kScalarA ? &x[size_t(n)] : ga.data();
        const T* b = bc == VecBroadcast::kScalarB ? &y[size_t(n)] : gb.data();
        auto want = [&](int64_t k) {
          return binary_reference(op, bc == VecBroadcast::kScalarA ? *a : a[k],
                                  bc == VecBroadcast::kScalarB ? *b : b[k]);
        };
        run(op, bc, go.data(), a, b, n);
        for (int64_t k = 0; k < n; ++k) {
          ASSERT_TRUE(same_result(op, go.data()[k], want(k),
                                  a[bc == VecBroadcast::kScalarA ? 0 : k],
                                  b[bc == VecBroadcast::kScalarB ? 0 : k]))
              << build << " op " << static_cast<int>(op) << " broadcast " << static_cast<int>(bc)
              << " n " << n << " at " << k << ": " << a[bc == VecBroadcast::kScalarA ? 0 : k]
              << ", " << b[bc == VecBroadcast::kScalarB ? 0 : k] << " gave " << go.data()[k]
              << ", not " << want(k);
        }
        if (bc == VecBroadcast::kScalarA) continue;
        // In place: o is a (a += b).
        std::vector<T> before(ga.data(), ga.data() + n);
        run(op, bc, ga.data(), ga.data(), b, n);
        for (int64_t k = 0; k < n; ++k) {
          const T w =
              binary_reference(op, before[size_t(k)], bc == VecBroadcast::kScalarB ? *b : b[k]);
          ASSERT_TRUE(same_result(op, ga.data()[k], w, before[size_t(k)],
                                  bc == VecBroadcast::kScalarB ? *b : b[k]))
              << build << " in place, op " << static_cast<int>(op) << " n " << n << " at " << k;
        }
      }
    }
  }
}

template <typename T>
void check_compare(const VecKernels& vk) {
  const char* build = cpu::cpu_capability_name(vk.capability);
  std::mt19937_64 rng(23);
  auto run = [&](VecCompareOp op, VecBroadcast bc, bool* o, const T* a, const T* b, int64_t n) {
    if constexpr (std::is_same_v<T, float>)
      vk.compare_rows_f32(op, bc, o, a, b, n, 1, kOneRow);
    else
      vk.compare_rows_f64(op, bc, o, a, b, n, 1, kOneRow);
  };
  for (int64_t n = 0; n <= 40; n += (n < 33 ? 1 : 7)) {
    for (VecCompareOp op : kVecCompareOps) {
      for (VecBroadcast bc : kVecBroadcasts) {
        std::vector<T> x = edge_values<T>(rng, n + 1), y = edge_values<T>(rng, n + 1);
        for (int64_t k = 0; k < n; k += 3) y[size_t(k)] = x[size_t(k)];  // ties
        GuardedArray<T> ga(n), gb(n);
        GuardedArray<uint8_t> go(n);
        std::copy_n(x.begin(), n, ga.data());
        std::copy_n(y.begin(), n, gb.data());
        const T* a = bc == VecBroadcast::kScalarA ? &x[size_t(n)] : ga.data();
        const T* b = bc == VecBroadcast::kScalarB ? &y[size_t(n)] : gb.data();
        std::memset(go.data(), 0x55, static_cast<size_t>(n));
        run(op, bc, reinterpret_cast<bool*>(go.data()), a, b, n);
        for (int64_t k = 0; k < n; ++k) {
          const bool w = compare_reference(op, bc == VecBroadcast::kScalarA ? *a : a[k],
                                           bc == VecBroadcast::kScalarB ? *b : b[k]);
          ASSERT_EQ(go.data()[k], w ? 1 : 0)  // a bool's byte is 0 or 1
              << build << " op " << static_cast<int>(op) << " broadcast " << static_cast<int>(bc)
              << " n " << n << " at " << k;
        }
      }
    }
  }
}

TEST_F(VecKernelsTest, EachBuildsBinaryOpsAreTheScalarFormulaBitwiseInEveryTail) {
  for (const VecKernels* vk : runnable_builds()) {
    check_binary<float>(*vk);
    check_binary<double>(*vk);
  }
}

TEST_F(VecKernelsTest, EachBuildsComparisonsAreTheScalarFormulaInEveryTail) {
  for (const VecKernels* vk : runnable_builds()) {
    check_compare<float>(*vk);
    check_compare<double>(*vk);
  }
}

// Note [Streaming copies] (tensor/cpu/copy.cc): each build's stream_copy writes memcpy's bytes
// for every length up to 200 (the head up to the store width's boundary, whole 64-byte lines, the
// tail) at every offset from a 64-byte boundary, reads nothing past the source (a guard page)
// and writes nothing outside the destination.
TEST_F(VecKernelsTest, EachBuildsStreamingCopyIsMemcpy) {
  constexpr int64_t kMax = 200;
  constexpr char kPad = 0x5a;
  for (const VecKernels* vk : runnable_builds()) {
    const char* build = cpu::cpu_capability_name(vk->capability);
    for (int64_t n = 0; n <= kMax; ++n) {
      GuardedArray<char> src(n);
      for (int64_t i = 0; i < n; ++i) src.data()[i] = static_cast<char>(i * 7 + 1);
      for (int64_t off = 0; off < 64; ++off) {
        alignas(64) char canvas[64 + 64 + kMax + 64];
        std::memset(canvas, kPad, sizeof(canvas));
        vk->stream_copy(canvas + 64 + off, src.data(), static_cast<size_t>(n));
        std::atomic_thread_fence(std::memory_order_seq_cst);  // mfence: orders the streaming stores
        for (int64_t k = 0; k < static_cast<int64_t>(sizeof(canvas)); ++k) {
          const int64_t i = k - 64 - off;
          const char want = i >= 0 && i < n ? src.data()[i] : kPad;
          ASSERT_EQ(canvas[k], want) << build << " n " << n << " offset " << off << " byte " << k;
        }
      }
    }
  }
}

// Note [Vectorized Philox]: each build's words are philox4x32_10's, for counters whose low word
// carries into the high one and that wrap at 2^64, and nothing past n counters is written.
TEST_F(VecKernelsTest, EachBuildsPhiloxWordsAreTheScalarRounds) {
  constexpr int64_t kMax = 3 * cpu::kPhiloxBlock;
  const uint64_t counters[] = {0, 5, (uint64_t{1} << 32) - 40, ~uint64_t{0} - 40,
                               0x123456789abcdef0u};
  const uint64_t keys[] = {0, 0xdeadbeefcafebabeu, ~uint64_t{0}};
  for (const VecKernels* vk : runnable_builds()) {
    const char* build = cpu::cpu_capability_name(vk->capability);
    for (uint64_t counter : counters) {
      for (uint64_t key : keys) {
        for (int64_t n = cpu::kPhiloxBlock; n <= kMax; n += cpu::kPhiloxBlock) {
          std::vector<uint32_t> words(4 * kMax + 4, 0x5a5a5a5au);
          vk->philox(counter, key, n, words.data());
          for (int64_t j = 0; j < n; ++j) {
            const Philox4 want = philox4x32_10(counter + static_cast<uint64_t>(j), 0, key);
            for (int r = 0; r < 4; ++r) {
              ASSERT_EQ(words[4 * j + r], want.w[r])
                  << build << " counter " << counter << " + " << j << " key " << key;
            }
          }
          for (size_t k = 4 * n; k < words.size(); ++k) ASSERT_EQ(words[k], 0x5a5a5a5au) << build;
        }
      }
    }
  }
}

// Note [Reduction order] in tensor/cpu/reduce.cc, written out: 8 partials, element k into k % 8
// while 8 remain, the rest into partial 0, then pairwise.
template <typename A, typename T, typename Combine>
A documented_fold(const T* x, int64_t n, A init, Combine combine) {
  A part[8];
  for (A& p : part) p = init;
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) part[j] = combine(part[j], static_cast<A>(x[k + j]));
  }
  for (; k < n; ++k) part[0] = combine(part[0], static_cast<A>(x[k]));
  for (int w = 4; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) part[j] = combine(part[j], part[j + w]);
  }
  return part[0];
}

// Values of very different magnitudes, so that any other association order rounds differently
// (checked: a left-to-right sum differs for some n), signed zeros for max/min's ties.
template <typename T>
void check_folds(const VecKernels& vk) {
  const char* build = cpu::cpu_capability_name(vk.capability);
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<double> mag(-30.0, 30.0);
  bool order_matters = false;
  for (int64_t n = 0; n <= 200; n += (n < 40 ? 1 : 37)) {
    std::vector<T> x(static_cast<size_t>(n));
    for (T& v : x) v = static_cast<T>(std::ldexp(mag(rng), static_cast<int>(rng() % 60) - 30));
    GuardedArray<T> g(n);
    std::copy_n(x.begin(), n, g.data());
    double got = std::is_same_v<T, float>
                     ? vk.sum_f32(reinterpret_cast<const float*>(g.data()), n)
                     : vk.sum_f64(reinterpret_cast<const double*>(g.data()), n);
    const double want =
        documented_fold<double>(x.data(), n, 0.0, [](double a, double b) { return a + b; });
    ASSERT_TRUE(same_bits(got, want)) << build << " sum n " << n << ": " << got << " vs " << want;
    double left_to_right = 0;
    for (T v : x) left_to_right += static_cast<double>(v);
    order_matters |= !same_bits(left_to_right, want);
    // max/min, with NaNs and signed zeros sprinkled in on odd lengths.
    if (n % 2 == 1) {
      for (int64_t k = 0; k < n; k += 5) x[size_t(k)] = (k / 5) % 2 ? T(0) : -T(0);
      if (n % 4 == 1) x[size_t(n / 2)] = std::numeric_limits<T>::quiet_NaN();
      std::copy_n(x.begin(), n, g.data());
    }
    constexpr T inf = std::numeric_limits<T>::infinity();
    for (VecBinaryOp op : {VecBinaryOp::kMaximum, VecBinaryOp::kMinimum}) {
      T e;
      if constexpr (std::is_same_v<T, float>)
        e = vk.extremum_f32(op, g.data(), n);
      else
        e = vk.extremum_f64(op, g.data(), n);
      const T w = op == VecBinaryOp::kMaximum
                      ? documented_fold<T>(x.data(), n, -inf, math::max_propagate_nan<T>)
                      : documented_fold<T>(x.data(), n, inf, math::min_propagate_nan<T>);
      ASSERT_TRUE(same_bits(e, w))
          << build << " op " << static_cast<int>(op) << " n " << n << ": " << e << " vs " << w;
    }
    if constexpr (std::is_same_v<T, float>) {  // acc[k] += double(x[k])
      std::vector<double> acc(static_cast<size_t>(n), 0.25), want_acc = acc;
      vk.add_widened_f32(acc.data(), g.data(), n);
      for (int64_t k = 0; k < n; ++k) want_acc[size_t(k)] += static_cast<double>(x[size_t(k)]);
      for (int64_t k = 0; k < n; ++k)
        ASSERT_TRUE(same_bits(acc[size_t(k)], want_acc[size_t(k)])) << build << " n " << n;
    }
  }
  EXPECT_TRUE(order_matters) << "the inputs do not tell association orders apart";
}

TEST_F(VecKernelsTest, EachBuildsReductionFoldsKeepTheDocumentedOrder) {
  for (const VecKernels* vk : runnable_builds()) {
    check_folds<float>(*vk);
    check_folds<double>(*vk);
  }
}

// Through the Tensor API, each build gives the baseline's bits: binary ops with contiguous,
// scalar and row/column broadcasts and strided operands; sums, means and max/min along the
// contiguous dim, an outer (strided) dim, and all dims, of float and double.
TEST_F(VecKernelsTest, TensorBinaryOpsAndReductionsHaveTheSameBitsInEveryBuild) {
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> dist(-1e3, 1e3);
  auto random = [&](IntArrayRef sizes, ScalarType dtype) {
    std::vector<double> v(static_cast<size_t>(compute_numel(sizes)));
    for (double& x : v) x = std::ldexp(dist(rng), static_cast<int>(rng() % 40) - 20);
    return native::to(from_vector(v, sizes), dtype);
  };
  auto bits = [](const Tensor& t) {
    Tensor c = native::contiguous(t);
    const char* p = static_cast<const char*>(c.raw_data());
    return std::vector<char>(p, p + c.numel() * c.element_size());
  };
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    Tensor m = random({37, 53}, dtype);
    Tensor row = random({53}, dtype), col = random({37, 1}, dtype), s = random({}, dtype);
    Tensor mt = native::t(random({53, 37}, dtype));  // strided
    std::vector<std::vector<char>> base;
    for (const VecKernels* vk : runnable_builds()) {
      cpu::set_cpu_capability(vk->capability);
      std::vector<std::vector<char>> got;
      for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv,
                          BinaryOp::kMaximum, BinaryOp::kMinimum, BinaryOp::kLt, BinaryOp::kEq}) {
        for (const Tensor& other : {m, row, col, s, mt}) {
          got.push_back(bits(native::binary(op, m, other)));
          got.push_back(bits(native::binary(op, other, m)));
        }
      }
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
        for (const Tensor& t : {m, mt}) {
          got.push_back(bits(native::reduce(op, t, {1}, false)));
          got.push_back(bits(native::reduce(op, t, {0}, false)));
          got.push_back(bits(native::reduce(op, t, {}, false)));
        }
      }
      if (base.empty()) {
        base = got;
        continue;
      }
      ASSERT_EQ(got.size(), base.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], base[i]) << cpu::cpu_capability_name(vk->capability) << " result " << i;
    }
  }
}

}  // namespace
}  // namespace mutagrad
