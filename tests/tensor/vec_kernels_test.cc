// The per-capability kernels (Note [CPU capability dispatch] in tensor/cpu/vec_kernels.h): the
// choice at run time (MUTAGRAD_CPU_CAPABILITY, set_cpu_capability), each build's GEMM against a
// naive product (integers exactly), each build's transcendentals against std:: (exactly outside
// the vectorized domain), and ops through the Tensor API after a switch.
#include "tensor/cpu/vec_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/error.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tensor/native/pointwise.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers
using cpu::CpuCapability;
using cpu::VecKernels;
using cpu::VecUnaryOp;

// The builds this CPU runs: baseline always, AVX2 where cpuid says so.
std::vector<const VecKernels*> runnable_builds() {
  std::vector<const VecKernels*> builds = {&cpu::baseline::kVecKernels};
  if (cpu::cpu_capability_supported() == CpuCapability::kAvx2)
    builds.push_back(&cpu::avx2::kVecKernels);
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
  // What cpuid says, read independently of the library's check.
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  EXPECT_EQ(cpu::cpu_capability_supported() == CpuCapability::kAvx2, avx2);
}

TEST_F(VecKernelsTest, SwitchingChangesTheTableOrRefusesAnUnsupportedBuild) {
  cpu::set_cpu_capability(CpuCapability::kBaseline);
  EXPECT_EQ(&cpu::vec_kernels(), &cpu::baseline::kVecKernels);
  if (cpu::cpu_capability_supported() == CpuCapability::kAvx2) {
    cpu::set_cpu_capability(CpuCapability::kAvx2);
    EXPECT_EQ(&cpu::vec_kernels(), &cpu::avx2::kVecKernels);
  } else {
    EXPECT_THROW(cpu::set_cpu_capability(CpuCapability::kAvx2), ValueError);
    EXPECT_EQ(&cpu::vec_kernels(), &cpu::baseline::kVecKernels);
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

}  // namespace
}  // namespace mutagrad
