// Element, stride and byte counts that overflow int64 (issue 20 item 11). Every entry point that
// takes sizes must raise a ShapeError naming the op and the sizes (PyTorch: "numel: integer
// multiplication overflow" / "Storage size calculation overflowed") before it allocates: the
// fixture installs a CPU backend whose allocator counts what it is asked for, and each case
// checks that nothing was. Note [Size overflow] in tensor/shape.h.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "tensor/backend.h"
#include "tensor/cpu/cpu_backend.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

constexpr int64_t k2p31 = int64_t{1} << 31;
constexpr int64_t k2p40 = int64_t{1} << 40;
constexpr int64_t k2p61 = int64_t{1} << 61;
constexpr int64_t k2p62 = int64_t{1} << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// The CPU kernels with an allocator that records every request (and refuses absurd ones, so a
// missed check fails here instead of exhausting memory).
class CountingAllocator : public Allocator {
 public:
  std::shared_ptr<void> allocate(size_t nbytes) override {
    ++calls;
    largest = std::max(largest, nbytes);
    if (nbytes > (size_t{1} << 32)) throw std::bad_alloc();
    return inner.allocate(nbytes);
  }
  int calls = 0;
  size_t largest = 0;
  cpu::CpuAllocator inner;
};

class CountingCpuBackend : public cpu::CpuBackend {
 public:
  Allocator& allocator() override { return counting; }
  CountingAllocator counting;
};

class SizeOverflow : public ::testing::Test {
 protected:
  void SetUp() override { register_backend(DeviceType::CPU, &backend_); }
  void TearDown() override { register_backend(DeviceType::CPU, &cpu::cpu_backend()); }

  // fn must throw a ShapeError whose message contains every needle, without allocating.
  void expect_overflow(const std::function<void()>& fn,
                       std::initializer_list<std::string> needles) {
    backend_.counting.calls = 0;
    try {
      fn();
      ADD_FAILURE() << "expected a ShapeError containing \"" << *needles.begin() << "\"";
    } catch (const ShapeError& e) {
      for (const std::string& needle : needles) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
            << "\"" << needle << "\" not in: " << e.what();
      }
    } catch (const std::bad_alloc&) {
      ADD_FAILURE() << "std::bad_alloc: an allocation of " << backend_.counting.largest
                    << " bytes was attempted";
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong exception type: " << e.what();
    }
    EXPECT_EQ(backend_.counting.calls, 0) << "an allocation was attempted before the error";
  }

  // A view over one element expanded to `sizes` (stride 0 everywhere): no memory behind it.
  static Tensor expanded(IntArrayRef sizes) {
    DimVector ones_shape(sizes.size(), 1);
    return native::expand(zeros(ones_shape), sizes);
  }

  CountingCpuBackend backend_;
};

// ---- compute_numel and friends ------------------------------------------------------------------

TEST_F(SizeOverflow, NumelIsCheckedAtEveryMultiply) {
  EXPECT_EQ(compute_numel({k2p31, k2p31}), k2p31 * k2p31);
  EXPECT_EQ(compute_numel({k2p62, 1}), k2p62);
  // Overflows only at the last multiply.
  auto last = [] { compute_numel({k2p31, k2p31, 2}); };
  expect_overflow(last, {"numel: integer multiplication overflow", "[2147483648, 2147483648, 2]"});
  auto named = [] { compute_numel({3, 3, 3, k2p61}, "expand"); };
  expect_overflow(named, {"expand(): the sizes [3, 3, 3, 2305843009213693952] multiply to more "
                          "than int64 can count"});
  expect_overflow([] { compute_numel({kMax, 2}); }, {"numel"});
  // A 0 makes 0 elements, but the other sizes must still multiply within int64 (their strides
  // would not fit otherwise), in any order (PyTorch 1.13 accepts [0, 2^62, 4]).
  EXPECT_EQ(compute_numel({0, k2p61, 2}), 0);
  EXPECT_EQ(compute_numel({k2p61, 2, 0}), 0);
  expect_overflow([] { compute_numel({0, k2p62, 4}); }, {"[0, 4611686018427387904, 4]"});
  expect_overflow([] { compute_numel({k2p62, 4, 0}); }, {"nonzero sizes"});
}

TEST_F(SizeOverflow, StorageBytesAreCheckedWhileNumelFits) {
  EXPECT_EQ(compute_storage_nbytes({k2p61}, 2, "empty"), k2p62);
  auto bytes = [] { compute_storage_nbytes({k2p61, 2}, 4, "empty"); };
  expect_overflow(bytes, {"empty(): Storage size calculation overflowed with "
                          "sizes=[2305843009213693952, 2]",
                          "4-byte elements"});
  EXPECT_EQ(compute_storage_nbytes({2}, {k2p61}, 1, 0, "as_strided"), k2p61 + 1);
  auto reach = [] { compute_storage_nbytes({2}, {k2p62}, 2, 0, "as_strided"); };
  expect_overflow(reach, {"sizes=[2] and strides=[4611686018427387904]", "or strides"});
  auto offset = [] { compute_storage_nbytes({1}, {1}, 1, kMax, "as_strided"); };
  expect_overflow(offset, {"Storage size calculation overflowed"});
  EXPECT_EQ(compute_storage_nbytes({k2p61, 0}, {k2p62, k2p62}, 8, 0, "as_strided"), 0);
}

TEST_F(SizeOverflow, ContiguousStridesAreChecked) {
  EXPECT_EQ(contiguous_strides({0, k2p61, 2}).vec(), (std::vector<int64_t>{k2p62, 2, 1}));
  EXPECT_EQ(contiguous_strides({k2p61, 2, 0}).vec(), (std::vector<int64_t>{2, 1, 1}));
  auto strides = [] { contiguous_strides({0, k2p62, 4}, "empty"); };
  expect_overflow(strides, {"empty(): the sizes [0, 4611686018427387904, 4]"});
}

// ---- factories ---------------------------------------------------------------------------------

TEST_F(SizeOverflow, Factories) {
  const std::string huge = "sizes=[1099511627776, 1099511627776]";
  expect_overflow([] { empty({k2p40, k2p40}); }, {"empty():", huge});
  expect_overflow([] { zeros({k2p40, k2p40}); }, {"Storage size calculation overflowed", huge});
  expect_overflow([] { ones({k2p40, k2p40}, kFloat64); }, {huge});
  expect_overflow([] { full({k2p40, k2p40}, 1.5); }, {huge});
  expect_overflow([] { empty({k2p62, 4}); }, {"sizes=[4611686018427387904, 4]"});
  // The element count fits, the byte count does not.
  expect_overflow([] { empty({k2p61, 2}); }, {"sizes=[2305843009213693952, 2]"});
  expect_overflow([] { empty({k2p62}, kInt64); }, {"8-byte elements"});
  expect_overflow([] { empty({k2p62, 2, 3}, kBool); }, {"empty():"});
  // An empty tensor with huge sizes: fine while the nonzero sizes multiply within int64.
  Tensor e = empty({k2p61, 2, 0});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.strides().vec(), (std::vector<int64_t>{2, 1, 1}));
  expect_overflow([] { empty({k2p62, 4, 0}); }, {"sizes=[4611686018427387904, 4, 0]"});
  expect_overflow([] { zeros({0, k2p62, k2p62}); }, {"Storage size calculation overflowed"});
}

TEST_F(SizeOverflow, EmptyStrided) {
  const std::string huge = "sizes=[1099511627776, 1099511627776]";
  expect_overflow([] { empty_strided({k2p40, k2p40}, {1, 1}); }, {"empty_strided():", huge});
  expect_overflow([] { empty_strided({k2p40, k2p40}, {0, 0}); }, {"empty_strided():", huge});
  // Two elements whose byte distance overflows.
  auto reach = [] { empty_strided({2}, {k2p62}); };
  expect_overflow(reach, {"empty_strided(): Storage size calculation overflowed with sizes=[2] and "
                          "strides=[4611686018427387904]"});
  expect_overflow([] { empty_strided({3}, {k2p61}, kFloat64); }, {"strides=[2305843009213693952]"});
  expect_overflow([] { empty_strided({2, 2}, {kMax, 1}); }, {"empty_strided():"});
}

TEST_F(SizeOverflow, Arange) {
  // The length fits, its bytes do not.
  expect_overflow([] { arange(k2p62); }, {"arange():", "sizes=[4611686018427387904]"});
  expect_overflow([] { arange(0, kMax); }, {"arange():"});
  // The length itself overflows.
  expect_overflow([] { arange(-k2p62, k2p62); }, {"arange(): the length of the range"});
  expect_overflow([] { arange(std::numeric_limits<int64_t>::min(), kMax, 3); }, {"arange():"});
  expect_overflow([] { arange(0.0, 1e300, 1.0); }, {"arange(): the range", "int64"});
  expect_overflow([] { arange(0, k2p62, 0.5); }, {"arange():"});
}

// ---- views -------------------------------------------------------------------------------------

TEST_F(SizeOverflow, Expand) {
  const Tensor one = zeros({1});
  const Tensor three = ones({3});
  const Tensor two = zeros({2});
  // The repros: accepted with numel() == 0, and ones(3).expand(2**62, 3).sum() == 0.
  expect_overflow(
      [&] {
        native::expand(one, {k2p40, k2p40});
      },
      {"expand(): the sizes [1099511627776, 1099511627776]",
       "numel: integer multiplication overflow", "Use smaller sizes"});
  expect_overflow([&] { native::expand(three, {k2p62, 3}); }, {"expand():"});
  // Only the last multiply overflows.
  expect_overflow([&] { native::expand(one, {k2p31, k2p31, 2}); }, {"expand():"});
  expect_overflow([&] { native::expand(two, {k2p62, 2}); }, {"expand():"});
  expect_overflow([&] { native::expand(one, {0, k2p62, 4}); }, {"expand():"});
  // The largest counts that fit are fine (views: nothing is allocated).
  backend_.counting.calls = 0;
  EXPECT_EQ(native::expand(two, {k2p61, 2}).numel(), k2p62);
  EXPECT_EQ(native::expand(one, {kMax}).numel(), kMax);
  EXPECT_EQ(native::expand(one, {0, k2p61, 2}).numel(), 0);
  EXPECT_EQ(backend_.counting.calls, 0);
}

TEST_F(SizeOverflow, ViewAndReshape) {
  Tensor one = zeros({1});
  expect_overflow(
      [&] {
        native::view(one, {k2p40, k2p40});
      },
      {"view(): shape '[1099511627776, 1099511627776]' is invalid for input of size 1",
       "overflows int64"});
  expect_overflow([&] { native::view(one, {-1, k2p40, k2p40}); }, {"view():", "overflows"});
  expect_overflow([&] { native::reshape(one, {k2p40, k2p40}); }, {"reshape():"});
  expect_overflow([&] { native::reshape(one, {k2p31, k2p31, 2, -1}); }, {"reshape():"});
  // Of an empty tensor: sizes with a 0 are exact even past an overflowing prefix.
  Tensor none = zeros({0});
  EXPECT_EQ(native::view(none, {k2p61, 2, 0}).numel(), 0);
  expect_overflow([&] { native::view(none, {k2p62, 4, 0}); }, {"view():", "overflows int64"});
  expect_overflow([&] { native::view(none, {-1, k2p62, 4}); }, {"view():"});
  // A huge expanded tensor viewed and reshaped: views, nothing allocated.
  Tensor big = expanded({k2p31, k2p31});
  backend_.counting.calls = 0;
  EXPECT_EQ(native::view(big, {k2p62}).numel(), k2p62);
  EXPECT_EQ(native::reshape(big, {2, -1}).sizes().vec(), (std::vector<int64_t>{2, k2p61}));
  EXPECT_EQ(backend_.counting.calls, 0);
  // No view exists: reshape copies, and the copy's bytes overflow.
  Tensor rows = native::expand(zeros({1, 2}), {k2p61, 2});
  expect_overflow([&] { native::reshape(native::transpose(rows, 0, 1), {-1}); },
                  {"Storage size calculation overflowed"});
}

TEST_F(SizeOverflow, NarrowAndSliceWithHugeArguments) {
  const Tensor x = zeros({3});
  // start + length would overflow: the ordinary "exceeds dimension size" ShapeError.
  EXPECT_THROW(native::narrow(x, 0, 1, kMax), ShapeError);
  // A step whose stride product overflows leaves one element.
  Tensor one = native::slice(x, 0, 0, std::nullopt, kMax);
  EXPECT_EQ(one.sizes().vec(), (std::vector<int64_t>{1}));
}

TEST_F(SizeOverflow, UnsqueezeAndFlattenOfHugeExpandedTensors) {
  Tensor big = expanded({k2p31, k2p31});
  backend_.counting.calls = 0;
  Tensor u = native::unsqueeze(big, 0);
  EXPECT_EQ(u.sizes().vec(), (std::vector<int64_t>{1, k2p31, k2p31}));
  EXPECT_EQ(u.numel(), k2p62);
  EXPECT_EQ(native::unsqueeze(big, 2).numel(), k2p62);
  Tensor f = native::flatten(big);
  EXPECT_EQ(f.sizes().vec(), (std::vector<int64_t>{k2p62}));
  EXPECT_EQ(f.strides().vec(), (std::vector<int64_t>{0}));
  EXPECT_EQ(backend_.counting.calls, 0);
  // Empty, with huge sizes.
  Tensor hollow = native::expand(zeros({1, 1, 0}), {k2p61, 2, 0});
  EXPECT_EQ(native::flatten(hollow, 0, 1).sizes().vec(), (std::vector<int64_t>{k2p62, 0}));
  EXPECT_EQ(native::unsqueeze(hollow, 0).numel(), 0);
  EXPECT_EQ(native::flatten(hollow).numel(), 0);
}

TEST_F(SizeOverflow, AsStrided) {
  Tensor one = zeros({1});
  expect_overflow(
      [&] {
        native::as_strided(one, {k2p40, k2p40}, {0, 0});
      },
      {"as_strided():", "numel: integer multiplication overflow"});
  // The element count fits, the reach does not.
  expect_overflow([&] { native::as_strided(one, {2}, {k2p62}); },
                  {"as_strided(): Storage size calculation overflowed with sizes=[2] and "
                   "strides=[4611686018427387904]"});
  expect_overflow([&] { native::as_strided(one, {2}, {k2p61}); }, {"as_strided():"});
  expect_overflow([&] { native::as_strided(one, {2}, {kMax}); }, {"as_strided():"});
  expect_overflow([&] { native::as_strided(one, {1}, {1}, kMax); }, {"as_strided():"});
  // In range: the usual out-of-bounds ValueError, no overflow involved.
  EXPECT_THROW(native::as_strided(one, {2}, {1}), ValueError);
  EXPECT_EQ(native::as_strided(one, {k2p62}, {0}).numel(), k2p62);
}

TEST_F(SizeOverflow, BroadcastOfTwoExpandedTensors) {
  Tensor a = expanded({k2p40, 1});
  Tensor b = expanded({1, k2p40});
  EXPECT_EQ(broadcast_shapes(a.sizes(), b.sizes()).size(), 2u);  // shapes alone are fine
  expect_overflow([&] { native::binary(BinaryOp::kAdd, a, b); },
                  {"sizes=[1099511627776, 1099511627776]"});
  expect_overflow([&] { native::binary(BinaryOp::kAdd, b, a); }, {"Storage size calculation"});
}

TEST_F(SizeOverflow, CopiesOfHugeExpandedTensors) {
  Tensor big = expanded({k2p61, 2});
  expect_overflow([&] { native::clone(big); }, {"Storage size calculation overflowed"});
  expect_overflow([&] { empty_like(big); }, {"sizes=[2305843009213693952, 2]"});
  expect_overflow([&] { zeros_like(big, kFloat64); }, {"8-byte elements"});
}

TEST_F(SizeOverflow, IndexingAHugeExpandedTensor) {
  // Gathering 4 rows of 2^62 columns: a result of 2^64 elements.
  Tensor cols = expanded({1, k2p62});
  Tensor idx = from_vector<int64_t>({0, 0, 0, 0}, {4});
  expect_overflow([&] { native::index(cols, {idx}); }, {"index():", "[4, 4611686018427387904]"});
}

}  // namespace
}  // namespace mutagrad
