// x.set_item_({...}, v) / x[{...}] = v and x.index_put_(...): the writes of PyTorch's
// test_advancedindex, test_index_put_accumulate_duplicate_indices,
// test_index_put_accumulate_expanded_values, test_bool_mask_assignment and friends, plus what
// mutagrad adds: the strong guarantee, one version bump per call with its call site,
// overlapping values, deterministic duplicates and the single-element fast path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "indexing/indexing.h"
#include "tensor/cpu/indexing.h"
#include "tensor/native/factories.h"
#include "tests/indexing/test_util.h"

namespace mutagrad {
namespace {

using testing::dev;

using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;
using testing::bytes;
using testing::doubles;
using testing::f64;
using testing::i64;
using testing::iota;
using testing::mask;
using testing::sizes_of;
using V = std::vector<double>;
using S = std::vector<int64_t>;

TEST(SetItem, IntegersAndSlicesWriteThroughViews) {
  Tensor v = dev(zeros({4, 4}));
  v[{0, Slice(1, None, 2)}] = f64({3, 4}, {2}).to(kFloat32);
  EXPECT_EQ(doubles(v.index({0})), (V{0, 3, 0, 4}));
  EXPECT_EQ(doubles(v.index({Slice(1, None)})), V(12, 0));
  Tensor x = iota({3, 4});
  x.set_item_({1}, 9.5);
  EXPECT_EQ(doubles(x.index({1})), (V{9.5, 9.5, 9.5, 9.5}));
  x.set_item_({Slice(), -1}, f64({-1, -2, -3}, {3}));
  EXPECT_EQ(doubles(x.index({Slice(), 3})), (V{-1, -2, -3}));
  x[{Ellipsis}] = 0;
  EXPECT_EQ(doubles(x), V(12, 0));
}

TEST(SetItem, ValueBroadcastDropsLeadingOnes) {
  Tensor y = iota({3, 4});
  y[{1}] = f64({3}, {1, 1});  // [1, 1] -> [4]
  EXPECT_EQ(doubles(y.index({1})), (V{3, 3, 3, 3}));
  y[{1}] = f64({1, 2, 3, 4}, {1, 1, 4});  // [1, 1, 4] -> [4]
  EXPECT_EQ(doubles(y.index({1})), (V{1, 2, 3, 4}));
  y[{i64({1})}] = f64({5, 6, 7, 8}, {1, 1, 1, 4});  // Path B: [1, 1, 1, 4] -> [4] -> [1, 4]
  EXPECT_EQ(doubles(y.index({1})), (V{5, 6, 7, 8}));
  EXPECT_THROW(y.set_item_({1}, dev(ones({2, 4}, kFloat64))), ShapeError);
  EXPECT_THROW(y.set_item_({Slice()}, dev(ones({2, 4}, kFloat64))), ShapeError);
  try {
    y.set_item_({i64({0, 1})}, dev(ones({3, 4}, kFloat64)));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("shape mismatch: value tensor of shape [3, 4] cannot be "
                                         "broadcast to indexing result of shape [2, 4]"),
              std::string::npos);
  }
}

TEST(SetItem, AdvancedSettingMatchesHandDerivedResults) {
  // test_advancedindex's validate_setting on consec((10,)).
  Tensor x = iota({10});
  x[{i64({0})}] = -2;
  EXPECT_EQ(doubles(x.index({i64({0})})), (V{-2}));
  x[{i64({2, 3, 4})}] = 4;
  EXPECT_EQ(doubles(x.index({i64({2, 3, 4})})), (V{4, 4, 4}));
  x[{i64({0, 2, 4})}] = f64({5, 4, 3}, {3});
  EXPECT_EQ(doubles(x.index({i64({0, 2, 4})})), (V{5, 4, 3}));
  // reference [[1, 2], [3, 4], [5, 6]] and 2-D rows/columns.
  Tensor ref = iota({3, 2});
  Tensor rows = i64({0, 0, 1, 2}, {2, 2});
  Tensor cols = i64({0, 1, 1, 0}, {2, 2});
  ref[{i64({0}), i64({1})}] = -1;
  EXPECT_EQ(ref.index({0, 1}).item<double>(), -1);
  ref[{i64({0, 1, 2}), i64({0})}] = f64({-1, 2, -4}, {3});
  EXPECT_EQ(doubles(ref.index({Slice(), 0})), (V{-1, 2, -4}));
  ref[{rows, cols}] = f64({4, 6, 2, 3}, {2, 2});
  EXPECT_EQ(doubles(ref.index({rows, cols})), (V{4, 6, 2, 3}));
  // A strided destination: [[10, 11], [17, 18]] of arange(24).view(3, 8).
  Tensor base = iota({3, 8});
  Tensor strided = base.as_strided({2, 2}, {7, 1}, 10);
  strided[{i64({0, 1}), i64({1, 0})}] = f64({-1, 2}, {2});
  EXPECT_EQ(doubles(base.index({1, Slice(2, 4)})), (V{10, -1}));  // offsets 10, 11
  EXPECT_EQ(base.index({2, 1}).item<double>(), 2);
}

TEST(SetItem, BoolMaskAssignment) {
  Tensor v = i64({1, 2, 3, 4}, {2, 2});
  Tensor m = mask({true, false}, {2});
  v[{m, Slice()}] = 0;
  EXPECT_EQ(doubles(v), (V{0, 0, 3, 4}));
  v = i64({1, 2, 3, 4}, {2, 2});
  v[{Slice(), m}] = 0;
  EXPECT_EQ(doubles(v), (V{0, 2, 0, 4}));
  // A multi-dim mask in the middle: v[:, mask, :] = 0.
  Tensor w = i64({1, 2, 3, 4}, {1, 2, 2, 1});
  w[{Slice(), mask({true, false, false, true}, {2, 2}), Slice()}] = 0;
  EXPECT_EQ(doubles(w), (V{0, 2, 3, 0}));
  // A mask with a tensor value (one value per selected element) and with a 1-element value.
  Tensor y = iota({3, 4});
  y[{y.index({Slice()}).gt(dev(full({}, 5.0, kFloat64)))}] = iota({6});
  EXPECT_EQ(doubles(y), (V{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  Tensor z = iota({2, 3});
  z[{mask({false, true, true, false, false, true}, {2, 3})}] = f64({7}, {1});
  EXPECT_EQ(doubles(z), (V{0, 7, 7, 3, 4, 7}));
  EXPECT_THROW(z.set_item_({mask({true, false}, {2, 1})}, 0.0), IndexError);
}

TEST(SetItem, BoolScalars) {
  Tensor y = iota({3, 4});
  y[{true}] = f64({1, 1, 1, 1}, {1, 1, 4});
  EXPECT_EQ(doubles(y), V(12, 1));
  uint32_t v = y.version();
  y[{false}] = f64({1, 2, 3, 4, 5}, {5});  // writes, checks and bumps nothing, as PyTorch
  EXPECT_EQ(doubles(y), V(12, 1));
  EXPECT_EQ(y.version(), v);
  y[{Slice(), true, i64({0, 2})}] = 5;
  EXPECT_EQ(doubles(y.index({Slice(), 0})), (V{5, 5, 5}));
  EXPECT_EQ(doubles(y.index({Slice(), 1})), (V{1, 1, 1}));
}

// As PyTorch 1.13 (Note [Advanced sets keep the value's dtype] in indexing/get_set.cc): basic
// writes and numbers convert, an advanced write refuses a tensor of another dtype before
// writing anything, except a lone bool mask with a one-element CPU value (a masked fill).
TEST(SetItem, BasicWritesConvertTheValueAdvancedOnesRefuseAnotherDtype) {
  Tensor x = dev(zeros({4}, kInt64));
  x[{Slice(2, None)}] = f64({9.9, 8.1}, {2});
  EXPECT_EQ(doubles(x), (V{0, 0, 9, 8}));
  x[{0}] = 4.8;
  x[{i64({1})}] = 2.7;  // a number converts on every path
  EXPECT_EQ(doubles(x), (V{4, 2, 9, 8}));
  x[{true}] = f64({1.5, 2.5, 3.5, 4.5}, {4});  // a lone true is x.unsqueeze(0) = v: basic
  EXPECT_EQ(doubles(x), (V{1, 2, 3, 4}));
  // The masked fill converts a one-element CPU value (for a CUDA x too, as torch).
  const Tensor one = from_vector<double>({7.9}, {});
  const Tensor m = mask({true, false, false, true}, {4});
  x[{m}] = one;
  EXPECT_EQ(doubles(x), (V{7, 2, 3, 7}));
  // So does a uint8 mask (torch's canDispatchToMaskedFill takes kByte as kBool), also after
  // basic indices and onto an empty selection (the Python fuzzer's x[2**64::3, u8] = tensor([1])).
  const Tensor u8 = dev(mask({false, true, true, false}, {4}).to(kUInt8));
  x[{u8}] = from_vector<double>({5.5}, {1});
  EXPECT_EQ(doubles(x), (V{7, 5, 5, 7}));
  Tensor e = dev(zeros({3, 2}, kFloat64));
  e[{Slice(1, None, 3), dev(mask({false, true}, {2}).to(kUInt8))}] = from_vector<int64_t>({4}, {1});
  e[{Slice(7, None, 3), dev(mask({true, true}, {2}).to(kUInt8))}] = from_vector<int64_t>({1}, {1});
  EXPECT_EQ(doubles(e), (V{0, 0, 0, 4, 0, 0}));
  const std::vector<unsigned char> before = bytes(x);
  const uint32_t version = x.version();
  // Each as torch: "Index put requires the source and destination dtypes match".
  const std::vector<std::pair<std::vector<indexing::TensorIndex>, Tensor>> sets = {
      {{i64({1, 2})}, f64({2.7, -3.2}, {2})},
      {{i64({1, 2})}, dev(one)},            // a 0-dim value
      {{i64({1, 2})}, one},                 // a 0-dim CPU value
      {{m}, f64({2.7, -3.2}, {2})},         // a mask with several values
      {{true, i64({1})}, f64({2.7}, {1})},  // true in a longer list: advanced
      {{Ellipsis, i64({1})}, dev(full({1}, 1, kInt32))},
  };
  std::vector<std::function<void()>> refused = {
      [&] { x.index_put_({i64({0})}, f64({1}, {1})); },
      [&] { x.index_put_({i64({0})}, f64({1}, {1}), /*accumulate=*/true); },
  };
  for (const auto& [index, value] : sets) {
    refused.push_back([&x, &index = index, &value = value] { x.set_item_(index, value); });
  }
  for (size_t k = 0; k < refused.size(); ++k) {
    try {
      refused[k]();
      ADD_FAILURE() << "write " << k << " was accepted";
    } catch (const DTypeError& e) {
      EXPECT_NE(std::string(e.what()).find("Index put requires the source and destination "
                                           "dtypes match"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(bytes(x), before) << k;
    EXPECT_EQ(x.version(), version) << k;
  }
  // With autograd: a float32 tensor that requires grad and a float64 value.
  Tensor a = dev(zeros({3}, kFloat32)).requires_grad_();
  Tensor y = a.clone();
  Tensor v = f64({1.5}, {1}).requires_grad_();
  EXPECT_THROW((y[{i64({1})}] = v), DTypeError);
  EXPECT_EQ(doubles(y), (V{0, 0, 0}));
  EXPECT_EQ(y.version(), 0u);
  y[{i64({1})}] = v.to(kFloat32);
  EXPECT_EQ(doubles(y), (V{0, 1.5, 0}));
}

TEST(SetItem, OverlappingValueIsReadAsIfCopiedFirst) {
  Tensor x = iota({5});
  x[{Slice(1, None)}] = x.index({Slice(None, -1)});
  EXPECT_EQ(doubles(x), (V{0, 0, 1, 2, 3}));
  Tensor y = iota({5});
  y[{Slice(None, -1)}] = y.index({Slice(1, None)});
  EXPECT_EQ(doubles(y), (V{1, 2, 3, 4, 4}));
  Tensor z = iota({5});
  z[{i64({1, 2, 3})}] = z.index({Slice(0, 3)});  // PyTorch 1.13 raises here
  EXPECT_EQ(doubles(z), (V{0, 0, 1, 2, 4}));
  Tensor m = iota({3, 3});
  m[{Slice(), 0}] = m.index({0});  // a column from a row that shares element [0, 0]
  EXPECT_EQ(doubles(m.index({Slice(), 0})), (V{0, 1, 2}));
}

TEST(SetItem, WritingIntoAnExpandedTensorIsAnError) {
  Tensor x = iota({3});
  Tensor e = x.expand({2, 3});
  EXPECT_THROW(e.set_item_({Slice()}, 1.0), ValueError);
  EXPECT_THROW(e.set_item_({i64({0}), 0}, 1.0), ValueError);  // sliced e[:, 0] has stride 0
  e[{0, 1}] = 7.0;                                            // one element is fine
  EXPECT_EQ(doubles(x), (V{0, 7, 2}));
}

TEST(SetItemStrongGuarantee, NothingIsWrittenOnError) {
  // PyTorch 1.13 leaves x[3] == -1 here; we leave x as it was, version included.
  Tensor x = iota({5});
  std::vector<unsigned char> before = bytes(x);
  EXPECT_THROW(x.set_item_({i64({-2, 6, 4}), None}, -1.0), IndexError);
  EXPECT_EQ(bytes(x), before);
  EXPECT_EQ(x.version(), 0u);
  Tensor y = iota({3, 4});
  before = bytes(y);
  EXPECT_THROW(y.set_item_({Slice(), i64({-2, 6, 1})}, f64({1, 2, 3}, {3})), IndexError);
  EXPECT_THROW(y.set_item_({i64({0, 1}), i64({0, 9})}, 0.0), IndexError);
  EXPECT_THROW(y.set_item_({i64({0, 1})}, dev(ones({3, 4}, kFloat64))), ShapeError);
  EXPECT_THROW(y.set_item_({Slice(), Slice(None, None, 0)}, 0.0), ValueError);
  EXPECT_THROW(y.set_item_({0, 4}, 0.0), IndexError);
  EXPECT_THROW(y.set_item_({mask({true, false, true, true}, {4})}, 0.0), IndexError);
  EXPECT_THROW(y.index_put_({i64({3})}, dev(ones({4}, kFloat64)), true), IndexError);
  EXPECT_EQ(bytes(y), before);
  EXPECT_EQ(y.version(), 0u);
}

TEST(SetItemVersion, OneBumpPerCallWithTheCallSite) {
  Tensor x = dev(zeros({3, 3}));
  Tensor view = x.index({Slice(1, None)});
  const int line_a = __LINE__ + 1;
  x[{1, 2}] = 3.0;
  EXPECT_EQ(x.version(), 1u);
  const std::optional<MutationSite> s = x.version_counter().site_of_bump(0);
  ASSERT_TRUE(s.has_value());
  EXPECT_STREQ(s->op, "set_item_");
  EXPECT_EQ(s->line, line_a);
  EXPECT_NE(std::string(s->file).find("set_item_test.cc"), std::string::npos);

  const int line_b = __LINE__ + 1;
  x.set_item_({Slice(), 0}, f64({1, 2, 3}, {3}));
  EXPECT_EQ(x.version(), 2u);
  EXPECT_EQ(x.version_counter().site_of_bump(1)->line, line_b);

  const int line_c = __LINE__ + 1;
  x[{mask({true, false, true}, {3})}] = 5.0;
  EXPECT_EQ(x.version(), 3u);
  EXPECT_EQ(x.version_counter().site_of_bump(2)->line, line_c);

  const int line_d = __LINE__ + 1;
  x.index_put_({i64({0, 0})}, dev(ones({2, 3})), true);
  EXPECT_EQ(x.version(), 4u);
  EXPECT_STREQ(x.version_counter().site_of_bump(3)->op, "index_put_");
  EXPECT_EQ(x.version_counter().site_of_bump(3)->line, line_d);

  view[{i64({1}), i64({1})}] = f64({8}, {1}).to(kFloat32);  // through a view: the shared counter
  EXPECT_EQ(x.version(), 5u);
  EXPECT_EQ(view.version(), 5u);
  // A read does not bump.
  Tensor r = x.index({i64({0, 1})});
  EXPECT_EQ(x.version(), 5u);
}

TEST(IndexPut, AccumulateDuplicateIndicesMatchesASequentialSum) {
  // test_index_put_accumulate_duplicate_indices: random-walk indices, many interleaved
  // duplicates. Ours is the sequential sum exactly (same order), not just approximately.
  std::mt19937_64 rng(3);
  for (int n = 1; n < 512; n += 7) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    double walk = 0;
    int64_t max_abs = 0;
    for (auto& i : idx) {
      walk += std::uniform_real_distribution<double>(-1, 1)(rng);
      i = static_cast<int64_t>(walk);  // truncation, as .long()
      max_abs = std::max(max_abs, std::abs(i));
    }
    Generator gen(static_cast<uint64_t>(n));
    Tensor input = randn({max_abs + 1}, gen);
    Tensor values = randn({n}, gen);
    std::vector<float> expect(input.data_ptr<float>(), input.data_ptr<float>() + max_abs + 1);
    for (int k = 0; k < n; ++k) {
      int64_t i = idx[static_cast<size_t>(k)];
      expect[static_cast<size_t>(i < 0 ? i + max_abs + 1 : i)] += values.data_ptr<float>()[k];
    }
    Tensor out = input.clone();
    out.index_put_({from_vector<int64_t>(idx, {n})}, values, true);
    ASSERT_EQ(std::memcmp(out.data_ptr<float>(), expect.data(), expect.size() * sizeof(float)), 0)
        << n;
  }
}

TEST(IndexPut, AccumulateExpandedValues) {
  Tensor t = dev(zeros({5, 2}));
  std::vector<Tensor> indices = {i64({0, 1, 2, 3}), i64({1})};
  t.index_put_(indices, scalar_tensor(1.0, kFloat32), true);
  EXPECT_EQ(doubles(t), (V{0, 1, 0, 1, 0, 1, 0, 1, 0, 0}));
  t.index_put_(indices, f64({1}, {1}).to(kFloat32), true);
  EXPECT_EQ(doubles(t), (V{0, 2, 0, 2, 0, 2, 0, 2, 0, 0}));
  Tensor u = dev(zeros({4, 3, 2}));
  std::vector<Tensor> idx3 = {i64({0}), i64({0, 1, 2}, {3, 1}), i64({0, 1}, {1, 2})};
  u.index_put_(idx3, f64({-1, -2}, {2}).to(kFloat32), true);
  u.index_put_(idx3, f64({-1, -2}, {1, 2}).to(kFloat32), true);
  EXPECT_EQ(doubles(u.index({0})), (V{-2, -4, -2, -4, -2, -4}));
  EXPECT_EQ(doubles(u.index({Slice(1, None)})), V(18, 0));
}

TEST(IndexPut, DuplicatesWithoutAccumulateLastWinsForAnyThreadCount) {
  std::mt19937_64 rng(9);
  const int64_t n = 1 << 12, m = 1 << 18;
  std::vector<int64_t> idx(m);
  for (auto& i : idx) i = static_cast<int64_t>(rng() % n);
  Tensor index = from_vector<int64_t>(idx, {m});
  Tensor values = iota({m}, kFloat32);
  std::vector<double> expect(n, -1);
  for (int64_t k = 0; k < m; ++k) expect[static_cast<size_t>(idx[k])] = static_cast<double>(k);
  const int saved = cpu::indexing_num_threads();
  for (int threads : {1, 2, 4}) {
    cpu::set_indexing_num_threads(threads);
    for (int rep = 0; rep < 3; ++rep) {
      Tensor x = dev(full({n}, -1.0, kFloat32));
      x[{index}] = values;
      EXPECT_EQ(doubles(x), expect) << threads;
    }
  }
  cpu::set_indexing_num_threads(saved);
}

TEST(IndexPut, AccumulateIsBitwiseTheSameForAnyThreadCount) {
  Generator gen(1);
  const int64_t m = 1 << 18;
  Tensor index = dev(randint(0, 1000, {m}, gen));
  Tensor values = dev(randn({m}, gen));
  const int saved = cpu::indexing_num_threads();
  std::vector<unsigned char> expect;
  for (int threads : {1, 2, 3, 8}) {
    cpu::set_indexing_num_threads(threads);
    for (int rep = 0; rep < 2; ++rep) {
      Tensor x = dev(zeros({10, 1000}));
      x.index_put_({Tensor(), index}, values.expand({10, m}), true);  // a sliced dim to split
      Tensor y = dev(zeros({1000}));
      y.index_put_({index}, values, true);  // only index dims: split by destination range
      std::vector<unsigned char> got = bytes(x);
      std::vector<unsigned char> got_y = bytes(y);
      got.insert(got.end(), got_y.begin(), got_y.end());
      if (expect.empty()) expect = got;
      EXPECT_EQ(got, expect) << threads;
    }
  }
  cpu::set_indexing_num_threads(saved);
}

TEST(SetItemFastPath, SingleElementWrites) {
  Tensor x = dev(zeros({3, 3}));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) x[{i, -1 - j}] = i * 3 + j;
  }
  EXPECT_EQ(doubles(x), (V{2, 1, 0, 5, 4, 3, 8, 7, 6}));
  EXPECT_EQ(x.version(), 9u);
  // Out of range goes to the general path, which raises and writes nothing.
  EXPECT_THROW((x[{3, 0}] = 1.0), IndexError);
  EXPECT_THROW((x[{0, -4}] = 1.0), IndexError);
  EXPECT_EQ(x.version(), 9u);
  // Through a transposed view.
  Tensor t = x.t();
  t[{0, 2}] = 100;
  EXPECT_EQ(x.index({2, 0}).item<double>(), 100);
  Tensor b = dev(zeros({2}, kBool));
  b[{1}] = true;
  EXPECT_EQ(doubles(b), (V{0, 1}));
}

}  // namespace
}  // namespace mutagrad
