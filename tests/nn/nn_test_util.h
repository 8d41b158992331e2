// Helpers of the nn/ tests: the shared input pattern, host values, exception text.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mutagrad.h"
#include "nn/nn.h"
#include "tests/tensor/test_device.h"

namespace mutagrad_nn_test {

using mutagrad::Tensor;

// sin(arange(numel) * a + b) * s in float64 on the test's device (as gen_torch_expected.py).
inline Tensor pattern(mutagrad::IntArrayRef shape, double a, double b, double s = 1.0) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<double>(i) * a + b) * s;
  return mutagrad::testing_device::on_test_device(mutagrad::from_vector(v, shape));
}

inline std::vector<double> values(const Tensor& t) {
  Tensor c = mutagrad::testing_device::host_copy(t.detach().to(mutagrad::kFloat64)).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

}  // namespace mutagrad_nn_test
