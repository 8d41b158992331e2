// Tests of the raw element-wise ops (tensor/native/pointwise.h): every unary and binary op
// against hand-derived values, broadcasting, in-place outputs, where, nonzero, the error paths,
// and seeded random shapes, strides and dtypes against a naive reference.
#include "tensor/native/pointwise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Element-wise equality that treats two NaNs as equal.
void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 0) {
  std::vector<double> got = elements(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
    } else if (tol == 0 || std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "element " << i;
    }
  }
}

UnaryArgs args1(const Scalar& a) {
  UnaryArgs u;
  u.arg = a;
  u.has_arg = true;
  return u;
}

UnaryArgs clamp_args(std::optional<Scalar> lo, std::optional<Scalar> hi) {
  UnaryArgs u;
  if (lo) {
    u.arg = *lo;
    u.has_arg = true;
  }
  if (hi) {
    u.arg2 = *hi;
    u.has_arg2 = true;
  }
  return u;
}

Tensor floats(std::vector<double> v, ScalarType dtype = kFloat32) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) t.data_ptr<T>()[i] = static_cast<T>(v[i]);
  });
  return t;
}

// ---- Unary ----------------------------------------------------------------------------------

TEST(Unary, HandDerivedFloatValues) {
  Tensor x = floats({-2.0, -0.5, 0.0, 1.0, 4.0});
  expect_values(native::unary(UnaryOp::kNeg, x), {2.0, 0.5, 0.0, -1.0, -4.0});
  expect_values(native::unary(UnaryOp::kAbs, x), {2.0, 0.5, 0.0, 1.0, 4.0});
  expect_values(native::unary(UnaryOp::kRelu, x), {0.0, 0.0, 0.0, 1.0, 4.0});
  expect_values(native::unary(UnaryOp::kLogicalNot, x), {0, 0, 1, 0, 0});
  expect_values(native::unary(UnaryOp::kExp, x),
                {std::exp(-2.0), std::exp(-0.5), 1.0, std::exp(1.0), std::exp(4.0)}, 1e-6);
  expect_values(native::unary(UnaryOp::kSigmoid, x),
                {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5, 1 / (1 + std::exp(-1.0)),
                 1 / (1 + std::exp(-4.0))},
                1e-6);
  expect_values(native::unary(UnaryOp::kTanh, x),
                {std::tanh(-2.0), std::tanh(-0.5), 0.0, std::tanh(1.0), std::tanh(4.0)}, 1e-6);
  expect_values(native::unary(UnaryOp::kSin, x),
                {std::sin(-2.0), std::sin(-0.5), 0.0, std::sin(1.0), std::sin(4.0)}, 1e-6);
  expect_values(native::unary(UnaryOp::kCos, x),
                {std::cos(-2.0), std::cos(-0.5), 1.0, std::cos(1.0), std::cos(4.0)}, 1e-6);
  expect_values(native::unary(UnaryOp::kSqrt, x), {kNan, kNan, 0.0, 1.0, 2.0});
  expect_values(native::unary(UnaryOp::kLog, x), {kNan, kNan, -kInf, 0.0, std::log(4.0)}, 1e-6);
}

TEST(Unary, NanHandling) {
  Tensor x = floats({kNan, -1.0});
  expect_values(native::unary(UnaryOp::kRelu, x), {kNan, 0.0});  // relu(nan) is nan
  expect_values(native::unary(UnaryOp::kClamp, x, clamp_args(0.0, 1.0)), {kNan, 0.0});
  expect_values(native::unary(UnaryOp::kLogicalNot, x), {0, 0});
}

TEST(Unary, SignedZerosAndIntegerWraparound) {
  Tensor z = floats({0.0, -0.0});
  Tensor n = native::unary(UnaryOp::kNeg, z);
  EXPECT_TRUE(std::signbit(n.data_ptr<float>()[0]));
  EXPECT_FALSE(std::signbit(n.data_ptr<float>()[1]));
  Tensor a = native::unary(UnaryOp::kAbs, z);
  EXPECT_FALSE(std::signbit(a.data_ptr<float>()[1]));
  // Two's complement wraparound, as PyTorch: -INT64_MIN and INT64_MAX + 1 are INT64_MIN.
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  Tensor i = tensor({lo, hi});
  expect_values(native::unary(UnaryOp::kNeg, i),
                {static_cast<double>(lo), static_cast<double>(-hi)});
  EXPECT_EQ(native::binary(BinaryOp::kAdd, tensor({hi}), Scalar(1)).item<int64_t>(), lo);
  EXPECT_EQ(native::binary(BinaryOp::kMul, full({1}, 1 << 30, kInt32), Scalar(4)).item<int64_t>(),
            0);
}

TEST(Unary, IntegerInputs) {
  Tensor x = tensor({-3, 0, 5});
  expect_values(native::unary(UnaryOp::kNeg, x), {3, 0, -5});
  expect_values(native::unary(UnaryOp::kAbs, x), {3, 0, 5});
  expect_values(native::unary(UnaryOp::kRelu, x), {0, 0, 5});
  Tensor e = native::unary(UnaryOp::kExp, x);
  ASSERT_EQ(e.dtype(), kFloat32);
  expect_values(e, {std::exp(-3.0), 1.0, std::exp(5.0)}, 1e-6);
  Tensor s = native::unary(UnaryOp::kSigmoid, tensor({true, false}));
  ASSERT_EQ(s.dtype(), kFloat32);
  expect_values(s, {1 / (1 + std::exp(-1.0)), 0.5}, 1e-6);
  expect_values(native::unary(UnaryOp::kLogicalNot, tensor({true, false})), {0, 1});
}

TEST(Unary, PowByScalar) {
  Tensor x = floats({-2.0, 0.5, 3.0}, kFloat64);
  expect_values(native::unary(UnaryOp::kPowScalar, x, args1(2)), {4.0, 0.25, 9.0});
  expect_values(native::unary(UnaryOp::kPowScalar, x, args1(3)), {-8.0, 0.125, 27.0});
  expect_values(native::unary(UnaryOp::kPowScalar, x, args1(-1)), {-0.5, 2.0, 1.0 / 3.0});
  expect_values(native::unary(UnaryOp::kPowScalar, x, args1(0.5)),
                {kNan, std::sqrt(0.5), std::sqrt(3.0)});
  expect_values(native::unary(UnaryOp::kPowScalar, x, args1(1.5)),
                {kNan, std::pow(0.5, 1.5), std::pow(3.0, 1.5)}, 1e-12);
  expect_values(native::unary(UnaryOp::kPowScalar, x, args1(0)), {1.0, 1.0, 1.0});
  Tensor i = tensor({-2, 0, 3});
  Tensor cube = native::unary(UnaryOp::kPowScalar, i, args1(3));
  ASSERT_EQ(cube.dtype(), kInt64);
  expect_values(cube, {-8, 0, 27});
  Tensor f = native::unary(UnaryOp::kPowScalar, i, args1(2.0));
  ASSERT_EQ(f.dtype(), kFloat32);
  expect_values(f, {4, 0, 9});
  Tensor b = native::unary(UnaryOp::kPowScalar, tensor({true, false}), args1(2));
  ASSERT_EQ(b.dtype(), kInt64);
  expect_values(b, {1, 0});
}

TEST(Unary, Clamp) {
  Tensor x = floats({-2.0, 0.5, 3.0});
  expect_values(native::unary(UnaryOp::kClamp, x, clamp_args(0.0, 1.0)), {0.0, 0.5, 1.0});
  expect_values(native::unary(UnaryOp::kClamp, x, clamp_args(0.0, std::nullopt)), {0.0, 0.5, 3.0});
  expect_values(native::unary(UnaryOp::kClamp, x, clamp_args(std::nullopt, 1.0)), {-2.0, 0.5, 1.0});
  // min > max: every element becomes max, as PyTorch.
  expect_values(native::unary(UnaryOp::kClamp, x, clamp_args(2.0, 1.0)), {1.0, 1.0, 1.0});
  Tensor i = native::unary(UnaryOp::kClamp, tensor({-5, 2, 9}), clamp_args(0, 4));
  ASSERT_EQ(i.dtype(), kInt64);
  expect_values(i, {0, 2, 4});
  Tensor f = native::unary(UnaryOp::kClamp, tensor({1, 2}), clamp_args(1.5, std::nullopt));
  ASSERT_EQ(f.dtype(), kFloat32);
  expect_values(f, {1.5, 2.0});
}

TEST(Unary, LargeTensorsAcrossThreads) {
  // Above the (lower) parallel threshold of the costly ops: both halves are computed.
  const int64_t n = 50001;
  Tensor x = native::binary(BinaryOp::kMul, arange(n, kFloat32), Scalar(1e-4));
  Tensor e = native::unary(UnaryOp::kExp, x);
  Tensor t = native::unary(UnaryOp::kTanh, x);
  const float* px = x.data_ptr<float>();
  const float* pe = e.data_ptr<float>();
  const float* pt = t.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(pe[i], std::exp(static_cast<double>(px[i])), 1e-6 * std::exp(px[i])) << i;
    ASSERT_NEAR(pt[i], std::tanh(static_cast<double>(px[i])), 1e-6) << i;
  }
}

TEST(Unary, Errors) {
  expect_error<DTypeError>([] { native::unary(UnaryOp::kNeg, tensor({true})); },
                           "Negation, the `-` operator, on a bool tensor is not supported");
  expect_error<DTypeError>([] { native::unary(UnaryOp::kAbs, tensor({true})); },
                           "\"abs_cpu\" not implemented for 'Bool'");
  expect_error<DTypeError>([] { native::unary(UnaryOp::kRelu, tensor({true})); },
                           "Boolean inputs not supported for relu");
  expect_error<ValueError>([] { native::unary(UnaryOp::kPowScalar, tensor({2}), args1(-1)); },
                           "Integers to negative integer powers are not allowed");
  expect_error<ValueError>([] { native::unary(UnaryOp::kClamp, tensor({2})); },
                           "At least one of 'min' or 'max' must not be None");
}

TEST(UnaryOut, InPlace) {
  Tensor x = floats({-1.0, 2.0});
  native::unary_out(UnaryOp::kNeg, x, x);
  expect_values(x, {1.0, -2.0});
  Tensor col = strided_view(native::clone(floats({1, 2, 3, 4, 5, 6})), {3}, {2}, 1);
  native::unary_out(UnaryOp::kPowScalar, col, col, args1(2));
  expect_values(col, {4, 16, 36});
  expect_values(strided_view(col, {6}, {1}, 0), {1, 4, 3, 16, 5, 36});
}

TEST(UnaryOut, CastsIntoAWiderOutput) {
  Tensor out = zeros({2}, kFloat64);
  native::unary_out(UnaryOp::kNeg, out, tensor({3, -4}));
  expect_values(out, {-3, 4});
  Tensor f = zeros({2}, kFloat32);
  native::unary_out(UnaryOp::kLogicalNot, f, tensor({0, 7}));
  expect_values(f, {1, 0});
}

TEST(UnaryOut, Errors) {
  Tensor i = tensor({1, 2});
  expect_error<DTypeError>([&] { native::unary_out(UnaryOp::kExp, i, i); },
                           "result type Float can't be cast to the desired output type Long");
  expect_values(i, {1, 2});
  Tensor b = zeros({2}, kBool);
  expect_error<DTypeError>(
      [&] {
        native::unary_out(UnaryOp::kAbs, b, tensor({1, 2}));
      },
      "result type Long can't be cast to the desired output type Bool");
  expect_error<ShapeError>([&] { native::unary_out(UnaryOp::kNeg, zeros({3}), zeros({2})); },
                           "output with shape [3] doesn't match the input shape [2]");
  Tensor base = zeros({1});
  expect_error<ValueError>(
      [&] { native::unary_out(UnaryOp::kNeg, strided_view(base, {2}, {0}, 0), zeros({2})); },
      "more than one element of the written-to tensor refers to a single memory location");
}

TEST(UnaryOut, PartialOverlapReadsInputFirst) {
  // out = x[1:], in = x[:-1]: exp of the original values.
  Tensor x = floats({0.0, 1.0, 2.0, 3.0}, kFloat64);
  native::unary_out(UnaryOp::kNeg, strided_view(x, {3}, {1}, 1), strided_view(x, {3}, {1}, 0));
  expect_values(x, {0.0, -0.0, -1.0, -2.0});
}

// ---- Binary ---------------------------------------------------------------------------------

TEST(Binary, HandDerivedValues) {
  Tensor a = floats({6.0, -3.0, 2.0, 0.0});
  Tensor b = floats({2.0, 4.0, 2.0, 5.0});
  expect_values(native::binary(BinaryOp::kAdd, a, b), {8, 1, 4, 5});
  expect_values(native::binary(BinaryOp::kSub, a, b), {4, -7, 0, -5});
  expect_values(native::binary(BinaryOp::kMul, a, b), {12, -12, 4, 0});
  expect_values(native::binary(BinaryOp::kDiv, a, b), {3, -0.75, 1, 0});
  expect_values(native::binary(BinaryOp::kPow, a, b), {36, 81, 4, 0});
  expect_values(native::binary(BinaryOp::kMaximum, a, b), {6, 4, 2, 5});
  expect_values(native::binary(BinaryOp::kMinimum, a, b), {2, -3, 2, 0});
  expect_values(native::binary(BinaryOp::kEq, a, b), {0, 0, 1, 0});
  expect_values(native::binary(BinaryOp::kNe, a, b), {1, 1, 0, 1});
  expect_values(native::binary(BinaryOp::kLt, a, b), {0, 1, 0, 1});
  expect_values(native::binary(BinaryOp::kLe, a, b), {0, 1, 1, 1});
  expect_values(native::binary(BinaryOp::kGt, a, b), {1, 0, 0, 0});
  expect_values(native::binary(BinaryOp::kGe, a, b), {1, 0, 1, 0});
  expect_values(native::binary(BinaryOp::kLogicalAnd, a, b), {1, 1, 1, 0});
  expect_values(native::binary(BinaryOp::kLogicalOr, a, b), {1, 1, 1, 1});
}

TEST(Binary, BoolAndIntegerArithmetic) {
  Tensor t = tensor({true, true, false, false}), f = tensor({true, false, true, false});
  Tensor sum = native::binary(BinaryOp::kAdd, t, f);
  ASSERT_EQ(sum.dtype(), kBool);
  expect_values(sum, {1, 1, 1, 0});
  expect_values(native::binary(BinaryOp::kMul, t, f), {1, 0, 0, 0});
  expect_values(native::binary(BinaryOp::kMaximum, t, f), {1, 1, 1, 0});
  expect_values(native::binary(BinaryOp::kLogicalAnd, t, f), {1, 0, 0, 0});
  // Integer pow, with negative exponents truncating as PyTorch: 2**-1 = 0, (-1)**-3 = -1.
  expect_values(native::binary(BinaryOp::kPow, tensor({2, 1, -1, 3}), tensor({-1, -2, -3, 4})),
                {0, 1, -1, 81});
  expect_values(native::binary(BinaryOp::kDiv, tensor({1, -7}), tensor({0, 2})), {kInf, -3.5});
}

TEST(Binary, NanPropagatesThroughMaximumAndMinimum) {
  Tensor a = floats({kNan, 1.0, 2.0});
  Tensor b = floats({0.0, kNan, 1.0});
  expect_values(native::binary(BinaryOp::kMaximum, a, b), {kNan, kNan, 2.0});
  expect_values(native::binary(BinaryOp::kMinimum, a, b), {kNan, kNan, 1.0});
  expect_values(native::binary(BinaryOp::kEq, a, a), {0, 1, 1});
  expect_values(native::binary(BinaryOp::kNe, a, a), {1, 0, 0});
}

TEST(Binary, Broadcasting) {
  Tensor col = tensor({{1.0}, {2.0}});      // [2, 1]
  Tensor row = tensor({10.0, 20.0, 30.0});  // [3]
  Tensor r = native::binary(BinaryOp::kAdd, col, row);
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3}));
  expect_values(r, {11, 21, 31, 12, 22, 32});
  Tensor s = native::binary(BinaryOp::kSub, scalar_tensor(1.0), row);
  expect_values(s, {-9, -19, -29});
  Tensor empty_r = native::binary(BinaryOp::kMul, zeros({0, 3}), row);
  EXPECT_EQ(empty_r.sizes().vec(), (std::vector<int64_t>{0, 3}));
  expect_error<ShapeError>([] { native::binary(BinaryOp::kAdd, zeros({2}), zeros({3})); },
                           "must match the size of tensor b (3)");
}

TEST(Binary, WithScalar) {
  Tensor x = tensor({1, 2, 3});
  Tensor r = native::binary(BinaryOp::kMul, x, Scalar(2));
  ASSERT_EQ(r.dtype(), kInt64);
  expect_values(r, {2, 4, 6});
  Tensor p = native::binary(BinaryOp::kPow, floats({2, 3}), Scalar(2));
  expect_values(p, {4, 9});
  Tensor g = native::binary(BinaryOp::kGe, x, Scalar(2));
  expect_values(g, {0, 1, 1});
  Tensor b = native::binary(BinaryOp::kAdd, tensor({true, false}), Scalar(1));
  ASSERT_EQ(b.dtype(), kInt64);
  expect_values(b, {2, 1});
}

TEST(Binary, Errors) {
  expect_error<DTypeError>([] { native::binary(BinaryOp::kSub, tensor({true}), tensor({false})); },
                           "Subtraction, the `-` operator, with two bool tensors is not supported");
  expect_error<DTypeError>([] { native::binary(BinaryOp::kSub, tensor({1}), tensor({true})); },
                           "Subtraction, the `-` operator, with a bool tensor is not supported");
  expect_error<DTypeError>([] { native::binary(BinaryOp::kSub, tensor({true}), Scalar(1)); },
                           "with a bool tensor is not supported");
  expect_error<DTypeError>([] { native::binary(BinaryOp::kPow, tensor({true}), tensor({true})); },
                           "\"pow\" not implemented for 'Bool'");
}

TEST(BinaryOut, InPlaceWithBroadcasting) {
  Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}});
  native::binary_out(BinaryOp::kAdd, a, a, tensor({10.0, 20.0}));
  expect_values(a, {11, 22, 13, 24});
  native::binary_out(BinaryOp::kMul, a, a, a);
  expect_values(a, {121, 484, 169, 576});
  // Float out, int inputs: computed in int64, then converted.
  Tensor f = zeros({2}, kFloat64);
  native::binary_out(BinaryOp::kAdd, f, tensor({1, 2}), tensor({3, 4}));
  expect_values(f, {4, 6});
  // A comparison can be written into a float output (bool casts to anything).
  native::binary_out(BinaryOp::kLt, f, tensor({1, 5}), tensor({3, 4}));
  expect_values(f, {1, 0});
}

TEST(BinaryOut, Errors) {
  Tensor i = tensor({1, 2});
  expect_error<DTypeError>(
      [&] {
        native::binary_out(BinaryOp::kAdd, i, i, floats({0.5, 0.5}));
      },
      "result type Float can't be cast to the desired output type Long");
  expect_error<DTypeError>([&] { native::binary_out(BinaryOp::kDiv, i, i, i); },
                           "result type Float can't be cast to the desired output type Long");
  expect_values(i, {1, 2});
  Tensor b = tensor({true, false});
  expect_error<DTypeError>(
      [&] {
        native::binary_out(BinaryOp::kAdd, b, b, tensor({1, 1}));
      },
      "result type Long can't be cast to the desired output type Bool");
  Tensor small = zeros({2});
  expect_error<ShapeError>(
      [&] {
        native::binary_out(BinaryOp::kAdd, small, small, zeros({2, 2}));
      },
      "output with shape [2] doesn't match the broadcast shape [2, 2]");
  Tensor base = zeros({2});
  Tensor expanded = strided_view(base, {2, 2}, {0, 1}, 0);
  expect_error<ValueError>(
      [&] {
        native::binary_out(BinaryOp::kAdd, expanded, expanded, ones({2, 2}));
      },
      "add(): unsupported operation: more than one element of the written-to tensor refers to a "
      "single memory location. Please clone() the tensor before performing the operation.");
  expect_values(base, {0, 0});
}

TEST(BinaryOut, PartialOverlapReadsInputsFirst) {
  // x[1:] += x[:-1] on [1, 2, 3, 4]: [1, 3, 5, 7] (not a running sum).
  Tensor x = floats({1, 2, 3, 4}, kFloat64);
  Tensor hi = strided_view(x, {3}, {1}, 1), lo = strided_view(x, {3}, {1}, 0);
  native::binary_out(BinaryOp::kAdd, hi, hi, lo);
  expect_values(x, {1, 3, 5, 7});
  // a += a[0] (broadcast row of itself): every row adds the original first row.
  Tensor m = tensor({{1, 2}, {3, 4}, {5, 6}});
  native::binary_out(BinaryOp::kAdd, m, m, strided_view(m, {2}, {1}, 0));
  expect_values(m, {2, 4, 4, 6, 6, 8});
}

TEST(Binary, LargeContiguousAndBroadcastRuns) {
  // Above the parallel threshold, with a broadcast scalar and a broadcast row.
  const int64_t n = 200003;
  Tensor a = arange(n, kFloat32);
  Tensor r = native::binary(BinaryOp::kMul, a, Scalar(0.5));
  const float* p = r.data_ptr<float>();
  for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(p[i], static_cast<float>(i) * 0.5f);
  ASSERT_EQ(p[n - 1], static_cast<float>(n - 1) * 0.5f);
  Tensor m =
      native::binary(BinaryOp::kAdd, strided_view(arange(600, kFloat64), {600, 1}, {1, 1}, 0),
                     arange(300, kFloat64));
  const double* q = m.data_ptr<double>();
  for (int64_t i = 0; i < 600; ++i) {
    for (int64_t j = 0; j < 300; ++j) ASSERT_EQ(q[i * 300 + j], static_cast<double>(i + j));
  }
}

TEST(Binary, TensorsOnDifferentDevicesAreADeviceError) {
  // A tensor that claims to live on cuda:0 (never dereferenced: validation fails first).
  std::vector<float> host(2, 0.0f);
  Storage storage =
      Storage::from_blob(host.data(), sizeof(float) * 2, Device(DeviceType::CUDA, 0), nullptr);
  Tensor gpu(std::make_shared<TensorImpl>(storage, DimVector{2}, DimVector{1}, 0, kFloat32,
                                          VersionCounter()));
  Tensor cpu = zeros({2});
  expect_error<DeviceError>([&] { native::binary(BinaryOp::kAdd, cpu, gpu); },
                            "Expected all tensors to be on the same device");
  expect_error<DeviceError>([&] { native::binary_out(BinaryOp::kAdd, cpu, cpu, gpu); },
                            "Expected all tensors to be on the same device");
  expect_error<DeviceError>(
      [&] {
        native::where(tensor({true, false}), cpu, gpu);
      },
      "Expected all tensors to be on the same device");
  expect_error<DeviceError>([&] { native::unary_out(UnaryOp::kNeg, cpu, gpu); },
                            "Expected all tensors to be on the same device");
  EXPECT_EQ(elements(cpu), (std::vector<double>{0, 0}));
}

TEST(Binary, ConcurrentCallersOfLargeOps) {
  // Large ops from several threads at once: whoever finds the worker thread busy runs inline;
  // every result must still be complete and right.
  const int64_t n = 150001;
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Tensor a = full({n}, static_cast<double>(t), kFloat64);
      bool good = true;
      for (int rep = 0; rep < 5; ++rep) {
        Tensor r = native::binary(BinaryOp::kAdd, a, Scalar(rep));
        const double* p = r.data_ptr<double>();
        for (int64_t i = 0; i < n; ++i) good = good && p[i] == t + rep;
      }
      ok[t] = good ? 1 : 0;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
}

// ---- Randomized against a naive reference ---------------------------------------------------

// a op b for values already converted to the compute dtype `t`, converted to the result dtype.
double reference_binary(BinaryOp op, double x, double y, ScalarType t) {
  auto cast = [&](double v) { return stored_as(v, t); };
  const bool is_int = is_integral(t, false);
  switch (op) {
    case BinaryOp::kAdd:
      return cast(x + y);
    case BinaryOp::kSub:
      return cast(x - y);
    case BinaryOp::kMul:
      return cast(x * y);
    case BinaryOp::kDiv:
      return cast(x / y);
    case BinaryOp::kPow:
      if (is_int && y < 0) return x == 1 ? 1 : x == -1 ? (std::fmod(y, 2) == 0 ? 1 : -1) : 0;
      if (is_int) {  // exact: products modulo 2^64, then wrapped to the dtype
        uint64_t r = 1;
        for (int64_t k = 0; k < static_cast<int64_t>(y); ++k) {
          r *= static_cast<uint64_t>(static_cast<int64_t>(x));
        }
        if (element_size(t) < 8) r &= 0xffffffffu;  // exact in a double
        return cast(static_cast<double>(static_cast<int64_t>(r)));
      }
      return cast(std::pow(x, y));
    case BinaryOp::kMaximum:
      return std::isnan(x) || std::isnan(y) ? kNan : std::max(x, y);
    case BinaryOp::kMinimum:
      return std::isnan(x) || std::isnan(y) ? kNan : std::min(x, y);
    case BinaryOp::kEq:
      return x == y;
    case BinaryOp::kNe:
      return x != y;
    case BinaryOp::kLt:
      return x < y;
    case BinaryOp::kLe:
      return x <= y;
    case BinaryOp::kGt:
      return x > y;
    case BinaryOp::kGe:
      return x >= y;
    case BinaryOp::kLogicalAnd:
      return x != 0 && y != 0;
    case BinaryOp::kLogicalOr:
      return x != 0 || y != 0;
    case BinaryOp::kLogicalXor:
      return (x != 0) != (y != 0);
    // Integer compute dtypes only (the test skips the floating ones): exact in double.
    case BinaryOp::kRemainder:
      return x - y * std::floor(x / y);
    case BinaryOp::kFmod:
      return std::fmod(x, y);
    case BinaryOp::kFloorDivide:
      return std::floor(x / y);
    case BinaryOp::kTruncDivide:
      return std::trunc(x / y);
    case BinaryOp::kBitwiseAnd:
      return cast(static_cast<double>(static_cast<int64_t>(x) & static_cast<int64_t>(y)));
    case BinaryOp::kBitwiseOr:
      return cast(static_cast<double>(static_cast<int64_t>(x) | static_cast<int64_t>(y)));
    case BinaryOp::kBitwiseXor:
      return cast(static_cast<double>(static_cast<int64_t>(x) ^ static_cast<int64_t>(y)));
    case BinaryOp::kShiftLeft:
      return cast(x * std::pow(2.0, y));  // counts in [0, 3] (see the test)
    case BinaryOp::kShiftRight:
      return std::floor(x / std::pow(2.0, y));
    case BinaryOp::kAtan2:
      return cast(std::atan2(x, y));
  }
  return kNan;
}

double to_dtype(double v, ScalarType t) { return reference_binary(BinaryOp::kAdd, v, 0, t); }

TEST(Binary, RandomShapesStridesAndDtypesAgainstReference) {
  Random rnd(42);
  const BinaryOp ops[] = {
      BinaryOp::kAdd,        BinaryOp::kSub,        BinaryOp::kMul,         BinaryOp::kDiv,
      BinaryOp::kPow,        BinaryOp::kMaximum,    BinaryOp::kMinimum,     BinaryOp::kEq,
      BinaryOp::kNe,         BinaryOp::kLt,         BinaryOp::kLe,          BinaryOp::kGt,
      BinaryOp::kGe,         BinaryOp::kLogicalAnd, BinaryOp::kLogicalOr,   BinaryOp::kLogicalXor,
      BinaryOp::kRemainder,  BinaryOp::kFmod,       BinaryOp::kFloorDivide, BinaryOp::kTruncDivide,
      BinaryOp::kBitwiseAnd, BinaryOp::kBitwiseOr,  BinaryOp::kBitwiseXor,  BinaryOp::kShiftLeft,
      BinaryOp::kShiftRight, BinaryOp::kAtan2};
  const int64_t num_ops = static_cast<int64_t>(sizeof(ops) / sizeof(ops[0]));
  for (int trial = 0; trial < 1500; ++trial) {
    BinaryOp op = ops[rnd.uniform(0, num_ops - 1)];
    ScalarType ta = kAllDtypes[rnd.uniform(0, kNumScalarTypes - 1)];
    ScalarType tb = kAllDtypes[rnd.uniform(0, kNumScalarTypes - 1)];
    if (op == BinaryOp::kSub && (ta == kBool || tb == kBool)) continue;
    if (op == BinaryOp::kPow && ta == kBool && tb == kBool) continue;
    const bool integer_only = op >= BinaryOp::kRemainder && op <= BinaryOp::kShiftRight;
    const ScalarType promoted = native::result_type(tensor({1}, ta), tensor({1}, tb));
    if (integer_only && !is_integral(promoted, false)) continue;  // floats: math_ops_test
    DimVector shape = rnd.shape();
    // Each operand drops leading dims and makes some dims 1 (broadcast).
    auto operand_shape = [&] {
      DimVector s;
      int64_t drop = rnd.uniform(0, static_cast<int64_t>(shape.size()));
      for (size_t d = static_cast<size_t>(drop); d < shape.size(); ++d) {
        s.push_back(rnd.uniform(0, 3) == 0 ? 1 : shape[d]);
      }
      return s;
    };
    DimVector sa = operand_shape(), sb = operand_shape();
    Tensor a = rnd.tensor(sa, ta), b = rnd.tensor(sb, tb);
    if (op == BinaryOp::kPow) {  // keep integer powers small and non-overflowing
      a = native::unary(UnaryOp::kClamp, a, clamp_args(-3, 3));
      b = native::unary(UnaryOp::kClamp, b, clamp_args(-3, 3));
    }
    if (op >= BinaryOp::kShiftLeft && op <= BinaryOp::kShiftRight) {  // small counts
      b = native::unary(UnaryOp::kClamp, b, clamp_args(0, 3));
    }
    if (op >= BinaryOp::kRemainder && op <= BinaryOp::kTruncDivide) {  // no zero divisor
      b = native::where(native::binary(BinaryOp::kEq, b, Scalar(0)), tensor(7, b.dtype()), b);
    }
    Tensor r = native::binary(op, a, b);
    DimVector out_shape = broadcast_shapes(sa, sb);
    ASSERT_EQ(r.sizes().vec(), out_shape.vec());
    ScalarType compute = native::result_type(a, b);
    if ((op == BinaryOp::kDiv || op == BinaryOp::kAtan2) && !is_floating_point(compute)) {
      compute = kFloat32;  // float-only ops compute integers in the default dtype
    }
    auto pick = [&](const Tensor& t, const Index& idx) {
      Index i;
      size_t lead = idx.size() - static_cast<size_t>(t.dim());
      for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d) {
        i.push_back(t.sizes()[d] == 1 ? 0 : idx[d + lead]);
      }
      return to_dtype(read(t, i), compute);
    };
    for (const Index& idx : all_indices(out_shape)) {
      double want = reference_binary(op, pick(a, idx), pick(b, idx), compute);
      double got = read(r, idx);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got));
      } else if (op == BinaryOp::kPow && is_floating_point(compute) && !std::isinf(want)) {
        ASSERT_NEAR(got, want, 1e-5 * std::max(1.0, std::abs(want)));
      } else if (op == BinaryOp::kAtan2) {  // libm in the compute dtype, rounded once
        ASSERT_NEAR(got, want, element_size(compute) == 2 ? 1e-2 : 1e-6);
      } else {
        ASSERT_EQ(got, want) << binary_op_name(op) << " " << ta << " " << tb << " trial " << trial
                             << " x=" << pick(a, idx) << " y=" << pick(b, idx);
      }
    }
  }
}

TEST(Unary, RandomStridesAgainstReference) {
  Random rnd(7);
  const UnaryOp ops[] = {UnaryOp::kNeg,     UnaryOp::kAbs, UnaryOp::kExp, UnaryOp::kLog,
                         UnaryOp::kSqrt,    UnaryOp::kSin, UnaryOp::kCos, UnaryOp::kTanh,
                         UnaryOp::kSigmoid, UnaryOp::kRelu};
  for (int trial = 0; trial < 300; ++trial) {
    UnaryOp op = ops[rnd.uniform(0, 9)];
    ScalarType dt = rnd.uniform(0, 1) ? kFloat32 : kFloat64;
    Tensor x = rnd.tensor(rnd.shape(), dt, 0.1, 3);
    if (rnd.uniform(0, 1)) x = native::binary(BinaryOp::kSub, x, Scalar(1.5));
    Tensor r = native::unary(op, x);
    ASSERT_EQ(r.dtype(), dt);
    for (const Index& idx : all_indices(x.sizes())) {
      double v = read(x, idx), want = 0;
      switch (op) {
        case UnaryOp::kNeg:
          want = -v;
          break;
        case UnaryOp::kAbs:
          want = std::abs(v);
          break;
        case UnaryOp::kExp:
          want = std::exp(v);
          break;
        case UnaryOp::kLog:
          want = std::log(v);
          break;
        case UnaryOp::kSqrt:
          want = std::sqrt(v);
          break;
        case UnaryOp::kSin:
          want = std::sin(v);
          break;
        case UnaryOp::kCos:
          want = std::cos(v);
          break;
        case UnaryOp::kTanh:
          want = std::tanh(v);
          break;
        case UnaryOp::kSigmoid:
          want = 1 / (1 + std::exp(-v));
          break;
        default:
          want = v < 0 ? 0 : v;
          break;
      }
      double got = read(r, idx);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got));
      } else {
        ASSERT_NEAR(got, want, (dt == kFloat32 ? 1e-6 : 1e-14) * std::max(1.0, std::abs(want)))
            << unary_op_name(op);
      }
    }
  }
}

// ---- where, nonzero, wrap_scalar -----------------------------------------------------------

TEST(Where, SelectsWithBroadcasting) {
  Tensor cond = tensor({{true}, {false}});  // [2, 1]
  Tensor r = native::where(cond, tensor({1.0, 2.0, 3.0}), scalar_tensor(-1.0));
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3}));
  expect_values(r, {1, 2, 3, -1, -1, -1});
  Random rnd(5);
  for (int trial = 0; trial < 100; ++trial) {
    DimVector shape = rnd.shape();
    Tensor c = rnd.tensor(shape, kBool), a = rnd.tensor(shape, kInt64),
           b = rnd.tensor(shape, kFloat64);
    Tensor w = native::where(c, a, b);
    ASSERT_EQ(w.dtype(), kFloat64);
    for (const Index& idx : all_indices(shape)) {
      ASSERT_EQ(read(w, idx), read(c, idx) ? read(a, idx) : read(b, idx));
    }
  }
}

TEST(Where, ConditionMustBeBool) {
  expect_error<DTypeError>(
      [] { native::where(tensor({1}), tensor({1}), tensor({2})); },
      "expected condition to be a boolean tensor, but got a tensor with dtype Long");
}

TEST(Nonzero, CoordinatesInRowMajorOrder) {
  Tensor x = tensor({{0, 3, 0}, {5, 0, 6}});
  Tensor nz = native::nonzero(x);
  ASSERT_EQ(nz.dtype(), kInt64);
  EXPECT_EQ(nz.sizes().vec(), (std::vector<int64_t>{3, 2}));
  expect_values(nz, {0, 1, 1, 0, 1, 2});
  // A transposed view: order follows the view's logical order.
  Tensor xt = strided_view(x, {3, 2}, {1, 3}, 0);  // [[0,5],[3,0],[0,6]]
  expect_values(native::nonzero(xt), {0, 1, 1, 0, 2, 1});
  Tensor none = native::nonzero(zeros({4}));
  EXPECT_EQ(none.sizes().vec(), (std::vector<int64_t>{0, 1}));
  Tensor s = native::nonzero(scalar_tensor(2.0));
  EXPECT_EQ(s.sizes().vec(), (std::vector<int64_t>{1, 0}));
  expect_values(native::nonzero(floats({0.0, kNan, -0.0})), {1});
}

TEST(WrapScalar, ZeroDimOfTheDtype) {
  Tensor t = native::wrap_scalar(2.5, kFloat64, kCPU);
  EXPECT_EQ(t.dim(), 0);
  EXPECT_EQ(t.dtype(), kFloat64);
  EXPECT_EQ(t.item<double>(), 2.5);
  EXPECT_EQ(native::wrap_scalar(2.5, kInt32, kCPU).item<int64_t>(), 2);
}

}  // namespace
}  // namespace mutagrad
