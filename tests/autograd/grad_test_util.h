// Helpers for the autograd tests: random float64 leaves (contiguous or not) on the test's
// device and a check that runs gradcheck and gradgradcheck on a function.
//
// The op tests (*_ops_test.cc) run twice: on the CPU, and as the *_ops_test_cuda targets with
// MUTAGRAD_TEST_DEVICE=cuda, where leaf(), strided_leaf() and dev() put every tensor on the
// CUDA device (the host-run build in `./bazelw test //...`; tests/autograd/BUILD.bazel).
//
//   Tensor x = leaf({2, 3}, 1);                  // uniform in [-1, 1], requires grad
//   Tensor y = strided_leaf({2, 3}, 2);          // same, non-contiguous (a transposed view)
//   check_grads([](const VariableList& in) { return in[0] * in[1]; }, {x, y});
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "mutagrad.h"
#include "tests/tensor/test_device.h"

namespace mutagrad::testing_util {

using autograd::VariableList;

using testing_device::test_device;

// `t` (a constant built on the CPU) on the test's device.
inline Tensor dev(const Tensor& t) { return testing_device::on_test_device(t); }

// Uniform in [lo, hi), float64, requires grad; on the test's device (the values do not
// depend on the device: drawn on the CPU, then moved).
inline Tensor leaf(IntArrayRef sizes, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Generator gen(seed);
  Tensor t = rand(sizes, gen, kFloat64);
  native::binary_out(BinaryOp::kMul, t, t, native::wrap_scalar(hi - lo, kFloat64, kCPU));
  native::binary_out(BinaryOp::kAdd, t, t, native::wrap_scalar(lo, kFloat64, kCPU));
  return dev(t).requires_grad_();
}

// As leaf(), but a non-contiguous tensor: the transpose of a contiguous one (sizes reversed).
inline Tensor strided_leaf(IntArrayRef sizes, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  DimVector reversed;
  for (size_t d = sizes.size(); d-- > 0;) reversed.push_back(sizes[d]);
  Tensor base = leaf(reversed, seed, lo, hi).detach();
  DimVector perm;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) perm.push_back(d);
  Tensor t = native::permute(base, perm);
  return t.requires_grad_();
}

// Values of a tensor as doubles, row-major.
inline std::vector<double> values(const Tensor& t) {
  Tensor c = native::contiguous(native::to(t, kCPU, kFloat64));
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

inline void expect_close(const Tensor& actual, const std::vector<double>& expected,
                         double tol = 1e-9) {
  std::vector<double> got = values(actual);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

// The message of the exception of type E that f() throws; a test failure if it throws none.
template <typename E = autograd::AutogradError, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

inline void check_grads(const autograd::TensorFunction& fn, const VariableList& inputs) {
  EXPECT_TRUE(autograd::gradcheck(fn, inputs));
  EXPECT_TRUE(autograd::gradgradcheck(fn, inputs));
}

// y = x^3 as a custom Function with hand-written backward and jvp (the forward-mode tests:
// gradcheck_test, saved_variable_test); kWrongJvp's jvp says 2 x^2 v instead of 3 x^2 v, which
// gradcheck's check_forward_ad must catch while its backward passes.
template <bool kWrongJvp = false>
struct Cube : autograd::Function<Cube<kWrongJvp>> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->saved_data["x"] = x;  // for jvp (saved tensors are backward's)
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static autograd::VariableList backward(autograd::AutogradContext* ctx,
                                         autograd::VariableList grads) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * x * x * 3.0};
  }
  static autograd::VariableList jvp(autograd::AutogradContext* ctx,
                                    autograd::VariableList tangents) {
    const Tensor& x = ctx->saved_data["x"].to_tensor();
    return {tangents[0] * x * x * (kWrongJvp ? 2.0 : 3.0)};
  }
};

}  // namespace mutagrad::testing_util

#define CHECK_GRADS(fn, ...)                                \
  do {                                                      \
    SCOPED_TRACE(#fn);                                      \
    ::mutagrad::testing_util::check_grads(fn, __VA_ARGS__); \
  } while (0)
