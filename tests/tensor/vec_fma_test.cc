// VecKernels::fma_f32 / fma_f64 (Backend::fma's CPU kernel, tensor/cpu/fused_optim_impl.h) in
// every build this CPU runs: std::fma's bits for each op, on edge values (signed zeros,
// infinities, NaNs, subnormals), contiguous and strided runs, a broadcast operand, in place and
// with an operand that is the output, and lengths around every vector width. Note [Torch's
// fused multiply-adds] in tensor/native/fma.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/cpu/vec_kernels.h"
#include "tests/tensor/fma_reference.h"

namespace mutagrad {
namespace {

using cpu::VecFmaOp;
using cpu::VecKernels;

std::vector<const VecKernels*> builds() {
  std::vector<const VecKernels*> out = {&cpu::baseline::kVecKernels};
  if (cpu::cpu_capability_runs(cpu::CpuCapability::kAvx2)) out.push_back(&cpu::avx2::kVecKernels);
  if (cpu::cpu_capability_runs(cpu::CpuCapability::kAvx512))
    out.push_back(&cpu::avx512::kVecKernels);
  return out;
}

template <typename T>
bool same_value(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0 || (std::isnan(a) && std::isnan(b));
}

template <typename T>
T reference(VecFmaOp op, T x, T y, T z, T value) {
  switch (op) {
    case VecFmaOp::kAddAlpha:
      return fma_reference::axpy(x, y, value);
    case VecFmaOp::kAddcmul:
      return fma_reference::addcmul(x, y, z, value);
    case VecFmaOp::kLerp:
      break;
  }
  return fma_reference::lerp(x, y, z);
}

template <typename T>
std::vector<T> values(std::mt19937_64& rng, size_t n) {
  using L = std::numeric_limits<T>;
  const T edges[] = {T(0),           -T(0),           L::infinity(), -L::infinity(),
                     L::quiet_NaN(), L::denorm_min(), -L::min(),     L::max(),
                     T(1),           T(-0.5),         T(0.5)};
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::vector<T> v(n);
  for (T& x : v) {
    const uint64_t r = rng();
    x = r % 7 == 0 ? edges[(r >> 8) % std::size(edges)]
                   : static_cast<T>((r % 2 ? 1 : -1) *
                                    std::ldexp(mantissa(rng), static_cast<int>(r % 29) - 14));
  }
  return v;
}

template <typename T>
void check(const VecKernels& vk) {
  const std::string build = cpu::cpu_capability_name(vk.capability);
  std::mt19937_64 rng(5);
  struct Strides {
    int64_t s[4];
  };
  int checked = 0;
  for (int64_t n : {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 1031}) {
    for (const Strides& st : {Strides{{1, 1, 1, 1}}, Strides{{2, 1, 3, 2}}, Strides{{1, 1, 0, 1}},
                              Strides{{1, 2, 1, 0}}}) {
      for (VecFmaOp op : {VecFmaOp::kAddAlpha, VecFmaOp::kAddcmul, VecFmaOp::kLerp}) {
        // Out of place, o = a, o = b, no c (lerp's number weight), o = c.
        for (int variant = 0; variant < 5; ++variant) {
          const bool has_c = op == VecFmaOp::kAddcmul || (op == VecFmaOp::kLerp && variant != 3);
          if (variant == 4 && !has_c) continue;
          const size_t len = static_cast<size_t>(n * 3 + 1);
          std::vector<T> a = values<T>(rng, len), b = values<T>(rng, len);
          std::vector<T> c = values<T>(rng, len);
          const std::vector<T> a0 = a, b0 = b, c0 = c;
          std::vector<T> fresh(len, T(7));
          T* o = variant == 1   ? a.data()
                 : variant == 2 ? b.data()
                 : variant == 4 ? c.data()
                                : fresh.data();
          int64_t s[4] = {st.s[0], st.s[1], st.s[2], st.s[3]};
          if (variant == 1) s[0] = s[1];       // the same elements as a
          if (variant == 2 || variant == 4) {  // the same elements as b or c (not broadcast)
            const int k = variant == 2 ? 2 : 3;
            s[k] = s[k] == 0 ? 1 : s[k];
            s[0] = s[k];
          }
          const T value = static_cast<T>(variant == 3 ? 0.3 : -1.7);
          if constexpr (std::is_same_v<T, float>)
            vk.fma_f32(op, o, a.data(), b.data(), has_c ? c.data() : nullptr, value, n, s);
          else
            vk.fma_f64(op, o, a.data(), b.data(), has_c ? c.data() : nullptr, value, n, s);
          for (int64_t k = 0; k < n; ++k) {
            const T z = has_c ? c0[size_t(k * s[3])] : value;
            const T want = reference(op, a0[size_t(k * s[1])], b0[size_t(k * s[2])], z, value);
            ASSERT_TRUE(same_value(o[k * s[0]], want))
                << build << " op " << int(op) << " n " << n << " variant " << variant << " at " << k
                << ": " << o[k * s[0]] << " vs " << want;
            ++checked;
          }
          if (variant == 0) {  // nothing but the output's elements written
            for (size_t k = 0; k < len; ++k) {
              if (k % size_t(s[0]) != 0 || k >= size_t(n * s[0])) {
                ASSERT_EQ(fresh[k], T(7)) << k;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(VecFma, EachBuildIsStdFmaOnEveryLayout) {
  for (const VecKernels* vk : builds()) {
    check<float>(*vk);
    check<double>(*vk);
  }
}

}  // namespace
}  // namespace mutagrad
