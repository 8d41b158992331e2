// Size overflow at the differentiable ops (issue 18): the ops that compute a shape from their
// arguments (repeat, tile, cat, stack, eye, diag, diag_embed, linspace, bincount,
// split_with_sizes) and the issue's repro, ones({3}).expand({2^62, 3}).sum(), raise a ShapeError
// naming the op and the sizes instead of wrapping. Note [Size overflow] in tensor/shape.h; the
// raw ops (factories, views, storage bytes, broadcasting, indexing) are
// tests/tensor/size_overflow_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

constexpr int64_t k2p31 = int64_t{1} << 31;
constexpr int64_t k2p40 = int64_t{1} << 40;
constexpr int64_t k2p62 = int64_t{1} << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// f() must throw a ShapeError whose message contains every needle.
template <typename F>
void expect_overflow(F f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "expected a ShapeError containing \"" << *needles.begin() << "\"";
  } catch (const ShapeError& e) {
    for (const std::string& needle : needles) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "\"" << needle << "\" not in: " << e.what();
    }
  } catch (const std::bad_alloc&) {
    ADD_FAILURE() << "std::bad_alloc: the sizes were not checked before allocating";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// One element expanded to `sizes`: no memory behind it.
Tensor expanded(IntArrayRef sizes) {
  DimVector ones_shape(sizes.size(), 1);
  return zeros(ones_shape).expand(sizes);
}

TEST(SizeOverflowOps, ExpandThenSumFromTheIssue) {
  // Returned 0. before: the element count wrapped to 0.
  expect_overflow(
      [] {
        ones({3}).expand({k2p62, 3}).sum();
      },
      {"expand(): the sizes [4611686018427387904, 3]", "numel: integer multiplication overflow"});
  // With autograd on, the same error, and the leaf is untouched.
  Tensor w = ones({3}).requires_grad_();
  expect_overflow([&] { w.expand({k2p62, 3}).sum().backward(); }, {"expand():"});
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(w.version(), 0u);
}

TEST(SizeOverflowOps, RepeatAndTile) {
  const Tensor x = ones({2, 3});
  // One dim's size overflows.
  expect_overflow(
      [&] {
        x.repeat({k2p62, 1});
      },
      {"repeat(): repeating sizes [2, 3] by [4611686018427387904, 1]", "dim 0"});
  // Each dim fits, the element count does not.
  expect_overflow([&] { x.repeat({k2p40, k2p40}); }, {"Storage size calculation overflowed"});
  expect_overflow([&] { x.tile({k2p62, 1}); }, {"repeat():"});
  expect_overflow([&] { x.tile({k2p31, k2p31}); }, {"sizes=[4294967296, 6442450944]"});
  // An empty result with a huge repeat count is fine while the nonzero sizes multiply in int64.
  EXPECT_EQ(x.repeat({0, k2p40}).sizes().vec(), (std::vector<int64_t>{0, 3 * k2p40}));
}

TEST(SizeOverflowOps, CatAndStack) {
  const Tensor big = expanded({k2p62});
  expect_overflow(
      [&] {
        cat({big, big});
      },
      {"cat(): the sizes of the tensors along dim 0", "tensor number 1"});
  expect_overflow([&] { cat({big, big, big, big}); }, {"cat():"});
  // Sizes that add up within int64 whose byte count does not.
  expect_overflow(
      [&] {
        cat({expanded({int64_t{1} << 61, 1}), expanded({int64_t{1} << 61, 1})}, 1);
      },
      {"Storage size calculation overflowed"});
  expect_overflow([&] { stack({big, big, big, big}); }, {"sizes=[4, 4611686018427387904]"});
}

TEST(SizeOverflowOps, Factories) {
  expect_overflow([] { eye(k2p40); }, {"sizes=[1099511627776, 1099511627776]"});
  expect_overflow([] { eye(k2p62, 4); }, {"Storage size calculation overflowed"});
  expect_overflow([] { linspace(0.0, 1.0, k2p62); }, {"sizes=[4611686018427387904]"});
  expect_overflow([] { logspace(0.0, 1.0, kMax); }, {"Storage size calculation"});
}

TEST(SizeOverflowOps, DiagAndDiagEmbedOffsets) {
  const Tensor v = ones({3});
  // size + |offset| does not fit: the new dims' size.
  expect_overflow([&] { v.diag_embed(kMax); },
                  {"diag_embed(): a vector of 3 elements on diagonal offset 9223372036854775807",
                   "more than int64 can count", "magnitude at most 9223372036854775804"});
  expect_overflow([&] { v.diag_embed(-kMax); }, {"diag_embed():"});
  expect_overflow([&] { v.diag_embed(std::numeric_limits<int64_t>::min()); }, {"diag_embed():"});
  // It fits, the square does not.
  expect_overflow([&] { v.diag_embed(k2p40); }, {"Storage size calculation overflowed"});
  expect_overflow([&] { v.diag(kMax); }, {"diag(): a vector of 3 elements"});
  expect_overflow([&] { v.diag(std::numeric_limits<int64_t>::min()); }, {"diag():"});
}

TEST(SizeOverflowOps, BincountOfHugeValues) {
  // max + 1 bins: INT64_MAX + 1 wrapped before (undefined behaviour).
  expect_overflow(
      [] {
        bincount(tensor({int64_t{1}, kMax}));
      },
      {"bincount(): the input's largest value 9223372036854775807", "+ 1 bins"});
  expect_overflow([] { bincount(tensor({k2p62})); }, {"Storage size calculation overflowed"});
  expect_overflow([] { bincount(tensor({int64_t{1}}), std::nullopt, k2p62); },
                  {"Storage size calculation overflowed"});
}

TEST(SizeOverflowOps, SplitWithSizesThatOverflow) {
  // The sizes must add up to the dim's size; a sum that wraps must not pass for it.
  const Tensor x = ones({4});
  // (The sum wrapped to 4 before: undefined behaviour, caught by UBSan under --config=asan.)
  expect_overflow(
      [&] {
        x.split_with_sizes({kMax, kMax, 6});
      },
      {"split_with_sizes expects split_sizes to sum exactly to 4"});
  expect_overflow(
      [&] {
        x.split_with_sizes({k2p62, k2p62, k2p62, k2p62, 4});
      },
      {"split_with_sizes expects split_sizes to sum exactly to 4"});
}

}  // namespace
}  // namespace mutagrad
