// Helpers shared by the tests of tensor/: naive element access through the strides (the
// reference every kernel and view is checked against), seeded random tensors with random
// geometry, and exception-message checks.
//
//   Random rnd(7);
//   Tensor x = rnd.tensor(rnd.shape(), kFloat32);     // permuted, gappy, offset
//   EXPECT_EQ(elements(x).size(), x.numel());
//   expect_error<IndexError>([&] { x.select(0, 99); }, "out of range");
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace mutagrad::tensor_testing {

using Index = std::vector<int64_t>;

// All multi-indices of `sizes` in row-major order.
inline std::vector<Index> all_indices(IntArrayRef sizes) {
  std::vector<Index> out;
  if (compute_numel(sizes) == 0) return out;
  Index idx(sizes.size(), 0);
  while (true) {
    out.push_back(idx);
    int64_t d = static_cast<int64_t>(sizes.size()) - 1;
    while (d >= 0 && ++idx[d] == sizes[d]) idx[d--] = 0;
    if (d < 0) break;
  }
  return out;
}

// The element of t at idx, as a double (through the strides, whatever the dtype).
inline double read(const Tensor& t, const Index& idx) {
  int64_t p = 0;
  for (size_t d = 0; d < idx.size(); ++d) p += idx[d] * t.strides()[d];
  return dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<const T*>(t.raw_data())[p]);
  });
}

// v stored into a `dtype` element by PyTorch's rules, computed independently of the library's
// conversions for the integers: bool is v != 0; integers truncate and wrap to their width
// (uint8: -1 -> 255); float16/bfloat16 round to nearest even through float (their bit-level
// conversions are checked against the compiler's _Float16 in tests/tensor/half_test.cc).
inline double stored_as(double v, ScalarType dtype) {
  if (dtype == kBool) return v != 0 ? 1.0 : 0.0;
  if (dtype == kFloat64) return v;
  if (dtype == kFloat32) return static_cast<double>(static_cast<float>(v));
  if (dtype == kFloat16)
    return static_cast<double>(static_cast<float>(Half(static_cast<float>(v))));
  if (dtype == kBFloat16) {
    return static_cast<double>(static_cast<float>(BFloat16(static_cast<float>(v))));
  }
  const int64_t bits = element_size(dtype) * 8;
  const int64_t t = static_cast<int64_t>(std::trunc(v));
  if (bits == 64) return static_cast<double>(t);
  const int64_t span = int64_t{1} << bits;
  int64_t w = ((t % span) + span) % span;  // in [0, 2^bits)
  if (is_signed(dtype) && w >= span / 2) w -= span;
  return static_cast<double>(w);
}

// Every element of t, row-major, as doubles.
inline std::vector<double> elements(const Tensor& t) {
  std::vector<double> out;
  for (const Index& idx : all_indices(t.sizes())) out.push_back(read(t, idx));
  return out;
}

// A tensor viewing `storage` with the given geometry (no view bookkeeping: a raw TensorImpl).
inline Tensor strided_view(const Tensor& storage, IntArrayRef sizes, IntArrayRef strides,
                           int64_t offset) {
  return Tensor(std::make_shared<TensorImpl>(storage.storage(), DimVector(sizes),
                                             DimVector(strides), offset, storage.dtype(),
                                             storage.version_counter()));
}

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }

  DimVector shape(int64_t max_dim = 4, int64_t max_size = 5) {
    DimVector sizes;
    int64_t ndim = uniform(0, max_dim);
    for (int64_t d = 0; d < ndim; ++d) sizes.push_back(uniform(1, max_size));
    return sizes;
  }

  // A tensor of `sizes` and `dtype` with random values (small integers for integral dtypes)
  // and random geometry: permuted dims, gaps between them, a storage offset.
  Tensor tensor(IntArrayRef sizes, ScalarType dtype, double lo = -4, double hi = 4) {
    int64_t ndim = static_cast<int64_t>(sizes.size());
    std::vector<int64_t> order(static_cast<size_t>(ndim));
    for (int64_t d = 0; d < ndim; ++d) order[d] = d;
    if (uniform(0, 2) > 0) std::shuffle(order.begin(), order.end(), rng_);
    DimVector strides(static_cast<size_t>(ndim));
    int64_t acc = uniform(1, 2);
    for (int64_t k = ndim - 1; k >= 0; --k) {
      strides[order[k]] = acc;
      acc *= std::max<int64_t>(sizes[order[k]], 1) + uniform(0, 1);
    }
    int64_t offset = uniform(0, 3);
    int64_t span = offset + 1;
    for (int64_t d = 0; d < ndim; ++d) span += (std::max<int64_t>(sizes[d], 1) - 1) * strides[d];
    Tensor storage = empty({span}, dtype);
    dispatch_dtype(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = storage.data_ptr<T>();
      for (int64_t i = 0; i < span; ++i) {
        double v = real(lo, hi);
        if constexpr (std::is_same_v<T, bool>) {
          p[i] = v > 0;
        } else if constexpr (std::is_integral_v<T>) {
          p[i] = static_cast<T>(static_cast<int64_t>(std::floor(v)));  // uint8 wraps
        } else {
          p[i] = static_cast<T>(v);
        }
      }
    });
    return strided_view(storage, sizes, strides, offset);
  }

  std::mt19937_64& engine() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

inline constexpr const ScalarType (&kAllDtypes)[kNumScalarTypes] = kAllScalarTypes;

// Runs `fn` and expects an exception of type E whose message contains `substring`.
template <typename E, typename Fn>
void expect_error(Fn&& fn, const std::string& substring) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception containing \"" << substring << "\"";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(substring), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// The message of the E that `fn` throws; a test failure (and "") when it throws nothing.
template <typename E, typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return "";
}

// Every element of t (on any device), row-major, as doubles.
inline std::vector<double> values(const Tensor& t) { return elements(native::to(t, kCPU)); }

}  // namespace mutagrad::tensor_testing
