// The raw advanced-indexing ops of mutagrad::native (gather, scatter, masked fill) and their
// CPU kernels: result shapes and values derived by hand, every error and its text, the strong
// guarantee, deterministic duplicates, and results that do not depend on the thread count.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "tensor/cpu/indexing.h"
#include "tensor/cpu/parallel.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tests/indexing/test_util.h"

namespace mutagrad {
namespace {

using testing::bytes;
using testing::doubles;
using testing::f64;
using testing::i64;
using testing::iota;
using testing::mask;
using testing::sizes_of;
using V = std::vector<double>;
using S = std::vector<int64_t>;

// Restores the kernels' thread count after a test changes it.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(cpu::indexing_num_threads()) {
    cpu::set_indexing_num_threads(n);
  }
  ~ThreadCount() { cpu::set_indexing_num_threads(saved_); }

 private:
  int saved_;
};

template <typename Fn>
std::string error_text(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(NativeIndex, SingleIndexTensorGathersRows) {
  Tensor x = iota({4, 3});
  Tensor y = native::index(x, {i64({2, 0, -1})});
  EXPECT_EQ(sizes_of(y), (S{3, 3}));
  EXPECT_EQ(doubles(y), (V{6, 7, 8, 0, 1, 2, 9, 10, 11}));
  EXPECT_FALSE(y.is_alias_of(x));
}

TEST(NativeIndex, AdjacentIndicesReplaceTheirDimsInPlace) {
  // x of shape (2, 3, 4, 5), i, j of length 2: x[:, i, j] -> [2, 2, 5].
  Tensor x = iota({2, 3, 4, 5});
  Tensor y = native::index(x, {Tensor(), i64({0, 2}), i64({1, 3})});
  EXPECT_EQ(sizes_of(y), (S{2, 2, 5}));
  // y[b, k, e] = x[b, i[k], j[k], e] = b*60 + i*20 + j*5 + e.
  EXPECT_EQ(doubles(native::select(native::select(y, 0, 1), 0, 1)),
            (V{60 + 40 + 15, 60 + 40 + 16, 60 + 40 + 17, 60 + 40 + 18, 60 + 40 + 19}));
}

TEST(NativeIndex, SeparatedIndicesGoToTheFront) {
  Tensor x = iota({2, 3, 4, 5});
  // x[i, :, j] -> [2, 3, 5]
  Tensor a = native::index(x, {i64({0, 1}), Tensor(), i64({1, 2})});
  EXPECT_EQ(sizes_of(a), (S{2, 3, 5}));
  // a[k, c, e] = x[i[k], c, j[k], e]; k=1, c=2: 60 + 40 + 10 + e
  EXPECT_EQ(doubles(native::select(native::select(a, 0, 1), 0, 2)), (V{110, 111, 112, 113, 114}));
  // x[:, i, :, j] -> [2, 2, 4]
  Tensor b = native::index(x, {Tensor(), i64({0, 2}), Tensor(), i64({4, 1})});
  EXPECT_EQ(sizes_of(b), (S{2, 2, 4}));
  // b[k, a, c] = x[a, i[k], c, j[k]]; k=0, a=1: 60 + 0 + c*5 + 4
  EXPECT_EQ(doubles(native::select(native::select(b, 0, 0), 0, 1)), (V{64, 69, 74, 79}));
}

TEST(NativeIndex, IndexTensorsBroadcastTogether) {
  Tensor x = iota({3, 4});
  Tensor rows = i64({0, 2}, {2, 1});
  Tensor cols = i64({1, 3, 0});
  Tensor y = native::index(x, {rows, cols});
  EXPECT_EQ(sizes_of(y), (S{2, 3}));
  EXPECT_EQ(doubles(y), (V{1, 3, 0, 9, 11, 8}));
}

TEST(NativeIndex, MaskSelectsItsNonzeroPositionsInRowMajorOrder) {
  Tensor x = iota({2, 3});
  Tensor m = mask({true, false, true, false, true, false}, {2, 3});
  EXPECT_EQ(doubles(native::index(x, {m})), (V{0, 2, 4}));
  Tensor rows = mask({false, true}, {2});
  Tensor y = native::index(x, {rows});
  EXPECT_EQ(sizes_of(y), (S{1, 3}));
  EXPECT_EQ(doubles(y), (V{3, 4, 5}));
}

TEST(NativeIndex, Int32IndicesWork) {
  Tensor x = iota({5});
  Tensor idx = from_vector<int32_t>({4, -5, 1}, {3});
  EXPECT_EQ(doubles(native::index(x, {idx})), (V{4, 0, 1}));
}

TEST(NativeIndex, EmptyIndexGivesEmptyResult) {
  Tensor x = iota({3, 3});
  Tensor y = native::index(x, {i64({})});
  EXPECT_EQ(sizes_of(y), (S{0, 3}));
  // Any index into a size-0 dim is out of bounds, but an empty one is fine.
  Tensor e = empty({0, 3});
  EXPECT_EQ(sizes_of(native::index(e, {i64({})})), (S{0, 3}));
}

TEST(NativeIndex, NonContiguousSource) {
  Tensor x = native::transpose(iota({3, 4}), 0, 1);  // x[a, b] = b * 4 + a
  Tensor y = native::index(x, {i64({3, 0}), i64({1, 2})});
  EXPECT_EQ(doubles(y), (V{7, 8}));
}

TEST(NativeIndexErrors, TextsNameTheRuleAndTheValues) {
  Tensor x = iota({2, 3, 4, 5});
  EXPECT_NE(error_text([&] {
              native::index(x, {Tensor(), i64({0, 1}), i64({0, 1, 2})});
            })
                .find("shape mismatch: indexing tensors could not be broadcast together with "
                      "shapes [2], [3]"),
            std::string::npos);
  EXPECT_NE(error_text([&] {
              native::index(x, {mask({true, false, true}, {3})});
            })
                .find("The shape of the mask [3] at index 0 does not match the shape of the "
                      "indexed tensor [2, 3, 4, 5] at index 0"),
            std::string::npos);
  Tensor y = iota({3});
  EXPECT_NE(error_text([&] {
              native::index(y, {i64({5})});
            }).find("index 5 is out of bounds for dimension 0 with size 3"),
            std::string::npos);
  EXPECT_NE(error_text([&] {
              native::index(y, {i64({0}), i64({0})});
            }).find("too many indices for tensor of dimension 1"),
            std::string::npos);
  EXPECT_THROW(native::index(x, {Tensor(), i64({0, 1}), i64({0, 1, 2})}), IndexError);
  EXPECT_THROW(native::index(y, {i64({-4})}), IndexError);
  EXPECT_THROW(native::index(y, {f64({0}, {1})}), IndexError);
  EXPECT_THROW(native::index(empty({0}), {i64({0})}), IndexError);
}

// The bounds screen (Note [Vectorized bounds screen] in tensor/native/index_ops.cc) works on
// pairs of indices with a scalar tail: each boundary value at every position of a 7-element
// index (both halves of a pair and the tail) is accepted or named exactly.
TEST(NativeIndexErrors, EveryBoundaryValueAtEveryPosition) {
  constexpr int64_t kSize = 5;
  Tensor y = iota({kSize});
  const int64_t big = std::numeric_limits<int64_t>::max();
  const int64_t small = std::numeric_limits<int64_t>::min();
  for (int64_t bad : {kSize, -kSize - 1, big, small, kSize + 1, -big}) {
    for (int64_t pos = 0; pos < 7; ++pos) {
      std::vector<int64_t> idx = {0, 4, -5, -1, 2, 3, 1};
      idx[pos] = bad;
      EXPECT_NE(error_text([&] {
                  native::index(y, {i64(idx)});
                }).find(str("index ", bad, " is out of bounds for dimension 0 with size 5")),
                std::string::npos)
          << "bad " << bad << " at " << pos;
    }
  }
  for (int64_t good : {int64_t{0}, kSize - 1, -kSize, int64_t{-1}}) {
    std::vector<int64_t> idx(7, good);
    const int64_t wrapped = good < 0 ? good + kSize : good;
    EXPECT_EQ(doubles(native::index(y, {i64(idx)})), V(7, static_cast<double>(wrapped)));
  }
}

// The screen before every kernel (Backend::index_in_range) runs halves of a large contiguous
// index on two threads and walks a strided one: an offender at either end of either half, or
// anywhere in a transposed index, is found and named, and a write leaves x as it was.
TEST(NativeIndexErrors, LargeAndStridedIndicesAreScreenedEverywhere) {
  constexpr int64_t kSize = 7;
  constexpr int64_t kN = 200003;  // above the two-thread threshold, odd halves
  Tensor x = iota({kSize});
  const std::vector<unsigned char> before = bytes(x);
  std::vector<int64_t> idx(kN);
  for (int64_t i = 0; i < kN; ++i) idx[static_cast<size_t>(i)] = i % (2 * kSize) - kSize;
  EXPECT_EQ(native::index(x, {i64(idx)}).numel(), kN);
  const std::string want = "is out of bounds for dimension 0 with size 7";
  for (int64_t bad : {kSize, -kSize - 1, std::numeric_limits<int64_t>::min()}) {
    for (int64_t pos : {int64_t{0}, kN / 2 - 1, kN / 2, kN / 2 + 1, kN - 1}) {
      std::vector<int64_t> wrong = idx;
      wrong[static_cast<size_t>(pos)] = bad;
      const std::string named = str("index ", bad, " ", want);
      EXPECT_NE(error_text([&] { native::index(x, {i64(wrong)}); }).find(named), std::string::npos)
          << "bad " << bad << " at " << pos;
      EXPECT_NE(error_text([&] {
                  native::index_put_(x, {i64(wrong)}, f64({-1}, {1}), false);
                }).find(named),
                std::string::npos)
          << "bad " << bad << " at " << pos;
      EXPECT_EQ(bytes(x), before);
      // The same values as every other element of a twice-as-long index (non-contiguous).
      std::vector<int64_t> doubled(2 * kN, 0);
      for (int64_t i = 0; i < kN; ++i)
        doubled[static_cast<size_t>(2 * i)] = wrong[static_cast<size_t>(i)];
      Tensor strided = native::slice(i64(doubled), 0, 0, std::nullopt, 2);
      ASSERT_FALSE(strided.is_contiguous());
      EXPECT_NE(
          error_text([&] { native::index_put_(x, {strided}, f64({-1}, {1}), true); }).find(named),
          std::string::npos)
          << "bad " << bad << " at " << pos;
      EXPECT_EQ(bytes(x), before);
    }
  }
}

// Note [Bounds checked in the loop]: every loop shape of the CPU gather checks the values
// it reads, with and without negative wrapping, with the offender at both ends of both threads'
// halves: whole rows at random (the index constant along the run, the row prefetch); a
// gather's row coordinate and column index (a fixed and a varying operand); two varying
// operands; a 1-D index into 16 MiB (the element prefetch). In range, each equals a naive loop.
TEST(NativeIndexErrors, EveryGatherLoopChecksTheValuesItReads) {
  ThreadCount two(2);
  constexpr int64_t kRows = 512, kCols = 1024;
  Tensor x = iota({kRows, kCols}, kFloat32);  // x[r][c] = r * kCols + c
  std::mt19937_64 rng(5);
  auto wrap = [](int64_t v, int64_t n) { return v < 0 ? v + n : v; };
  // Runs index(self, indices) with operand `which` changed to `bad` at flat positions near the
  // ends and the middle, and expects the IndexError naming the value and `dim`.
  auto expect_refused = [](const Tensor& self, std::vector<std::vector<int64_t>> values,
                           std::vector<S> shapes, size_t which, int64_t bad, int64_t dim,
                           int64_t size, bool wraps) {
    const int64_t n = static_cast<int64_t>(values[which].size());
    for (int64_t pos : {int64_t{0}, n / 2 - 1, n / 2, n - 1}) {
      std::vector<std::vector<int64_t>> wrong = values;
      wrong[which][static_cast<size_t>(pos)] = bad;
      std::vector<Tensor> list;
      for (size_t j = 0; j < wrong.size(); ++j) list.push_back(i64(wrong[j], shapes[j]));
      const std::string want =
          str("index ", bad, " is out of bounds for dimension ", dim, " with size ", size);
      EXPECT_NE(error_text([&] { native::index(self, list, wraps); }).find(want), std::string::npos)
          << want << " at " << pos;
    }
  };
  {  // Whole rows at random (x[rows]); 300 x 1024 elements, negatives wrap.
    std::vector<int64_t> rows(300);
    for (auto& r : rows) r = static_cast<int64_t>(rng() % (2 * kRows)) - kRows;
    Tensor y = native::index(x, {i64(rows)});
    V want;
    for (int64_t r : rows)
      for (int64_t c = 0; c < kCols; ++c) want.push_back(double(wrap(r, kRows) * kCols + c));
    EXPECT_EQ(doubles(y), want);
    for (int64_t bad : {kRows, -kRows - 1})
      expect_refused(x, {rows}, {{300}}, 0, bad, 0, kRows, true);
  }
  {  // gather(x, 1, cols): a row coordinate [kRows, 1] and cols [kRows, kCols]; no wrapping.
    std::vector<int64_t> rows(kRows), cols(static_cast<size_t>(kRows * kCols));
    for (int64_t r = 0; r < kRows; ++r) rows[static_cast<size_t>(r)] = r;
    for (auto& c : cols) c = static_cast<int64_t>(rng() % kCols);
    Tensor y = native::index(x, {i64(rows, {kRows, 1}), i64(cols, {kRows, kCols})}, false);
    V want;
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kCols; ++c)
        want.push_back(double(r * kCols + cols[static_cast<size_t>(r * kCols + c)]));
    EXPECT_EQ(doubles(y), want);
    for (int64_t bad : {int64_t{-1}, kCols})
      expect_refused(x, {rows, cols}, {{kRows, 1}, {kRows, kCols}}, 1, bad, 1, kCols, false);
    for (int64_t bad : {int64_t{-1}, kRows})
      expect_refused(x, {rows, cols}, {{kRows, 1}, {kRows, kCols}}, 0, bad, 0, kRows, false);
  }
  {  // Two varying operands: x[r, c] with r and c 1-D.
    constexpr int64_t kN = 100003;
    std::vector<int64_t> r(kN), c(kN);
    for (auto& v : r) v = static_cast<int64_t>(rng() % (2 * kRows)) - kRows;
    for (auto& v : c) v = static_cast<int64_t>(rng() % (2 * kCols)) - kCols;
    Tensor y = native::index(x, {i64(r), i64(c)});
    V want;
    for (int64_t i = 0; i < kN; ++i)
      want.push_back(double(wrap(r[size_t(i)], kRows) * kCols + wrap(c[size_t(i)], kCols)));
    EXPECT_EQ(doubles(y), want);
    expect_refused(x, {r, c}, {{kN}, {kN}}, 1, kCols, 1, kCols, true);
    expect_refused(x, {r, c}, {{kN}, {kN}}, 0, std::numeric_limits<int64_t>::min(), 0, kRows, true);
  }
  {  // A 1-D index into 16 MiB: the element prefetch runs ahead of the checked reads.
    constexpr int64_t kBig = int64_t{1} << 22, kN = 200003;
    Tensor big = iota({kBig}, kFloat32);
    std::vector<int64_t> idx(kN);
    for (auto& v : idx) v = static_cast<int64_t>(rng() % (2 * kBig)) - kBig;
    Tensor y = native::index(big, {i64(idx)});
    V want;
    for (int64_t v : idx) want.push_back(double(wrap(v, kBig)));
    EXPECT_EQ(doubles(y), want);
    for (int64_t bad : {kBig, std::numeric_limits<int64_t>::max()})
      expect_refused(big, {idx}, {{kN}}, 0, bad, 0, kBig, true);
  }
}

TEST(NativeIndexPut, LastOccurrenceWinsWithoutAccumulate) {
  Tensor x = zeros({4}, kFloat64);
  native::index_put_(x, {i64({1, 3, 1, 1})}, f64({10, 20, 30, 40}, {4}), false);
  EXPECT_EQ(doubles(x), (V{0, 40, 0, 20}));
}

TEST(NativeIndexPut, AccumulateSumsDuplicates) {
  Tensor x = iota({3});
  native::index_put_(x, {i64({0, 0, 2, 0})}, f64({1, 2, 3, 4}, {4}), true);
  EXPECT_EQ(doubles(x), (V{7, 1, 5}));
}

TEST(NativeIndexPut, ValuesBroadcastToTheIndexedShape) {
  Tensor x = zeros({3, 2}, kFloat64);
  native::index_put_(x, {i64({2, 0})}, f64({5, 6}, {2}), false);  // [2] -> [2, 2]
  EXPECT_EQ(doubles(x), (V{5, 6, 0, 0, 5, 6}));
  native::index_put_(x, {Tensor(), i64({1})}, f64({9}, {1}), false);
  EXPECT_EQ(doubles(x), (V{5, 9, 0, 9, 5, 9}));
}

TEST(NativeIndexPut, AccumulateWithExpandedValues) {
  // test_index_put_accumulate_expanded_values: a [1, 2] value broadcast over index dims.
  Tensor x = zeros({5, 2}, kFloat64);
  Tensor v = f64({1, 2}, {1, 2});
  native::index_put_(x, {i64({0, 1, 2, 1})}, native::expand(v, {4, 2}), true);
  EXPECT_EQ(doubles(x), (V{1, 2, 2, 4, 1, 2, 0, 0, 0, 0}));
  Tensor y = zeros({4}, kFloat64);
  native::index_put_(y, {i64({0, 1, 2, 1, 0}, {5})}, f64({1}, {1}), true);
  EXPECT_EQ(doubles(y), (V{2, 2, 1, 0}));
}

TEST(NativeIndexPut, StridedDestinationAndMask) {
  Tensor base = zeros({3, 4}, kFloat64);
  Tensor xt = native::transpose(base, 0, 1);  // [4, 3]
  native::index_put_(xt, {i64({3}), i64({1})}, f64({7}, {1}), false);
  EXPECT_EQ(doubles(base)[1 * 4 + 3], 7);
  Tensor m = mask({true, false, false, true}, {4});
  native::index_put_(xt, {m}, f64({1, 2, 3}, {3}), false);
  // rows 0 and 3 of xt = columns 0 and 3 of base.
  EXPECT_EQ(doubles(base), (V{1, 0, 0, 1, 2, 0, 0, 2, 3, 0, 0, 3}));
}

TEST(NativeIndexPut, ErrorsCheckDtypeShapeAndOverlap) {
  Tensor x = zeros({3, 4});
  EXPECT_NE(error_text([&] {
              native::index_put_(x, {i64({0})}, f64({1, 2, 3, 4}, {4}), false);
            })
                .find("Index put requires the source and destination dtypes match, got Float for "
                      "the destination and Double for the source"),
            std::string::npos);
  EXPECT_THROW(native::index_put_(x, {i64({0})}, f64({1, 2, 3, 4}, {4}), false), DTypeError);
  EXPECT_NE(error_text([&] {
              native::index_put_(x, {i64({0, 1})}, zeros({3}), false);
            })
                .find("shape mismatch: value tensor of shape [3] cannot be broadcast to indexing "
                      "result of shape [2, 4]"),
            std::string::npos);
  EXPECT_THROW(native::index_put_(x, {i64({0, 1})}, zeros({3}), false), ShapeError);
  Tensor expanded = native::expand(zeros({3}), {2, 3});
  EXPECT_THROW(native::index_put_(expanded, {i64({0})}, zeros({3}), false), ValueError);
}

TEST(NativeIndexPut, StrongGuaranteeOnOutOfBounds) {
  // PyTorch 1.13 writes x[3] = -1 before raising here; we write nothing.
  Tensor x = iota({5});
  std::vector<unsigned char> before = bytes(x);
  EXPECT_THROW(
      native::index_put_(native::unsqueeze(x, 1), {i64({-2, 6, 4})}, f64({-1}, {1}), false),
      IndexError);
  EXPECT_EQ(bytes(x), before);
  EXPECT_THROW(native::index_put_(x, {i64({0, 1, 2, 3, 4, 5})}, f64({-1}, {1}), true), IndexError);
  EXPECT_EQ(bytes(x), before);
  // An error in a later index tensor also leaves every element alone.
  Tensor y = iota({3, 3});
  before = bytes(y);
  EXPECT_THROW(native::index_put_(y, {i64({0, 1}), i64({2, 3})}, f64({-1}, {1}), false),
               IndexError);
  EXPECT_EQ(bytes(y), before);
}

TEST(NativeIndexPut, OverlappingValuesReadAsIfCopiedFirst) {
  Tensor x = iota({5});
  // x[[1, 2, 3, 4]] = x[0:4]
  native::index_put_(x, {i64({1, 2, 3, 4})}, native::slice(x, 0, 0, 4), false);
  EXPECT_EQ(doubles(x), (V{0, 0, 1, 2, 3}));
  Tensor idx = i64({2, 0, 1});
  native::index_put_(idx, {idx}, i64({7, 8, 9}), false);  // the index is the destination
  EXPECT_EQ(doubles(idx), (V{8, 9, 7}));
}

TEST(NativeIndexPut, EmptyIndexWritesNothing) {
  Tensor x = iota({3});
  native::index_put_(x, {i64({})}, f64({5}, {1}), false);
  EXPECT_EQ(doubles(x), (V{0, 1, 2}));
}

TEST(NativeIndexPut, AllDtypes) {
  for (ScalarType dt : {kBool, kInt32, kInt64, kFloat32, kFloat64}) {
    Tensor x = zeros({4}, dt);
    Tensor v = full({2}, 1, dt);
    native::index_put_(x, {i64({3, 1})}, v, true);
    native::index_put_(x, {i64({3})}, native::select(v, 0, 0), true);
    std::vector<double> expect = dt == kBool ? V{0, 1, 0, 1} : V{0, 1, 0, 2};
    EXPECT_EQ(doubles(x), expect) << dtype_name(dt);
    EXPECT_EQ(doubles(native::index(x, {i64({3, 0})}))[0], expect[3]);
  }
}

TEST(NativeMaskedFill, FillsWhereTrueWithBroadcastMask) {
  Tensor x = iota({2, 3});
  native::masked_fill_(x, mask({true, false, true}, {3}), -1.0);
  EXPECT_EQ(doubles(x), (V{-1, 1, -1, -1, 4, -1}));
  Tensor xt = native::transpose(iota({3, 2}), 0, 1);  // non-contiguous
  native::masked_fill_(xt, mask({false, true}, {2, 1}), 5);
  EXPECT_EQ(doubles(xt), (V{0, 2, 4, 5, 5, 5}));
  EXPECT_THROW(native::masked_fill_(x, f64({1, 0, 1}, {3}), 0.0), DTypeError);
  EXPECT_THROW(native::masked_fill_(x, mask({true, false}, {2}), 0.0), ShapeError);
}

TEST(NativeMaskedFill, AllDtypesContiguousAndStrided) {
  Tensor m = mask({true, false, false, true, true}, {5});
  for (ScalarType dt : {kBool, kInt32, kInt64, kFloat32, kFloat64}) {
    Tensor x = full({5}, 1, dt);
    native::masked_fill_(x, m, dt == kBool ? Scalar(false) : Scalar(-2.5));
    EXPECT_EQ(doubles(x), (dt == kBool             ? V{0, 1, 1, 0, 0}
                           : is_floating_point(dt) ? V{-2.5, 1, 1, -2.5, -2.5}
                                                   : V{-2, 1, 1, -2, -2}))
        << dtype_name(dt);
    Tensor y = full({10}, 1, dt);
    native::masked_fill_(native::slice(y, 0, 1, 10, 2), m, 0);  // every other element
    EXPECT_EQ(doubles(y), (V{1, 0, 1, 1, 1, 1, 1, 0, 1, 0})) << dtype_name(dt);
  }
}

// A sequential reference: dst[idx[k]] (+)= v[k] in index order.
std::vector<float> reference_put(std::vector<float> dst, const std::vector<int64_t>& idx,
                                 const std::vector<float>& v, bool accumulate) {
  for (size_t k = 0; k < idx.size(); ++k) {
    int64_t i = idx[k] < 0 ? idx[k] + static_cast<int64_t>(dst.size()) : idx[k];
    dst[static_cast<size_t>(i)] = accumulate ? dst[static_cast<size_t>(i)] + v[k] : v[k];
  }
  return dst;
}

// Destinations of 4 KB (many duplicates; the kernels' loop without prefetch) and of 2 MiB (past
// L2: the loop that prefetches, Note [Prefetch only past L2] in tensor/cpu/index_loop.h), against
// a sequential reference, for writes and the gather of the same indices.
TEST(NativeIndexPutDeterminism, BitwiseEqualToSequentialForAnyThreadCount) {
  for (const int64_t n : {int64_t{1000}, int64_t{1} << 19}) {
    std::mt19937_64 rng(7);
    const int64_t m = 200000;
    std::vector<int64_t> idx(m);
    std::vector<float> v(m), init(n);
    for (auto& i : idx) i = static_cast<int64_t>(rng() % (2 * n)) - n;
    for (auto& f : v) f = std::uniform_real_distribution<float>(-1, 1)(rng);
    for (auto& f : init) f = std::uniform_real_distribution<float>(-1, 1)(rng);
    std::vector<float> gathered(m);
    for (int64_t k = 0; k < m; ++k) gathered[k] = init[idx[k] < 0 ? idx[k] + n : idx[k]];
    for (bool acc : {false, true}) {
      std::vector<float> expect = reference_put(init, idx, v, acc);
      for (int threads : {1, 2, 3, 8}) {
        ThreadCount tc(threads);
        for (int rep = 0; rep < 2; ++rep) {
          Tensor x = from_vector<float>(init, {n});
          Tensor g = native::index(x, {from_vector<int64_t>(idx, {m})});
          ASSERT_EQ(std::memcmp(g.data_ptr<float>(), gathered.data(), sizeof(float) * m), 0)
              << "n=" << n << " threads=" << threads;
          native::index_put_(x, {from_vector<int64_t>(idx, {m})}, from_vector<float>(v, {m}), acc);
          ASSERT_EQ(std::memcmp(x.data_ptr<float>(), expect.data(), sizeof(float) * n), 0)
              << "n=" << n << " accumulate=" << acc << " threads=" << threads;
        }
      }
    }
  }
}

// Note [Partitioned scatter] (tensor/cpu/index_put.cc): on two or more threads, writes into a
// destination beyond L2 without a sliced dim are sorted by destination block and replayed per
// block. Bitwise equal to the one-thread loop (which writes directly) for each geometry that
// changes the blocks: a last partial block, a strided view, two index tensors, 8-byte and
// 2-byte elements, every write in one block, every write on one element. Writes without
// accumulate into a destination that fits in the shared cache skip the partition (Note [Copies
// into the shared cache]): on two or more threads the earlier writes skip the later writes'
// destinations (Note [Earlier writes skip later destinations]; every write on one element puts
// all of them in both parts). Both paths, whatever this machine's cache.
TEST(NativeIndexPutDeterminism, PartitionedScatterMatchesOneThread) {
  struct SharedCache {
    explicit SharedCache(int64_t bytes) { cpu::set_shared_cache_bytes(bytes); }
    ~SharedCache() { cpu::set_shared_cache_bytes(-1); }
  };
  const int64_t n = (int64_t{1} << 19) + 13;  // float32: 2 MiB, four blocks and a partial one
  const int64_t m = 300000;
  for (ScalarType dt : {kFloat32, kFloat64, kInt64, kBFloat16}) {
    Generator gen(5);
    auto values = [&](IntArrayRef shape) {
      return is_floating_point(dt) ? rand(shape, gen, dt) : randint(-1000, 1000, shape, gen, dt);
    };
    struct Case {
      const char* name;
      Tensor base;                         // copied for every run
      std::function<Tensor(Tensor)> view;  // the destination, a view of the copy
      std::vector<Tensor> idx;
    };
    const auto whole = [](Tensor t) { return t; };
    std::vector<Case> cases;
    cases.push_back({"1-D", values({n}), whole, {randint(-n, n, {m}, gen)}});
    cases.push_back({"strided",
                     values({3 * n}),
                     [](Tensor t) { return native::slice(t, 0, 1, std::nullopt, 3); },
                     {randint(0, n, {m}, gen)}});
    cases.push_back({"2-D, two index tensors",
                     values({1024, 700}),
                     whole,
                     {randint(0, 1024, {m}, gen), randint(-700, 700, {m}, gen)}});
    cases.push_back({"one block", values({n}), whole, {randint(n - 1000, n, {m}, gen)}});
    cases.push_back({"one element", values({n}), whole, {full({m}, 17, kInt64)}});
    const Tensor v = values({m});
    for (const Case& c : cases) {
      for (bool acc : {false, true}) {
        std::vector<unsigned char> expect;
        for (int64_t cache : {int64_t{0}, int64_t{1} << 40}) {
          SharedCache sc(cache);
          for (int threads : {1, 2, 3, 8}) {
            ThreadCount tc(threads);
            Tensor copy = native::clone(c.base);
            native::index_put_(c.view(copy), c.idx, v, acc);
            if (expect.empty()) expect = bytes(copy);
            ASSERT_EQ(bytes(copy), expect)
                << dtype_name(dt) << " " << c.name << " accumulate=" << acc
                << " threads=" << threads << " cache=" << cache;
          }
        }
      }
    }
  }
}

// Note [Rows named by a coordinate] (tensor/cpu/index_put.cc): an index operand that is the
// coordinate 0, 1, ..., n - 1 along one loop dim (a scatter's c_d) lets the threads split that
// dim. Scatters along dim 1 and dim 0 of a 2.4 MB x, along the last dim of a 3-D x, and a
// coordinate with one value repeated across the two threads' boundary (row 299 written twice,
// which must not be split), with and without accumulate: bitwise equal to one thread, which
// walks R in order (BitwiseEqualToSequentialForAnyThreadCount: a naive loop).
TEST(NativeIndexPutDeterminism, CoordinateOperandsSplitRows) {
  Generator gen(33);
  auto coordinate = [](int64_t n, S shape) { return native::view(arange(n, kInt64), shape); };
  std::vector<int64_t> near(600);
  for (int64_t r = 0; r < 600; ++r) near[size_t(r)] = r == 300 ? 299 : r;
  struct Case {
    const char* name;
    S shape;
    std::vector<Tensor> idx;
    S values;
  };
  const std::vector<Case> cases = {
      {"along dim 1",
       {600, 1000},
       {coordinate(600, {600, 1}), randint(0, 1000, {600, 300}, gen)},
       {600, 300}},
      {"along dim 0",
       {600, 1000},
       {randint(0, 600, {300, 1000}, gen), coordinate(1000, {1, 1000})},
       {300, 1000}},
      {"3-D",
       {20, 30, 1000},
       {coordinate(20, {20, 1, 1}), coordinate(30, {1, 30, 1}),
        randint(0, 1000, {20, 30, 200}, gen)},
       {20, 30, 200}},
      {"a repeated coordinate",
       {600, 1000},
       {i64(near, {600, 1}), randint(0, 1000, {600, 300}, gen)},
       {600, 300}}};
  for (const Case& c : cases) {
    const Tensor x0 = rand(c.shape, gen);
    const Tensor v = rand(c.values, gen);
    for (bool acc : {false, true}) {
      std::vector<unsigned char> expect;
      for (int threads : {1, 2, 3, 8}) {
        ThreadCount tc(threads);
        Tensor x = native::clone(x0);
        native::index_put_(x, c.idx, v, acc);
        if (threads == 1) expect = bytes(x);
        EXPECT_EQ(bytes(x), expect) << c.name << " accumulate=" << acc << " threads=" << threads;
      }
    }
  }
}

// Note [Prefetch the next row] (tensor/cpu/index_loop.h): a run whose index varies within one
// row of a self beyond L2 requests the next run's row, a few lines before each chunk of 128
// values. Runs of 300 values (three chunks, the last partial) over 600 rows of 1000 float32
// (2.4 MB): the gather along dim 1 (two index operands: the row coordinate and the index),
// x[:, idx] (one operand, negatives wrap; and a 2-D idx, whose runs share a row) and the scatter
// along dim 1 with and without accumulate, on 1, 2 and 3 threads (runs that start mid-row), against
// naive loops; an offender in the last chunk of a late row is an IndexError and leaves x as it was.
TEST(NativeIndexDeterminism, NextRowPrefetchMatchesANaiveLoop) {
  constexpr int64_t kRows = 600, kCols = 1000, kN = 300;
  Generator gen(21);
  const Tensor x0 = rand({kRows, kCols}, gen);
  const Tensor rows = native::view(arange(kRows, kInt64), {kRows, 1});
  const Tensor idx = randint(0, kCols, {kRows, kN}, gen);
  const Tensor cols = randint(-kCols, kCols, {kN}, gen);
  const Tensor v = rand({kRows, kN}, gen);
  const Tensor cols2 = randint(0, kCols, {3, 100}, gen);  // runs of 100 that share a row
  const V x = doubles(x0), ix = doubles(idx), cx = doubles(cols), vv = doubles(v);
  const V c2 = doubles(cols2);
  V gathered, taken, taken2, put = x, added = x;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t k = 0; k < kN; ++k) {
      const size_t e = size_t(r * kN + k);
      const int64_t c = int64_t(cx[size_t(k)] < 0 ? cx[size_t(k)] + kCols : cx[size_t(k)]);
      const size_t at = size_t(r * kCols + int64_t(ix[e]));
      gathered.push_back(x[at]);
      taken.push_back(x[size_t(r * kCols + c)]);
      put[at] = vv[e];
      added[at] = double(float(added[at]) + float(vv[e]));  // float32 sums, in index order
    }
    for (double c : c2) taken2.push_back(x[size_t(r * kCols + int64_t(c))]);
  }
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    EXPECT_EQ(doubles(native::index(x0, {rows, idx}, /*negative_wraps=*/false)), gathered)
        << threads;
    EXPECT_EQ(doubles(native::index(x0, {Tensor(), cols})), taken) << threads;
    EXPECT_EQ(doubles(native::index(x0, {Tensor(), cols2})), taken2) << threads;
    for (bool acc : {false, true}) {
      Tensor y = native::clone(x0);
      native::index_put_(y, {rows, idx}, v, acc);
      EXPECT_EQ(doubles(y), acc ? added : put) << "accumulate=" << acc << " threads=" << threads;
    }
    Tensor bad = native::clone(idx);
    native::index_put_(bad, {i64({550}), i64({290})}, i64({kCols}), false);
    EXPECT_THROW(native::index(x0, {rows, bad}, /*negative_wraps=*/false), IndexError);
    Tensor y = native::clone(x0);
    EXPECT_THROW(native::index_put_(y, {rows, bad}, v, false), IndexError);
    EXPECT_EQ(doubles(y), x);
  }
}

// x[idx] += v and x[idx] over whole rows of a destination beyond 1 MiB: the row loop and its
// prefetch of the row kAheadRows ahead (tensor/cpu/index_loop.h), on one and two threads, for
// a contiguous and a transposed x, against a naive loop in index order (bitwise).
// Note [Plain loops]: a unit-stride run takes a plain loop. A gather (and a staged write)
// tests each value and ends at an offender; a write whose values all lie in [0, size)
// (IndexPutDescriptor::nonnegative) tests none, one with a negative wraps each. One negative
// (which wraps) or one offender at the ends of the run and on both sides of 512-value
// boundaries (where an earlier form screened chunks): reads, writes and accumulating writes,
// on one and two threads, equal a naive loop; an offender is named and leaves x unchanged.
TEST(NativeIndexErrors, PlainAndWrappingRunsMatchANaiveLoop) {
  constexpr int64_t kSize = 1000, kN = 5 * 512 + 17;
  const Tensor x0 = iota({kSize}, kFloat32);
  std::vector<int64_t> base(kN);
  for (int64_t i = 0; i < kN; ++i) base[size_t(i)] = (i * 7919) % kSize;
  std::vector<float> vals(kN);
  for (int64_t i = 0; i < kN; ++i) vals[size_t(i)] = float(i % 97) - 48.0f;
  const Tensor v = testing::f32(vals, {kN});
  for (int threads : {1, 2}) {
    ThreadCount tc(threads);
    for (int64_t pos : {int64_t{0}, int64_t{511}, int64_t{512}, int64_t{1023}, int64_t{1024},
                        int64_t{2047}, int64_t{2559}, int64_t{2560}, kN - 1, int64_t{-1}}) {
      std::vector<int64_t> idx = base;
      if (pos >= 0) idx[size_t(pos)] = -3;  // wraps to kSize - 3
      V gathered;
      std::vector<float> put(static_cast<size_t>(kSize)), added(static_cast<size_t>(kSize));
      for (int64_t i = 0; i < kSize; ++i) put[size_t(i)] = added[size_t(i)] = float(i);
      for (int64_t i = 0; i < kN; ++i) {
        const int64_t w = idx[size_t(i)] < 0 ? idx[size_t(i)] + kSize : idx[size_t(i)];
        gathered.push_back(double(w));
        put[size_t(w)] = vals[size_t(i)];
        added[size_t(w)] += vals[size_t(i)];
      }
      const std::string at = str("negative at ", pos, ", threads ", threads);
      EXPECT_EQ(doubles(native::index(x0, {i64(idx)})), gathered) << at;
      Tensor x = native::clone(x0);
      native::index_put_(x, {i64(idx)}, v, false);
      EXPECT_EQ(doubles(x), V(put.begin(), put.end())) << at;
      x = native::clone(x0);
      native::index_put_(x, {i64(idx)}, v, true);
      EXPECT_EQ(doubles(x), V(added.begin(), added.end())) << at;
      if (pos < 0) continue;
      for (int64_t bad : {kSize, -kSize - 1}) {
        std::vector<int64_t> wrong = base;
        wrong[size_t(pos)] = bad;
        const std::string want = str("index ", bad, " is out of bounds for dimension 0");
        EXPECT_NE(error_text([&] { native::index(x0, {i64(wrong)}); }).find(want),
                  std::string::npos)
            << at;
        Tensor y = native::clone(x0);
        EXPECT_NE(error_text([&] { native::index_put_(y, {i64(wrong)}, v, true); }).find(want),
                  std::string::npos)
            << at;
        EXPECT_EQ(bytes(y), bytes(x0)) << at;
      }
    }
  }
}

TEST(NativeIndexPut, WholeRowsAtRandomMatchANaiveLoop) {
  const int64_t rows = 4096, cols = 96, m = 20000;
  Generator gen(9);
  const Tensor idx = randint(-rows, rows, {m}, gen);
  const Tensor vals = rand({m, cols}, gen, kFloat32);
  const int64_t* ip = idx.data_ptr<int64_t>();
  const float* vp = vals.data_ptr<float>();
  for (bool transposed : {false, true}) {
    for (int threads : {1, 2}) {
      ThreadCount tc(threads);
      Tensor x = transposed ? native::transpose(rand({cols, rows}, gen, kFloat32), 0, 1)
                            : rand({rows, cols}, gen, kFloat32);
      const Tensor before = native::contiguous(native::clone(x));
      std::vector<float> ref(before.data_ptr<float>(), before.data_ptr<float>() + rows * cols);
      std::vector<float> rows_read(static_cast<size_t>(m * cols));
      for (int64_t k = 0; k < m; ++k) {
        const int64_t r = ip[k] < 0 ? ip[k] + rows : ip[k];
        for (int64_t c = 0; c < cols; ++c) {
          rows_read[static_cast<size_t>(k * cols + c)] = before.data_ptr<float>()[r * cols + c];
        }
      }
      for (int64_t k = 0; k < m; ++k) {
        const int64_t r = ip[k] < 0 ? ip[k] + rows : ip[k];
        for (int64_t c = 0; c < cols; ++c) ref[r * cols + c] += vp[k * cols + c];
      }
      const Tensor got_rows = native::index(x, {idx});
      ASSERT_EQ(std::memcmp(got_rows.data_ptr<float>(), rows_read.data(), rows_read.size() * 4), 0)
          << "read, transposed=" << transposed << " threads=" << threads;
      native::index_put_(x, {idx}, vals, true);
      const Tensor after = native::contiguous(x);
      ASSERT_EQ(std::memcmp(after.data_ptr<float>(), ref.data(), ref.size() * 4), 0)
          << "accumulate, transposed=" << transposed << " threads=" << threads;
    }
  }
}

TEST(NativeIndexPutDeterminism, SlicedDimSplitMatchesSingleThread) {
  // x[:, idx] += v: the threads split the sliced dim; duplicates in idx stay in one thread.
  std::mt19937_64 rng(11);
  const int64_t rows = 64, cols = 100, m = 3000;
  std::vector<int64_t> idx(m);
  for (auto& i : idx) i = static_cast<int64_t>(rng() % cols);
  Tensor index = from_vector<int64_t>(idx, {m});
  Generator gen(3);
  Tensor values = rand({rows, m}, gen, kFloat32);
  for (bool acc : {false, true}) {
    std::vector<unsigned char> expect;
    for (int threads : {1, 2, 4}) {
      ThreadCount tc(threads);
      Tensor x = zeros({rows, cols}, kFloat32);
      native::index_put_(x, {Tensor(), index}, values, acc);
      std::vector<unsigned char> got = bytes(x);
      std::vector<unsigned char> gathered = bytes(native::index(x, {Tensor(), index}));
      got.insert(got.end(), gathered.begin(), gathered.end());
      if (threads == 1) expect = got;
      EXPECT_EQ(got, expect) << "accumulate=" << acc << " threads=" << threads;
    }
  }
}

// masked_fill_'s kernel (tensor/cpu/masked_fill.cc) for each element width and layout, on
// 120000 elements (both threads): a contiguous destination (the bit blend), a transposed one
// and a strided slice (the byte-tested loop), masks broadcast along either dim (stride 0).
// Equal to a naive loop over the elements.
TEST(NativeMaskedFill, EveryLayoutMatchesANaiveLoop) {
  Generator gen(5);
  const S shape{300, 400};
  const std::vector<Tensor> masks = {
      native::binary(BinaryOp::kLt, rand({300, 400}, gen), Scalar(0.25)),
      native::binary(BinaryOp::kLt, rand({1, 400}, gen), Scalar(0.5)),
      native::binary(BinaryOp::kLt, rand({300, 1}, gen), Scalar(0.5))};
  for (ScalarType dt : {kBool, kBFloat16, kFloat32, kFloat64, kInt64}) {
    const Scalar value = dt == kBool ? Scalar(true) : Scalar(-3);
    auto init = [&](IntArrayRef sizes) {
      if (dt == kBool) return native::binary(BinaryOp::kLt, rand(sizes, gen), Scalar(0.5));
      if (is_floating_point(dt)) return native::to(rand(sizes, gen), dt);
      return randint(-1000, 1000, sizes, gen, dt);
    };
    const std::vector<std::pair<const char*, std::function<Tensor()>>> layouts = {
        {"contiguous", [&] { return init(shape); }},
        {"transposed",
         [&] {
           return native::transpose(init({400, 300}), 0, 1);
         }},
        {"strided", [&] {
           return native::slice(init({300, 800}), 1, 0, std::nullopt, 2);
         }}};
    for (const auto& [name, make] : layouts) {
      for (size_t k = 0; k < masks.size(); ++k) {
        Tensor x = make();
        V expect = doubles(x);
        const V m = doubles(native::expand(masks[k], shape));
        for (size_t i = 0; i < expect.size(); ++i) {
          if (m[i] != 0) expect[i] = dt == kBool ? 1.0 : -3.0;
        }
        native::masked_fill_(x, masks[k], value);
        EXPECT_EQ(doubles(x), expect) << dtype_name(dt) << " " << name << " mask " << k;
      }
    }
  }
}

// Note [Staged writes] (tensor/native/index_ops.cc): many index values into a small tensor are
// written into a copy by a kernel that checks each value (Backend::index_put_checked), then the
// copy is written back after the bump. Each geometry that takes another loop of that kernel
// (1-D with negatives that wrap or out of bounds, a strided view, two index tensors, whole
// rows, a sliced dim split between threads, an index that overlaps self), with and without
// accumulate, on one and two threads: bitwise equal to the unstaged write; an offender at the
// start, in the middle or at the end throws the unstaged write's error and leaves self as it was.
TEST(NativeIndexPut, StagedWritesMatchTheUnstagedWrite) {
  Generator gen(11);
  struct Case {
    const char* name;
    Tensor base;                                     // copied for every run
    std::function<Tensor(Tensor)> self;              // the destination, a view of the copy
    std::function<std::vector<Tensor>(Tensor)> idx;  // the index list, given the copy
    Tensor values;
    bool negative_wraps;
  };
  const auto whole = [](Tensor t) { return t; };
  const auto fixed = [](std::vector<Tensor> list) { return [list](Tensor) { return list; }; };
  const Tensor big_index = randint(0, 100, {5000}, gen);
  std::vector<Case> cases = {
      {"1-D, negatives wrap", rand({1000}, gen, kFloat32), whole,
       fixed({randint(-1000, 1000, {20000}, gen)}), rand({20000}, gen, kFloat32), true},
      {"1-D, scatter (no wrap)", randint(-50, 50, {700}, gen, kInt64), whole,
       fixed({randint(0, 700, {20000}, gen)}), randint(-50, 50, {20000}, gen, kInt64), false},
      {"strided", rand({3000}, gen, kBFloat16),
       [](Tensor t) { return native::slice(t, 0, 1, std::nullopt, 3); },
       fixed({randint(0, 1000, {9000}, gen)}), rand({9000}, gen, kBFloat16), true},
      {"two index tensors", rand({40, 25}, gen, kFloat64), whole,
       fixed({randint(-40, 40, {9000}, gen), randint(0, 25, {9000}, gen)}),
       rand({9000}, gen, kFloat64), true},
      {"whole rows", rand({64, 32}, gen, kFloat32), whole, fixed({randint(0, 64, {4096}, gen)}),
       rand({4096, 32}, gen, kFloat32), true},
      {"sliced dim split", rand({8, 200}, gen, kFloat32),
       [](Tensor t) { return native::transpose(t, 0, 1); }, fixed({randint(0, 200, {4000}, gen)}),
       rand({4000, 8}, gen, kFloat32), true},
      {"index overlaps self", big_index, [](Tensor t) { return native::slice(t, 0, 0, 100); },
       [](Tensor t) { return std::vector<Tensor>{t}; }, randint(0, 100, {5000}, gen, kInt64), true},
  };
  for (const Case& c : cases) {
    for (bool acc : {false, true}) {
      for (int threads : {1, 2}) {
        ThreadCount tc(threads);
        const std::string at = str(c.name, ", accumulate ", acc, ", threads ", threads);
        Tensor plain_copy = native::clone(c.base);
        Tensor staged_copy = native::clone(c.base);
        const Tensor plain_self = c.self(plain_copy);
        const Tensor staged_self = c.self(staged_copy);
        native::AdvancedIndex plain = native::prepare_index_put(
            plain_self, c.idx(plain_copy), c.values, acc, c.negative_wraps, /*may_stage=*/false);
        native::AdvancedIndex staged = native::prepare_index_put(staged_self, c.idx(staged_copy),
                                                                 c.values, acc, c.negative_wraps);
        ASSERT_FALSE(plain.staged.defined()) << at;
        ASSERT_TRUE(staged.staged.defined()) << at;  // the geometry stages
        EXPECT_EQ(bytes(staged_copy), bytes(native::clone(c.base))) << at << ": wrote early";
        native::index_put_validated(plain_self, plain, c.values, acc);
        native::index_put_validated(staged_self, staged, c.values, acc);
        EXPECT_EQ(bytes(staged_copy), bytes(plain_copy)) << at;
        // An offender at the start, in the middle, at the end of the first index tensor.
        const std::vector<Tensor> list = c.idx(staged_copy);
        const int64_t n = list[0].numel();
        const int64_t size = staged_self.size(0);
        for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
          Tensor wrong = native::clone(native::detach(list[0]));
          wrong.data_ptr<int64_t>()[pos] = c.negative_wraps ? -size - 1 : -1;
          std::vector<Tensor> bad = list;
          bad[0] = wrong;
          Tensor y = native::clone(c.base);
          const std::vector<unsigned char> before = bytes(y);
          const std::string want = error_text([&] {
            native::prepare_index_put(c.self(y), bad, c.values, acc, c.negative_wraps, false);
          });
          EXPECT_NE(want.find("is out of bounds for dimension 0"), std::string::npos) << at;
          EXPECT_EQ(error_text([&] {
                      native::prepare_index_put(c.self(y), bad, c.values, acc, c.negative_wraps);
                    }),
                    want)
              << at << ", offender at " << pos;
          EXPECT_EQ(bytes(y), before) << at << ", offender at " << pos;
        }
      }
    }
  }
}

}  // namespace
}  // namespace mutagrad
