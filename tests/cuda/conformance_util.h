// What the device conformance tests share: tensors with the same geometry and bytes on another
// device, special values, bitwise/ulp comparison, and check_op(), which runs an op on CPU
// copies and on device copies of the same inputs and compares results (or error texts).
//
//   TEST_P(MyConformance, Neg) {   // using MyConformance = conformance::DeviceTest;
//     check_op(GetParam(), {x}, [](auto& t) { return native::neg(t[0]); }, 0, "neg");
//   }
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda/cuda.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tests/tensor/test_util.h"

namespace mutagrad::conformance {

using tensor_testing::Random;
using tensor_testing::strided_view;

inline constexpr int64_t kUlps = 8;
inline const Device kGpu(DeviceType::CUDA, 0);

inline bool host_run() { return cuda::build_name().rfind("host-run", 0) == 0; }

// A tensor on `device` with the same geometry (sizes, strides, offset) and storage bytes as the
// CPU tensor `t`: the whole storage is transferred, then viewed the same way.
inline Tensor same_on(const Tensor& t, Device device) {
  if (device.is_cpu()) return t;
  const int64_t n = static_cast<int64_t>(t.storage().nbytes()) / t.element_size();
  Tensor flat(std::make_shared<TensorImpl>(t.storage(), DimVector{n}, DimVector{1}, 0, t.dtype(),
                                           VersionCounter()));
  Tensor moved = native::to(flat, device);
  return strided_view(moved, t.sizes(), t.strides(), t.storage_offset());
}

// A contiguous CPU copy.
inline Tensor host(const Tensor& t) { return native::contiguous(native::to(t, kCPU)); }

// Random values with the edge cases of each dtype mixed in (nan, infinities, -0.0, subnormals,
// values beyond int32/int64 for conversions).
inline void sprinkle(const Tensor& t, Random& rnd) {
  const int64_t n = static_cast<int64_t>(t.storage().nbytes()) / t.element_size();
  Tensor flat(std::make_shared<TensorImpl>(t.storage(), DimVector{n}, DimVector{1}, 0, t.dtype(),
                                           VersionCounter()));
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating_type_v<T>) {
      // float16/bfloat16: float's specials rounded (1e10 is inf in float16), and their own
      // smallest subnormal and largest finite value.
      using F = std::conditional_t<is_reduced_float_v<T>, float, T>;
      using L = std::numeric_limits<F>;
      T tiny, big;
      if constexpr (std::is_same_v<T, Half>) {
        tiny = Half::from_bits(0x0001);
        big = Half::from_bits(0x7bff);
      } else if constexpr (std::is_same_v<T, BFloat16>) {
        tiny = BFloat16::from_bits(0x0001);
        big = BFloat16::from_bits(0x7f7f);
      } else {
        tiny = L::denorm_min();
        big = L::max();
      }
      const T specials[] = {T(F(0)),           T(-F(0)), T(L::quiet_NaN()), T(L::infinity()),
                            T(-L::infinity()), tiny,     T(F(1e10)),        T(F(-3e9)),
                            T(F(0.5)),         T(F(2)),  T(F(-1)),          big};
      T* p = flat.data_ptr<T>();
      for (int64_t i = 0; i < n; ++i) {
        if (rnd.uniform(0, 3) == 0) p[i] = specials[rnd.uniform(0, 11)];
      }
    } else if constexpr (!std::is_same_v<T, bool>) {  // wrap-around at the extremes
      using L = std::numeric_limits<T>;
      const T specials[] = {L::max(), L::min(), T(-1), T(0), T(2)};
      T* p = flat.data_ptr<T>();
      for (int64_t i = 0; i < n; ++i) {
        if (rnd.uniform(0, 5) == 0) p[i] = specials[rnd.uniform(0, 4)];
      }
    }
  });
}

inline Tensor input(Random& rnd, IntArrayRef sizes, ScalarType dtype) {
  Tensor t = rnd.tensor(sizes, dtype);
  sprinkle(t, rnd);
  return t;
}

template <typename T>
int64_t ulp_distance(T a, T b) {
  using I = std::conditional_t<sizeof(T) == 2, int16_t,
                               std::conditional_t<sizeof(T) == 4, int32_t, int64_t>>;
  I ia, ib;
  std::memcpy(&ia, &a, sizeof(T));
  std::memcpy(&ib, &b, sizeof(T));
  if (ia < 0) ia = std::numeric_limits<I>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<I>::min() - ib;
  return ia > ib ? static_cast<int64_t>(ia) - ib : static_cast<int64_t>(ib) - ia;
}

// Same shape and dtype, and every element bitwise equal or accepted by accept(got, want)
// (called with the elements' type); the first other element is a test failure.
template <typename Accept>
void expect_elements(const Tensor& got_any, const Tensor& want_any, const std::string& what,
                     const Accept& accept) {
  Tensor got = host(got_any), want = host(want_any);
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  dispatch_dtype(got.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = got.data_ptr<T>();
    const T* w = want.data_ptr<T>();
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (std::memcmp(&g[i], &w[i], sizeof(T)) == 0 || accept(g[i], w[i])) continue;
      ADD_FAILURE() << what << ": element " << i << " is " << +g[i] << ", expected " << +w[i];
      return;
    }
  });
}

// Note [NaN bits]
// Arithmetic that makes a NaN makes x86's "default NaN" on the CPU (sign bit set, printed
// -nan) and the canonical 0x7fff... NaN on a GPU: IEEE 754 leaves the sign and payload of a
// produced NaN open, and the first GPU run (docs/cuda.md) saw exactly that difference and no
// other in the exact ops. So an op's results compare a NaN equal to any NaN; copies and
// transfers move bytes and are compared byte for byte (expect_identical).

// Bitwise equal, both nan, or (ulps > 0, floating) within `ulps`. See Note [NaN bits].
inline void expect_same(const Tensor& got, const Tensor& want, int64_t ulps,
                        const std::string& what) {
  expect_elements(got, want, what, [ulps](auto g, auto w) {
    if constexpr (is_floating_type_v<decltype(g)>) {
      if (std::isnan(g) || std::isnan(w)) return std::isnan(g) && std::isnan(w);
      return ulps > 0 && ulp_distance(g, w) <= ulps;
    }
    return false;
  });
}

// Byte for byte, NaN payloads included: what a copy or a transfer must give.
inline void expect_identical(const Tensor& got, const Tensor& want, const std::string& what) {
  expect_elements(got, want, what, [](auto, auto) { return false; });
}

// Integers and bools equal; floating values both nan or within atol + rtol * |want| (so -0.0
// and 0.0 match: for reductions whose order differs).
inline void expect_close(const Tensor& got, const Tensor& want, double atol, double rtol,
                         const std::string& what) {
  expect_elements(got, want, str(what, " (atol ", atol, ", rtol ", rtol, ")"),
                  [atol, rtol](auto g, auto w) {
                    if constexpr (is_floating_type_v<decltype(g)>) {
                      const double gd = g, wd = w;
                      return (std::isnan(gd) && std::isnan(wd)) ||
                             std::abs(gd - wd) <= atol + rtol * std::abs(wd);
                    }
                    return false;
                  });
}

using Op = std::function<Tensor(const std::vector<Tensor>&)>;
using Compare = std::function<void(const Tensor& got, const Tensor& want)>;

// Runs `op` on the CPU inputs (contiguous copies) and on `device`'s copies of them, and
// compares with `compare`; an error on the CPU must be the same error on the device.
inline void check_op_with(Device device, const std::vector<Tensor>& cpu_inputs, const Op& op,
                          const Compare& compare, const std::string& what) {
  std::vector<Tensor> contiguous, on_device;
  for (const Tensor& t : cpu_inputs) {
    contiguous.push_back(native::clone(t));
    on_device.push_back(same_on(t, device));
  }
  Tensor want;
  std::string want_error;
  try {
    want = op(contiguous);
  } catch (const Error& e) {
    want_error = e.what();
  }
  try {
    Tensor got = op(on_device);
    ASSERT_TRUE(want_error.empty()) << what << ": the CPU raised \"" << want_error << "\"";
    ASSERT_EQ(got.device(), device) << what;
    compare(got, want);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), want_error) << what;
  }
}

// check_op_with, comparing bitwise (ulps = 0) or within `ulps` (expect_same).
inline void check_op(Device device, const std::vector<Tensor>& cpu_inputs, const Op& op,
                     int64_t ulps, const std::string& what) {
  check_op_with(
      device, cpu_inputs, op,
      [&](const Tensor& got, const Tensor& want) { expect_same(got, want, ulps, what); }, what);
}

// Parameterized over {CPU, CUDA}; skips only the CUDA instance, and only when no CUDA device
// is there (never in the host-run build, which the suite links).
class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) {
      GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
    }
  }
  // Shapes: random ones plus the edge geometries every op must handle.
  std::vector<DimVector> shapes() {
    std::vector<DimVector> out = {{}, {0}, {3, 0}, {1}, {5}, {2, 1, 3}};
    for (int i = 0; i < 6; ++i) out.push_back(rnd_.shape());
    return out;
  }
  Random rnd_{20240521};
};

inline const auto kDevices = ::testing::Values(kCPU, kGpu);
inline std::string device_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cpu() ? "cpu" : "cuda";
}

}  // namespace mutagrad::conformance
