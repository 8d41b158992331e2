// Helpers for the indexing tests: read any tensor's elements in row-major order (through its
// strides, so views read what they see; a device tensor through a host copy) and build small
// tensors from vectors, on the test's device (tests/tensor/test_device.h: the *_cuda targets
// put them on the CUDA device).
//
//   Tensor x = f64({0, 1, 2, 3}, {2, 2});
//   EXPECT_EQ(doubles(x.index({1})), (std::vector<double>{2, 3}));
#pragma once

#include <cstring>
#include <vector>

#include "tensor/native/factories.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_device.h"

namespace mutagrad::testing {

using testing_device::on_test_device;
using testing_device::test_device;

// A constant built on the CPU, on the test's device.
inline Tensor dev(const Tensor& t) { return on_test_device(t); }

// Elements of t in row-major order, converted to double.
inline std::vector<double> doubles(const Tensor& any) {
  const Tensor t = testing_device::host_copy(any);
  std::vector<double> out;
  const int64_t n = t.numel();
  if (n == 0) return out;
  out.reserve(static_cast<size_t>(n));
  DimVector idx(static_cast<size_t>(t.dim()), 0);
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = static_cast<const T*>(t.raw_data());
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
      out.push_back(static_cast<double>(data[off]));
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < t.sizes()[d]) break;
        idx[d] = 0;
      }
    }
  });
  return out;
}

// The raw bytes of t's elements in row-major order (for bitwise comparisons).
inline std::vector<unsigned char> bytes(const Tensor& any) {
  const Tensor t = testing_device::host_copy(any);
  std::vector<unsigned char> out;
  const int64_t es = t.element_size();
  DimVector idx(static_cast<size_t>(t.dim()), 0);
  const auto* data = static_cast<const unsigned char*>(t.raw_data());
  for (int64_t k = 0; k < t.numel(); ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
    out.insert(out.end(), data + off * es, data + (off + 1) * es);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

inline std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().vec(); }

inline Tensor f64(const std::vector<double>& v, IntArrayRef sizes) {
  return on_test_device(from_vector<double>(v, sizes));
}
inline Tensor f32(const std::vector<float>& v, IntArrayRef sizes) {
  return on_test_device(from_vector<float>(v, sizes));
}
inline Tensor i64(const std::vector<int64_t>& v) {
  return on_test_device(from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}));
}
inline Tensor i64(const std::vector<int64_t>& v, IntArrayRef sizes) {
  return on_test_device(from_vector<int64_t>(v, sizes));
}
inline Tensor mask(const std::vector<bool>& v, IntArrayRef sizes) {
  Tensor t = empty(sizes, kBool);
  bool* p = t.data_ptr<bool>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return on_test_device(t);
}
// 0, 1, 2, ... of `sizes`, float64.
inline Tensor iota(IntArrayRef sizes, ScalarType dtype = kFloat64) {
  Tensor t = empty(sizes, dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(i);
  });
  return on_test_device(t);
}

}  // namespace mutagrad::testing
