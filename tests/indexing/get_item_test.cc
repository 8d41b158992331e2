// x.index({...}) / x[{...}] reads: the behaviours PyTorch's test_index, test_advancedindex,
// test_bool_indices, test_multiple_bool_indices, test_multi_dimensional_bool_mask,
// test_empty_fancy_index, test_everything_returns_views, test_basic_indexing_slice_view and
// test_advanced_indexing_nonview assert, with values derived by hand.
#include <gtest/gtest.h>

#include <vector>

#include "indexing/indexing.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tests/indexing/test_util.h"

namespace mutagrad {
namespace {

using testing::dev;

using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;
using testing::doubles;
using testing::f64;
using testing::i64;
using testing::mask;
using testing::sizes_of;
using V = std::vector<double>;
using S = std::vector<int64_t>;

// 1, 2, 3, ... of `sizes` (PyTorch's consec()), float64.
Tensor consec(IntArrayRef sizes, double start = 1) {
  return native::binary(BinaryOp::kAdd, testing::iota(sizes), Scalar(start));
}

TEST(GetItem, IntegersAndSlicesAreViews) {
  Tensor ref = consec({3, 3, 3});
  EXPECT_EQ(doubles(ref.index({0})), doubles(consec({3, 3})));
  EXPECT_EQ(doubles(ref.index({1})), doubles(consec({3, 3}, 10)));
  EXPECT_EQ(doubles(ref.index({2})), doubles(consec({3, 3}, 19)));
  EXPECT_EQ(doubles(ref.index({0, 1})), (V{4, 5, 6}));
  EXPECT_EQ(doubles(ref.index({Slice(0, 2)})), doubles(consec({2, 3, 3})));
  EXPECT_EQ(ref.index({2, 2, 2}).item<double>(), 27);
  EXPECT_EQ(doubles(ref.index({Slice()})), doubles(ref));
  EXPECT_EQ(doubles(ref.index({-1, -1, -1})), (V{27}));
  for (const Tensor& v : {ref.index({0}), ref.index({Slice(0, 2)}), ref.index({0, 1})}) {
    EXPECT_TRUE(v.is_view());
    EXPECT_TRUE(v.is_alias_of(ref));
  }
}

TEST(GetItem, Ellipsis) {
  Tensor ref = consec({3, 3, 3});
  EXPECT_EQ(doubles(ref.index({Ellipsis, 2})), (V{3, 6, 9, 12, 15, 18, 21, 24, 27}));
  EXPECT_EQ(doubles(ref.index({0, Ellipsis, 2})), (V{3, 6, 9}));
  EXPECT_EQ(doubles(ref.index({Ellipsis, 2})), doubles(ref.index({Slice(), Slice(), 2})));
  EXPECT_EQ(doubles(ref.index({0, 2, Ellipsis})), doubles(ref.index({0, 2})));
  EXPECT_EQ(ref.index({Ellipsis, 2, 2, 2}).item<double>(), 27);
  EXPECT_EQ(ref.index({2, Ellipsis, 2, 2}).item<double>(), 27);
  EXPECT_EQ(ref.index({2, 2, 2, "..."}).item<double>(), 27);
  EXPECT_EQ(doubles(ref.index({Ellipsis})), doubles(ref));
  Tensor r5 = consec({3, 3, 3, 3, 3});
  EXPECT_EQ(doubles(r5.index({Ellipsis, 1, 0})),
            doubles(r5.index({Slice(), Slice(), Slice(), 1, 0})));
  EXPECT_EQ(doubles(r5.index({2, 1, 0, Ellipsis, 1})), doubles(r5.index({2, 1, 0, Slice(), 1})));
}

TEST(GetItem, NoneAddsDims) {
  Tensor ref = consec({5, 5, 5});
  EXPECT_EQ(sizes_of(ref.index({2, None})), (S{1, 5, 5}));
  EXPECT_EQ(sizes_of(ref.index({2, None, None})), (S{1, 1, 5, 5}));
  EXPECT_EQ(sizes_of(ref.index({Slice(2, 4), None})), (S{2, 1, 5, 5}));
  EXPECT_EQ(sizes_of(ref.index({None, 2, None, None})), (S{1, 1, 1, 5, 5}));
  EXPECT_EQ(sizes_of(ref.index({None, Slice(2, 5), None, None})), (S{1, 3, 1, 1, 5, 5}));
  EXPECT_EQ(doubles(ref.index({None, 2, None, None})), doubles(ref.index({2})));
  EXPECT_EQ(sizes_of(ref.index({Ellipsis, None})), (S{5, 5, 5, 1}));
}

TEST(GetItem, EmptySlicesAndSteps) {
  Tensor ref = consec({5, 5, 5});
  EXPECT_EQ(sizes_of(ref.index({Slice(None, 0)})), (S{0, 5, 5}));
  EXPECT_EQ(sizes_of(ref.index({Slice(None, 0), 2})), (S{0, 5}));
  EXPECT_EQ(sizes_of(ref.index({2, Slice(None, 0)})), (S{0, 5}));
  EXPECT_EQ(sizes_of(ref.index({2, Slice(1, 1), 2})), (S{0}));
  Tensor v = testing::iota({10});
  EXPECT_EQ(doubles(v.index({Slice(None, None, 2)})), (V{0, 2, 4, 6, 8}));
  EXPECT_EQ(doubles(v.index({Slice(None, None, 3)})), (V{0, 3, 6, 9}));
  EXPECT_EQ(doubles(v.index({Slice(None, None, 11)})), (V{0}));
  EXPECT_EQ(doubles(v.index({Slice(1, 6, 2)})), (V{1, 3, 5}));
  // Python clamping: out-of-range bounds clamp, stop < start is empty.
  EXPECT_EQ(doubles(v.index({Slice(-3, 100)})), (V{7, 8, 9}));
  EXPECT_EQ(doubles(v.index({Slice(-100, 2)})), (V{0, 1}));
  EXPECT_EQ(sizes_of(v.index({Slice(6, 2)})), (S{0}));
}

TEST(GetItem, ErrorsAndTheirKinds) {
  Tensor ref = consec({5, 5, 5});
  EXPECT_THROW(ref.index({Slice(1, 9, 0)}), ValueError);
  EXPECT_THROW(ref.index({Slice(1, 9, -1)}), ValueError);
  EXPECT_THROW(ref.index({1, 1, 1, 1}), IndexError);
  EXPECT_THROW(ref.index({1, 1, 1, Slice(1, 1)}), IndexError);
  EXPECT_THROW(ref.index({3, 3, 3, 3, 3, 3, 3, 3}), IndexError);
  EXPECT_THROW(ref.index({5}), IndexError);
  EXPECT_THROW(ref.index({-6}), IndexError);
  EXPECT_THROW(ref.index({f64({0}, {1})}), IndexError);
  try {
    ref.index({Slice(), 7});
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index 7 is out of bounds for dimension 1 with size 5"),
              std::string::npos)
        << e.what();
  }
  try {
    ref.index({0, 0, 0, 0, 0});
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("too many indices for tensor of dimension 3"),
              std::string::npos);
  }
  try {
    ref.index({Slice(None, None, 0)});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("step must be greater than zero"), std::string::npos);
  }
  Tensor zero_dim = scalar_tensor(5.0);
  EXPECT_THROW(zero_dim.index({0}), IndexError);
  EXPECT_EQ(sizes_of(zero_dim.index({None})), (S{1}));
  EXPECT_EQ(zero_dim.index({Ellipsis}).item<double>(), 5);
}

TEST(GetItem, IndexTensorsGatherCopies) {
  Tensor ref = consec({5, 5, 5});
  Tensor r = ref.index({i64({2, 4})});
  EXPECT_EQ(sizes_of(r), (S{2, 5, 5}));
  V expect = doubles(ref.index({2}));
  V row4 = doubles(ref.index({4}));
  expect.insert(expect.end(), row4.begin(), row4.end());
  EXPECT_EQ(doubles(r), expect);
  EXPECT_FALSE(r.is_view());
  // reference is [[1, 2], [3, 4], [5, 6]]
  Tensor x = consec({3, 2});
  EXPECT_EQ(doubles(x.index({i64({0, 1, 2}), i64({0})})), (V{1, 3, 5}));
  EXPECT_EQ(doubles(x.index({i64({0, 1, 2}), i64({1})})), (V{2, 4, 6}));
  EXPECT_EQ(doubles(x.index({i64({0, 1, 1, 0, 2}), i64({1})})), (V{2, 4, 4, 2, 6}));
  EXPECT_EQ(doubles(x.index({i64({0, 0, 1, 1}), i64({0, 1, 0, 0})})), (V{1, 2, 3, 3}));
  Tensor rows = i64({0, 0, 1, 2}, {2, 2});
  EXPECT_EQ(doubles(x.index({rows, i64({0})})), (V{1, 1, 3, 5}));
  EXPECT_EQ(doubles(x.index({rows, i64({1, 0})})), (V{2, 1, 4, 5}));
  EXPECT_EQ(doubles(x.index({rows, i64({0, 1, 1, 0}, {2, 2})})), (V{1, 2, 4, 5}));
  // Fewer indices than dims, and Ellipsis.
  EXPECT_EQ(doubles(x.index({i64({0, 2})})), (V{1, 2, 5, 6}));
  EXPECT_EQ(doubles(x.index({i64({1}), Ellipsis})), (V{3, 4}));
  EXPECT_EQ(sizes_of(x.index({Ellipsis, i64({1})})), (S{3, 1}));
  EXPECT_EQ(doubles(x.index({Ellipsis, i64({1})})), (V{2, 4, 6}));
  EXPECT_THROW(x.index({i64({1}), i64({0, 2}), i64({3})}), IndexError);
  EXPECT_THROW(x.index({i64({3})}), IndexError);
}

TEST(GetItem, TransposedAndStridedSources) {
  // [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]
  Tensor t = testing::iota({3, 4}).t();
  EXPECT_EQ(doubles(t.index({i64({0, 1, 2}), i64({0})})), (V{0, 1, 2}));
  EXPECT_EQ(doubles(t.index({i64({0, 1, 2}), i64({1})})), (V{4, 5, 6}));
  EXPECT_EQ(doubles(t.index({i64({0, 1, 1, 0, 3}), i64({1})})), (V{4, 5, 5, 4, 7}));
  // strided is [[1, 3, 5, 7], [9, 11, 13, 15]] over arange(24).view(3, 8).
  Tensor strided = testing::iota({3, 8}).as_strided({2, 4}, {8, 2}, 1);
  EXPECT_EQ(doubles(strided.index({i64({0, 1}), i64({0})})), (V{1, 9}));
  EXPECT_EQ(doubles(strided.index({i64({1}), i64({0, 1, 1, 0, 3})})), (V{9, 11, 11, 9, 15}));
  EXPECT_EQ(doubles(strided.index({i64({0, 1, 1, 0}, {2, 2}), i64({1, 2})})), (V{3, 13, 11, 5}));
}

TEST(GetItem, AdjacentAndSeparatedAdvancedIndices) {
  Tensor x = testing::iota({2, 3, 4, 5});
  Tensor i = i64({0, 1});
  Tensor j = i64({1, 2});
  EXPECT_EQ(sizes_of(x.index({Slice(), i, j})), (S{2, 2, 5}));
  EXPECT_EQ(sizes_of(x.index({i, Slice(), j})), (S{2, 3, 5}));
  EXPECT_EQ(sizes_of(x.index({Slice(), i, Slice(), j})), (S{2, 2, 4}));
  // Integers apply first (as views), so x[1, :, [0, 1]] is [3, 2] (NumPy would give [2, 3]).
  EXPECT_EQ(sizes_of(x.index({1, Slice(), i})), (S{3, 2, 5}));
  Tensor y = testing::iota({2, 3, 4});
  EXPECT_EQ(sizes_of(y.index({1, Slice(), i64({0, 1})})), (S{3, 2}));
  EXPECT_THROW(x.index({Slice(), i, i64({0, 1, 2})}), IndexError);
}

TEST(GetItem, BoolIndices) {
  Tensor v = testing::iota({5, 7, 3});
  Tensor b = mask({true, false, true, true, false}, {5});
  Tensor r = v.index({b});
  EXPECT_EQ(sizes_of(r), (S{3, 7, 3}));
  V expect;
  for (int64_t k : {0, 2, 3}) {
    V row = doubles(v.index({k}));
    expect.insert(expect.end(), row.begin(), row.end());
  }
  EXPECT_EQ(doubles(r), expect);
  Tensor bv = mask({true, false, true}, {3});
  Tensor sel = bv.index({mask({true, false, false}, {3})});
  EXPECT_EQ(sel.dtype(), kBool);
  EXPECT_EQ(doubles(sel), (V{1}));
  Tensor one = f64({1}, {1});
  EXPECT_EQ(sizes_of(one.index({mask({false}, {1})})), (S{0}));
}

TEST(GetItem, MultipleBoolIndicesBroadcastToTheFront) {
  Tensor v = testing::iota({5, 7, 3});
  Tensor m1 = mask({true, false, true, true, false}, {5});
  Tensor m2 = mask({true, true, true}, {3});
  EXPECT_EQ(sizes_of(v.index({m1, Slice(), m2})), (S{3, 7}));
}

TEST(GetItem, MultiDimensionalBoolMask) {
  Tensor x = testing::iota({2, 2, 3});
  Tensor m = mask({true, false, false, false}, {2, 2});
  Tensor z = scalar_tensor(0, kInt64);
  Tensor t = scalar_tensor(true);
  Tensor f = scalar_tensor(false);
  EXPECT_EQ(sizes_of(x.index({m})), (S{1, 3}));
  EXPECT_EQ(sizes_of(x.index({m, Slice(None, None, 2)})), (S{1, 2}));
  EXPECT_EQ(sizes_of(x.index({m, None})), (S{1, 1, 3}));
  EXPECT_EQ(sizes_of(x.index({m, 0})), (S{1}));
  EXPECT_EQ(sizes_of(x.index({m, z})), (S{1}));
  EXPECT_EQ(sizes_of(x.index({m, true})), (S{1, 3}));
  EXPECT_EQ(sizes_of(x.index({m, true, true, true, true})), (S{1, 3}));
  EXPECT_EQ(sizes_of(x.index({m, false})), (S{0, 3}));
  EXPECT_EQ(sizes_of(x.index({m, true, true, false, true})), (S{0, 3}));
  EXPECT_EQ(sizes_of(x.index({m, t})), (S{1, 3}));
  EXPECT_EQ(sizes_of(x.index({m, f})), (S{0, 3}));
  EXPECT_EQ(doubles(x.index({m, 1})), (V{1}));
  Tensor y = testing::iota({3, 2, 2, 5});
  EXPECT_EQ(sizes_of(y.index({Slice(), m, Slice()})), (S{3, 1, 5}));
  EXPECT_EQ(sizes_of(y.index({0, m, Slice(None, None, 2)})), (S{1, 3}));
  EXPECT_EQ(sizes_of(y.index({Ellipsis, m, Slice(None, None, 2)})), (S{3, 1, 3}));
  EXPECT_EQ(sizes_of(y.index({None, Ellipsis, m, Slice(None, None, 2)})), (S{1, 3, 1, 3}));
  try {
    testing::iota({2, 3, 4, 5}).index({mask({true, false, true}, {3})});
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("The shape of the mask [3] at index 0 does not match "
                                         "the shape of the indexed tensor [2, 3, 4, 5] at index 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(GetItem, BoolScalarsAreAdvancedIndicesOnANewDim) {
  Tensor y = testing::iota({3, 4});
  EXPECT_EQ(sizes_of(y.index({true})), (S{1, 3, 4}));
  EXPECT_EQ(sizes_of(y.index({false})), (S{0, 3, 4}));
  EXPECT_EQ(sizes_of(y.index({true, true})), (S{1, 3, 4}));
  EXPECT_EQ(sizes_of(y.index({true, Slice(), true})), (S{1, 3, 4}));
  EXPECT_EQ(sizes_of(y.index({true, i64({0, 1})})), (S{2, 4}));
  EXPECT_EQ(sizes_of(y.index({1, true})), (S{1, 4}));
  EXPECT_EQ(sizes_of(y.index({Ellipsis, true})), (S{3, 4, 1}));
  EXPECT_FALSE(y.index({true}).is_view());
  // A 0-dim integer tensor is an integer: a view.
  Tensor r = y.index({scalar_tensor(1, kInt64)});
  EXPECT_EQ(doubles(r), (V{4, 5, 6, 7}));
  EXPECT_TRUE(r.is_view());
  EXPECT_EQ(doubles(y.index({scalar_tensor(-1, kInt32)})), (V{8, 9, 10, 11}));
}

TEST(GetItem, EmptyFancyIndex) {
  Tensor a = i64({1, 2, 3});
  Tensor r = a.index({i64({})});
  EXPECT_EQ(sizes_of(r), (S{0}));
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_THROW(a.index({empty({0}, kFloat32)}), IndexError);
  Tensor ref = consec({3, 3});
  EXPECT_EQ(sizes_of(ref.index({i64({})})), (S{0, 3}));
}

TEST(GetItem, EverythingReturnsViews) {
  Tensor a = i64({1, 2, 3, 4, 5, 6, 7, 8, 9}).view({3, 3});
  for (const Tensor& r : {a.index({}), a.index({Ellipsis}), a.index({Slice()})}) {
    EXPECT_FALSE(r.is_same(a));
    EXPECT_TRUE(r.is_view());
    EXPECT_EQ(r.unsafe_impl()->data(), a.unsafe_impl()->data());  // the same memory
    EXPECT_EQ(doubles(r), doubles(a));
  }
}

TEST(GetItem, BasicIndexingSliceViewWritesReachTheBase) {
  Tensor t = dev(ones({5, 5}));
  Tensor v = t.index({Slice(None, 2), Slice(None, 3)});
  EXPECT_TRUE(v.is_view());
  EXPECT_TRUE(v.base().is_same(t));
  v[{0, 0}] = 0;
  EXPECT_EQ(t.index({0, 0}).item<double>(), 0);
  EXPECT_EQ(t.version(), 1u);
  Tensor e = t.index({Ellipsis, Slice(None, 2)});
  e[{1, 1}] = 7;
  EXPECT_EQ(t.index({1, 1}).item<double>(), 7);
  Tensor n = t.index({None, Slice(None, 2), 3});
  n[{0, 0}] = 9;
  EXPECT_EQ(t.index({0, 3}).item<double>(), 9);
}

TEST(GetItem, AdvancedIndexingIsNotAView) {
  Tensor t = dev(ones({3, 3}));
  Tensor rows = i64({0, 0, 2, 2}, {2, 2});
  Tensor cols = i64({0, 1, 2, 2}, {2, 2});
  Tensor nv = t.index({rows, cols});
  EXPECT_FALSE(nv.is_view());
  EXPECT_FALSE(nv.is_alias_of(t));
  nv[{1, 1}] = 0;
  EXPECT_EQ(t.index({2, 2}).item<double>(), 1);
  EXPECT_EQ(t.version(), 0u);
}

TEST(GetItem, ProxyReads) {
  Tensor x = testing::iota({3, 4});
  Tensor row = x[{1}];
  EXPECT_EQ(doubles(row), (V{4, 5, 6, 7}));
  Tensor col = x[{Slice(), i64({3})}];
  EXPECT_EQ(doubles(col), (V{3, 7, 11}));
}

}  // namespace
}  // namespace mutagrad
