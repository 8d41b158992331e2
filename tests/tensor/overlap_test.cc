// Memory overlap in every writing op (copy_, fill_, unary_out, binary_out): a written-to tensor
// whose elements share memory is a ValueError with PyTorch's message and leaves memory
// untouched; an input that partially overlaps the output is read before anything is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers

const char* kOverlapMessage =
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation.";

TEST(InternalOverlap, EveryWritingOpRefusesAnExpandedOutput) {
  Tensor base = tensor({1.0, 2.0, 3.0});
  Tensor expanded = strided_view(base, {2, 3}, {0, 1}, 0);  // base.expand(2, 3)
  ASSERT_EQ(has_internal_overlap(expanded.sizes(), expanded.strides()), MemOverlap::kYes);
  Tensor src = ones({2, 3});
  expect_error<ValueError>([&] { native::copy_(expanded, src); },
                           std::string("copy_(): ") + kOverlapMessage);
  expect_error<ValueError>([&] { native::fill_(expanded, 0); },
                           std::string("fill_(): ") + kOverlapMessage);
  expect_error<ValueError>([&] { native::unary_out(UnaryOp::kNeg, expanded, src); },
                           std::string("neg(): ") + kOverlapMessage);
  expect_error<ValueError>([&] { native::binary_out(BinaryOp::kMul, expanded, expanded, src); },
                           std::string("mul(): ") + kOverlapMessage);
  EXPECT_EQ(elements(base), (std::vector<double>{1, 2, 3}));
  // A zero-stride dim of size 1 is not an overlap.
  Tensor fine = strided_view(base, {1, 3}, {0, 1}, 0);
  native::fill_(fine, 7);
  EXPECT_EQ(elements(base), (std::vector<double>{7, 7, 7}));
}

// An empty tensor has no elements to share memory: zero strides (as NumPy gives empty arrays)
// are not an overlap, and writes into it are no-ops, as in PyTorch.
TEST(InternalOverlap, EmptyTensorWithZeroStridesIsWritable) {
  Tensor base = tensor({1.0, 2.0, 3.0});
  Tensor empty = strided_view(base, {3, 0}, {0, 0}, 0);
  native::fill_(empty, 5);
  native::copy_(empty, zeros({3, 0}));
  native::binary_out(BinaryOp::kAdd, empty, empty, zeros({3, 0}));
  EXPECT_EQ(elements(base), (std::vector<double>{1, 2, 3}));
}

TEST(InternalOverlap, TooHardToTellIsAllowed) {
  // (i, j) -> 2i + 3j over 3x3: all distinct, though not provably so by sorting strides.
  Tensor storage = zeros({11}, kInt64);
  Tensor v = strided_view(storage, {3, 3}, {2, 3}, 0);
  ASSERT_EQ(has_internal_overlap(v.sizes(), v.strides()), MemOverlap::kTooHard);
  native::copy_(v, tensor({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}));
  EXPECT_EQ(elements(storage), (std::vector<double>{1, 0, 4, 2, 7, 5, 3, 8, 6, 0, 9}));
}

TEST(PartialOverlap, CopyShiftedSlices) {
  Tensor x = arange(6, kFloat32);
  native::copy_(strided_view(x, {5}, {1}, 1), strided_view(x, {5}, {1}, 0));  // x[1:] = x[:-1]
  EXPECT_EQ(elements(x), (std::vector<double>{0, 0, 1, 2, 3, 4}));
  Tensor y = arange(6, kFloat32);
  native::copy_(strided_view(y, {3}, {2}, 0), strided_view(y, {3}, {1}, 1));  // y[::2] = y[1:4]
  EXPECT_EQ(elements(y), (std::vector<double>{1, 1, 2, 3, 3, 5}));
}

TEST(PartialOverlap, CopyWithBroadcastSourceFromTheDestination) {
  // m[:] = m[0] (a row of m broadcast over m): every row becomes the original first row.
  Tensor m = tensor({{1, 2}, {3, 4}, {5, 6}});
  native::copy_(m, strided_view(m, {2}, {1}, 0));
  EXPECT_EQ(elements(m), (std::vector<double>{1, 2, 1, 2, 1, 2}));
  // m[:] = m[:, 1:2] (a column broadcast over the rows).
  Tensor n = tensor({{1, 2}, {3, 4}});
  native::copy_(n, strided_view(n, {2, 1}, {2, 1}, 1));
  EXPECT_EQ(elements(n), (std::vector<double>{2, 2, 4, 4}));
}

TEST(PartialOverlap, CopyWithDtypeConversion) {
  // Different dtypes over one storage cannot be built without reinterpretation, so convert
  // through an overlapping same-dtype copy and check the converted result matches.
  Tensor x = arange(5, kInt64);
  Tensor out = zeros({4}, kFloat64);
  native::copy_(strided_view(x, {4}, {1}, 1), strided_view(x, {4}, {1}, 0));
  native::copy_(out, strided_view(x, {4}, {1}, 1));
  EXPECT_EQ(elements(out), (std::vector<double>{0, 1, 2, 3}));
}

TEST(PartialOverlap, UnaryOut) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64);
  native::unary_out(UnaryOp::kPowScalar, strided_view(x, {3}, {1}, 0), strided_view(x, {3}, {1}, 1),
                    [] {
                      UnaryArgs a;
                      a.arg = 2;
                      a.has_arg = true;
                      return a;
                    }());
  EXPECT_EQ(elements(x), (std::vector<double>{4, 9, 16, 4}));
}

TEST(PartialOverlap, BinaryOutInputsFromTheOutputsStorage) {
  // x[1:] = x[:-1] * x[1:]: products of the original neighbours.
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0});
  Tensor hi = strided_view(x, {3}, {1}, 1), lo = strided_view(x, {3}, {1}, 0);
  native::binary_out(BinaryOp::kMul, hi, lo, hi);
  EXPECT_EQ(elements(x), (std::vector<double>{1, 2, 6, 12}));
  // Transpose in place: m = m.t() + 0.
  Tensor m = tensor({{1.0, 2.0}, {3.0, 4.0}});
  native::binary_out(BinaryOp::kAdd, m, strided_view(m, {2, 2}, {1, 2}, 0), zeros({2, 2}));
  EXPECT_EQ(elements(m), (std::vector<double>{1, 3, 2, 4}));
}

TEST(ExactAlias, InPlaceOpsReadEachElementBeforeWritingIt) {
  Tensor x = arange(100000, kFloat64);  // above the parallel threshold
  native::binary_out(BinaryOp::kAdd, x, x, x);
  native::unary_out(UnaryOp::kNeg, x, x);
  const double* p = x.data_ptr<double>();
  for (int64_t i = 0; i < 100000; i += 333) ASSERT_EQ(p[i], -2.0 * static_cast<double>(i));
}

// A random row- or column-major 2-D view of `storage` (no internal overlap).
Tensor random_view(Random& rnd, const Tensor& storage, int64_t rows, int64_t cols) {
  int64_t gap = rnd.uniform(0, 1);
  DimVector strides = rnd.uniform(0, 1) ? DimVector{cols + gap, 1} : DimVector{1, rows + gap};
  return strided_view(storage, {rows, cols}, strides, rnd.uniform(0, 12));
}

TEST(PartialOverlap, RandomBinaryOutMatchesSnapshots) {
  Random rnd(4242);
  const BinaryOp ops[] = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kMaximum};
  for (int trial = 0; trial < 300; ++trial) {
    Tensor storage = native::clone(rnd.tensor({40}, kFloat64));
    int64_t rows = rnd.uniform(1, 4), cols = rnd.uniform(1, 4);
    Tensor out = random_view(rnd, storage, rows, cols);
    Tensor a = random_view(rnd, storage, rows, cols);
    Tensor b = rnd.uniform(0, 1) ? out : random_view(rnd, storage, rows, cols);
    BinaryOp op = ops[rnd.uniform(0, 3)];
    Tensor want = native::binary(op, native::clone(a), native::clone(b));
    native::binary_out(op, out, a, b);
    EXPECT_EQ(elements(out), elements(want)) << "trial " << trial;
  }
}

TEST(PartialOverlap, RandomCopiesMatchSnapshots) {
  Random rnd(777);
  for (int trial = 0; trial < 300; ++trial) {
    Tensor storage = native::clone(rnd.tensor({40}, kInt32));
    int64_t rows = rnd.uniform(1, 4), cols = rnd.uniform(1, 4);
    Tensor dst = random_view(rnd, storage, rows, cols);
    Tensor src = random_view(rnd, storage, rows, cols);
    std::vector<double> want = elements(src);
    native::copy_(dst, src);
    EXPECT_EQ(elements(dst), want) << "trial " << trial;
  }
}

}  // namespace
}  // namespace mutagrad
