// Every error path of the raw views and the factories: the exception type, and a message that
// carries PyTorch's wording (checked as a substring) plus the values involved.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>

#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

// Runs fn, expecting exception type E whose message contains `needle`.
using tensor_testing::expect_error;

class ViewErrors : public ::testing::Test {
 protected:
  Tensor x_ = zeros({3, 4});
  Tensor s_ = scalar_tensor(1.0);
};

TEST_F(ViewErrors, Select) {
  expect_error<IndexError>([&] { native::select(x_, 0, 5); },
                           "select(): index 5 out of range for tensor of size [3, 4] at "
                           "dimension 0");
  expect_error<IndexError>([&] { native::select(x_, 1, -5); },
                           "index -5 out of range for tensor of size [3, 4] at dimension 1");
  expect_error<IndexError>([&] { native::select(s_, 0, 0); },
                           "select() cannot be applied to a 0-dim tensor.");
  expect_error<IndexError>([&] { native::select(x_, 2, 0); },
                           "dimension out of range (expected to be in range of [-2, 1], but got "
                           "2)");
}

TEST_F(ViewErrors, Slice) {
  expect_error<ValueError>([&] { native::slice(x_, 0, 0, 2, 0); },
                           "step must be greater than zero");
  expect_error<ValueError>([&] { native::slice(x_, 0, 0, 2, -1); },
                           "step must be greater than zero");
  expect_error<IndexError>([&] { native::slice(x_, -3, 0, 1); }, "dimension out of range");
  expect_error<IndexError>([&] { native::slice(s_, 0, 0, 1); }, "0-dim");
}

TEST_F(ViewErrors, Narrow) {
  expect_error<IndexError>([&] { native::narrow(x_, 1, 5, 1); },
                           "start out of range (expected to be in range of [-4, 4], but got 5)");
  expect_error<ShapeError>([&] { native::narrow(x_, 1, 2, 3); },
                           "start (2) + length (3) exceeds dimension size (4)");
  expect_error<ShapeError>([&] { native::narrow(x_, 1, 2, -1); },
                           "start (2) + length (-1) exceeds dimension size (4)");
  expect_error<ShapeError>([&] { native::narrow(s_, 0, 0, 1); },
                           "narrow() cannot be applied to a 0-dim tensor.");
}

TEST_F(ViewErrors, PermuteTransposeT) {
  expect_error<ShapeError>([&] { native::permute(x_, {0}); },
                           "input.dim() = 2 is not equal to len(dims) = 1");
  expect_error<ValueError>(
      [&] {
        native::permute(x_, {0, 0});
      },
      "permute(): duplicate dims are not allowed");
  expect_error<ValueError>([&] { native::permute(x_, {1, -1}); }, "duplicate dims");
  expect_error<IndexError>([&] { native::permute(x_, {0, 2}); }, "dimension out of range");
  expect_error<IndexError>([&] { native::transpose(x_, 0, 2); }, "dimension out of range");
  expect_error<ShapeError>(
      [&] {
        native::t(zeros({2, 3, 4}));
      },
      "t() expects a tensor with <= 2 dimensions, but self is 3D");
}

TEST_F(ViewErrors, Expand) {
  expect_error<ShapeError>(
      [&] {
        native::expand(zeros({2, 3}), {2, 4});
      },
      "The expanded size of the tensor (4) must match the existing size (3) "
      "at non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: "
      "[2, 3]");
  expect_error<ShapeError>([&] { native::expand(x_, {3}); },
                           "expand(torch.FloatTensor{[3, 4]}, size=[3]): the number of sizes "
                           "provided (1) must be greater or equal to the number of dimensions in "
                           "the tensor (2)");
  expect_error<ShapeError>(
      [&] {
        native::expand(x_, {-1, 3, 4});
      },
      "The expanded size of the tensor (-1) isn't allowed in a leading, "
      "non-existing dimension 0");
  expect_error<ValueError>([&] { native::expand(zeros({2, 1}), {2, -2}); }, "invalid size -2");
}

TEST_F(ViewErrors, UnsqueezeSqueeze) {
  expect_error<IndexError>([&] { native::unsqueeze(x_, 3); },
                           "(expected to be in range of [-3, 2], but got 3)");
  expect_error<IndexError>([&] { native::squeeze(x_, 2); },
                           "(expected to be in range of [-2, 1], but got 2)");
  expect_error<IndexError>([&] { native::squeeze(s_, 1); },
                           "(expected to be in range of [-1, 0], but got 1)");
}

TEST_F(ViewErrors, ViewAndReshape) {
  expect_error<ShapeError>([&] { native::view(native::t(x_), {12}); },
                           "view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.");
  expect_error<ShapeError>(
      [&] {
        native::view(x_, {5, -1});
      },
      "shape '[5, -1]' is invalid for input of size 12");
  expect_error<ShapeError>(
      [&] {
        native::view(x_, {-1, -1});
      },
      "only one dimension can be inferred");
  expect_error<ShapeError>(
      [&] {
        native::view(x_, {5, 3});
      },
      "shape '[5, 3]' is invalid for input of size 12");
  expect_error<ShapeError>(
      [&] {
        native::reshape(x_, {7, -1});
      },
      "shape '[7, -1]' is invalid for input of size 12");
}

TEST_F(ViewErrors, FlattenDiagonal) {
  expect_error<ValueError>([&] { native::flatten(x_, 1, 0); },
                           "flatten() has invalid args: start_dim cannot come after end_dim");
  expect_error<IndexError>([&] { native::flatten(x_, 0, 2); }, "dimension out of range");
  expect_error<ValueError>([&] { native::diagonal(x_, 0, 1, 1); },
                           "diagonal dimensions cannot be identical 1, 1");
  expect_error<ValueError>([&] { native::diagonal(x_, 0, 0, -2); },
                           "diagonal dimensions cannot be identical 0, -2");
  expect_error<IndexError>([&] { native::diagonal(zeros({3}), 0, 0, 1); },
                           "dimension out of range");
}

TEST_F(ViewErrors, AsStrided) {
  expect_error<ValueError>(
      [&] {
        native::as_strided(x_, {4, 4}, {4, 1});
      },
      "sizes [4, 4], strides [4, 1], storage offset 0, and itemsize 4 "
      "requiring a storage size of 64 are out of bounds for storage of size "
      "48");
  expect_error<ValueError>([&] { native::as_strided(x_, {1}, {1}, 12); },
                           "requiring a storage size of 52 are out of bounds for storage of size "
                           "48");
  expect_error<ValueError>([&] { native::as_strided(x_, {4}, {-1}); },
                           "Negative strides are not supported at the moment, got strides: [-1]");
  expect_error<ShapeError>(
      [&] {
        native::as_strided(x_, {4}, {1, 1});
      },
      "mismatch in length of strides and shape");
  expect_error<ValueError>([&] { native::as_strided(x_, {4}, {1}, -1); },
                           "invalid storage offset -1");
  expect_error<ValueError>([&] { native::as_strided(x_, {-1}, {1}); },
                           "Trying to create tensor with negative dimension -1");
  // The reach overflows int64: a ShapeError (Note [Size overflow] in tensor/shape.h).
  expect_error<ShapeError>(
      [&] {
        native::as_strided(x_, {int64_t{1} << 40, 4}, {int64_t{1} << 40, 1});
      },
      "as_strided(): Storage size calculation overflowed with sizes=[1099511627776, 4] and "
      "strides=[1099511627776, 1]");
  // Empty views need no storage at all, wherever they point.
  EXPECT_NO_THROW(native::as_strided(x_, {0, 4}, {100, 1}, 40));
}

TEST_F(ViewErrors, MultiOutput) {
  expect_error<IndexError>([&] { native::unbind(s_, 0); },
                           "Dimension specified as 0 but tensor has no dimensions");
  expect_error<IndexError>([&] { native::unbind(x_, 2); }, "dimension out of range");
  expect_error<ValueError>([&] { native::split(x_, -1); },
                           "split expects split_size be non-negative, but got split_size=-1");
  expect_error<ValueError>([&] { native::split(x_, 0); },
                           "split_size can only be 0 if dimension size is 0, but got dimension "
                           "size of 3");
  expect_error<IndexError>([&] { native::split(s_, 1); }, "1-dimensional");
  expect_error<ShapeError>(
      [&] {
        native::split_with_sizes(x_, {1, 1});
      },
      "split_with_sizes expects split_sizes to sum exactly to 3 (input "
      "tensor's size at dimension 0), but got split_sizes=[1, 1]");
  expect_error<ValueError>(
      [&] {
        native::split_with_sizes(x_, {4, -1});
      },
      "split_with_sizes expects split_sizes have only non-negative entries, "
      "but got split_sizes=[4, -1]");
  expect_error<ValueError>([&] { native::chunk(x_, 0); },
                           "chunk expects `chunks` to be greater than 0, got: 0");
  expect_error<IndexError>([&] { native::chunk(s_, 1); },
                           "chunk expects at least a 1-dimensional tensor");
}

TEST(FactoryErrors, Sizes) {
  expect_error<ValueError>(
      [] {
        empty({-1, 2});
      },
      "Trying to create tensor with negative dimension -1: [-1, 2]");
  expect_error<ValueError>([] { zeros({2, -3}); }, "negative dimension -3");
  expect_error<ValueError>([] { full({-1}, 1); }, "negative dimension -1");
  expect_error<ShapeError>(
      [] {
        empty({int64_t{1} << 40, int64_t{1} << 40});
      },
      "empty(): Storage size calculation overflowed with sizes=[1099511627776, 1099511627776]");
  expect_error<ShapeError>(
      [] {
        empty_strided({2, 3}, {1});
      },
      "mismatch in length of strides and shape");
  expect_error<ValueError>([] { empty_strided({2, 3}, {-1, 1}); }, "negative strides");
  expect_error<ShapeError>(
      [] {
        from_vector<float>({1, 2, 3}, {2, 2});
      },
      "got 3 values for shape [2, 2] which holds 4");
  double buf[4] = {};
  expect_error<ShapeError>(
      [&] {
        from_blob(buf, {2, 2}, {1}, kFloat64, nullptr);
      },
      "mismatch in length of strides and shape");
  expect_error<ValueError>([&] { from_blob(buf, {-2}, {1}, kFloat64, nullptr); },
                           "negative dimension -2");
}

TEST(FactoryErrors, Arange) {
  expect_error<ValueError>([] { arange(0, 10, 0); }, "step must be nonzero");
  expect_error<ValueError>([] { arange(0, 10, -1); },
                           "upper bound and larger bound inconsistent with step sign");
  expect_error<ValueError>([] { arange(5, 0, 1); },
                           "upper bound and larger bound inconsistent with step sign");
  expect_error<ValueError>([] { arange(0, std::numeric_limits<double>::infinity()); },
                           "unsupported range: 0 -> inf");
  expect_error<ValueError>([] { arange(0, 1, 0.5, kInt64); }, "is zero once converted to int64");
  expect_error<DTypeError>([] { arange(3, kBool); }, "bool is not a supported dtype");
}

TEST(FactoryErrors, NestedLists) {
  expect_error<ShapeError>(
      [] {
        tensor({{1, 2}, {3}});
      },
      "expected sequence of length 2 at dim 1 (got 1)");
  expect_error<ShapeError>(
      [] {
        tensor({{1, 2}, 3});
      },
      "found a number at dim 1 where a sequence of length 2 was expected");
  expect_error<ShapeError>(
      [] {
        tensor({1, {2, 3}});
      },
      "found a list at dim 1 where a number was expected");
  expect_error<ShapeError>(
      [] {
        tensor({{{1}, {2}}, {{3}, {4, 5}}});
      },
      "expected sequence of length 1 at dim 2 (got 2)");
}

TEST(FactoryErrors, Random) {
  Generator gen(0);
  expect_error<DTypeError>([&] { rand({2}, gen, kInt64); },
                           "rand(): expected a floating point dtype (float32 or float64) but got "
                           "int64");
  expect_error<DTypeError>([&] { randn({2}, gen, kBool); }, "but got bool");
  expect_error<ValueError>([&] { randint(5, 5, {2}, gen); },
                           "random_ expects 'from' to be less than 'to', but got from=5 >= to=5");
  expect_error<ValueError>([&] { randint(0, 3, {2}, gen, kBool); },
                           "randint(): to - 1=2 is out of bounds for bool (values [0, 1])");
  expect_error<DTypeError>([&] { rand_like(zeros({2}, kInt32), gen); }, "but got int32");
}

// A failed factory or view leaves its inputs untouched.
TEST(FactoryErrors, FailedCallsChangeNothing) {
  Tensor x = zeros({3, 4});
  uint32_t version = x.version();
  EXPECT_THROW(native::view(native::t(x), {12}), ShapeError);
  EXPECT_THROW(native::as_strided(x, {100}, {1}), ValueError);
  EXPECT_EQ(x.version(), version);
  EXPECT_EQ(x.sizes().vec(), std::vector<int64_t>({3, 4}));
  EXPECT_EQ(x.strides().vec(), std::vector<int64_t>({4, 1}));
}

}  // namespace
}  // namespace mutagrad
