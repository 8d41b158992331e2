// Gradients through indexing: PyTorch's test_setitem, test_setitem_mask,
// test_index_backward_does_not_save_tensor and test_indexing_duplicates, written with
// hand-derived gradients, plus mutagrad's duplicate rule (only the winning write of
// index_put_ without accumulate gets gradient) and double backward through the nodes.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "indexing/indexing.h"
#include "mutagrad.h"
#include "tests/indexing/test_util.h"

namespace mutagrad {
namespace {

using testing::dev;

using indexing::Ellipsis;
using indexing::Slice;
using indexing::TensorIndex;
using testing::doubles;
using testing::f64;
using testing::i64;
using testing::mask;
using V = std::vector<double>;

// PyTorch's _test_setitem: y = x + 2; y[index] = 2; dy = ones -> dx = ones with index zeroed.
void check_setitem(IntArrayRef size, std::vector<TensorIndex> index) {
  Tensor x = dev(ones(size, kFloat64)).requires_grad_();
  Tensor y = x.add(dev(full({}, 2.0, kFloat64)));
  uint32_t version = y.version();
  y.set_item_(index, 2.0);
  EXPECT_NE(y.version(), version);
  y.backward(dev(ones(size, kFloat64)));
  Tensor expected = dev(ones(size, kFloat64));
  expected.set_item_(index, 0.0);
  EXPECT_EQ(doubles(x.grad()), doubles(expected)) << indexing::to_string(index);
}

// PyTorch's _test_setitem_tensor: a value requiring grad gets ones.
void check_setitem_tensor(IntArrayRef size, std::vector<TensorIndex> index) {
  Tensor x = dev(ones(size, kFloat64)).requires_grad_();
  Tensor y = x.add(dev(full({}, 2.0, kFloat64)));
  Tensor value;
  {
    NoGradGuard g;
    value = full_like(x.index(index), 7.0);
  }
  value.requires_grad_();
  y.set_item_(index, value);
  y.backward(dev(ones(size, kFloat64)));
  Tensor expected = dev(ones(size, kFloat64));
  expected.set_item_(index, 0.0);
  EXPECT_EQ(doubles(x.grad()), doubles(expected)) << indexing::to_string(index);
  EXPECT_EQ(doubles(value.grad()), V(static_cast<size_t>(value.numel()), 1.0))
      << indexing::to_string(index);
}

TEST(IndexingAutograd, SetItem) {
  check_setitem({5, 5}, {1});
  check_setitem({5}, {1});
  check_setitem({1}, {0});
  check_setitem({10}, {i64({0, 4, 2})});
  check_setitem({5, 5}, {i64({0, 4}), i64({2, 2})});
  check_setitem({5, 5, 5}, {Slice(), Slice(), i64({1, 3})});
  check_setitem({5, 5, 5}, {Slice(), i64({1, 3}), Slice()});
  check_setitem({5, 5, 5}, {i64({1, 3}), Slice(), Slice()});
  check_setitem({5, 5, 5}, {Slice(), i64({2, 4}), i64({1, 3})});
  check_setitem({5, 5, 5}, {i64({1, 3}), i64({2, 4}), Slice()});
  check_setitem_tensor({5, 5}, {3});
  check_setitem_tensor({5, 5}, {i64({0, 1}), i64({1, 0})});
  check_setitem_tensor({5}, {3});
  check_setitem_tensor({5}, {scalar_tensor(3, kInt64)});
  check_setitem_tensor({5}, {i64({0, 1, 2, 3})});
  check_setitem_tensor({5, 5, 5}, {Slice(), Slice(), i64({1, 3})});
  check_setitem_tensor({5, 5, 5}, {Slice(), i64({1, 3}), Slice()});
  check_setitem_tensor({5, 5, 5}, {i64({1, 3}), Slice(), Slice()});
  check_setitem_tensor({5, 5, 5}, {Slice(), i64({2, 4}), i64({1, 3})});
  check_setitem_tensor({5, 5, 5}, {i64({1, 3}), i64({2, 4}), Slice()});
}

TEST(IndexingAutograd, SetItemBroadcastValueGetsSummedGradient) {
  Tensor x = f64({1, 2, 3, 4}, {4}).requires_grad_();
  Tensor y = dev(zeros({2, 3, 4}, kFloat64));
  y[{1}] = x;  // x broadcasts over y[1]'s 3 rows
  Tensor g = testing::iota({2, 3, 4});
  y.backward(g);
  // dx[k] = sum over rows r of g[1, r, k] = (12 + k) + (16 + k) + (20 + k)
  EXPECT_EQ(doubles(x.grad()), (V{48, 51, 54, 57}));
  EXPECT_EQ(std::string(y.grad_fn()->name()), "CopySlices");
}

TEST(IndexingAutograd, SetItemMask) {
  Tensor m =
      mask({true,  false, true, true,  false, false, true, false, false, true, true, true, false,
            false, false, true, false, true,  false, true, false, false, true, true, false},
           {5, 5});
  check_setitem({5, 5}, {m});
  check_setitem({5}, {m.index({0})});
  check_setitem({1}, {m.index({0, Slice(0, 1)})});
  check_setitem_tensor({5, 5}, {m});
  check_setitem_tensor({5}, {m.index({0})});
}

TEST(IndexingAutograd, IndexBackwardDoesNotSaveTheTensor) {
  // Saving `tensor` would make the write below stale it for the backward of the read.
  Tensor a = f64({1, 0, 0}, {3});
  Tensor b = dev(zeros({3}, kFloat64)).requires_grad_();
  Tensor t = b.add(dev(full({}, 0.0, kFloat64)));
  Tensor m = a.ne(dev(full({}, 0.0, kFloat64)));
  t[{m}] = t.index({m});
  t.backward(zeros_like(t));
  EXPECT_EQ(doubles(b.grad()), (V{0, 0, 0}));
}

TEST(IndexingAutograd, IndexingDuplicatesAccumulateInTheGradient) {
  Tensor y = testing::iota({4, 4}).requires_grad_();
  Tensor idx = i64({1, 1, 3, 2, 1, 2});
  y.index({idx}).sum().backward();
  V expected(16, 0);
  for (int64_t i : {1, 1, 3, 2, 1, 2}) {
    for (int64_t j = 0; j < 4; ++j) expected[static_cast<size_t>(i * 4 + j)] += 1;
  }
  EXPECT_EQ(doubles(y.grad()), expected);
  EXPECT_EQ(std::string(y.index({idx}).grad_fn()->name()), "IndexBackward0");

  Tensor z = testing::iota({4, 4, 4}).requires_grad_();
  z.index({idx, i64({0})}).sum().backward();
  V expected3(64, 0);
  for (int64_t i : {1, 1, 3, 2, 1, 2}) {
    for (int64_t k = 0; k < 4; ++k) expected3[static_cast<size_t>(i * 16 + k)] += 1;  // z[i][0]
  }
  EXPECT_EQ(doubles(z.grad()), expected3);
}

TEST(IndexingAutograd, IndexPutGradients) {
  // out = self.index_put(indices, values, accumulate): d self, d values by hand.
  for (bool accumulate : {false, true}) {
    Tensor self = testing::iota({3, 2}).requires_grad_();
    Tensor values = f64({10, 20, 30, 40}, {2, 2}).requires_grad_();
    Tensor out = self.clone();
    out.index_put_({i64({2, 0})}, values, accumulate);
    EXPECT_EQ(std::string(out.grad_fn()->name()), "IndexPutBackward0");
    Tensor g = f64({1, 2, 3, 4, 5, 6}, {3, 2});
    out.backward(g);
    EXPECT_EQ(doubles(values.grad()), (V{5, 6, 1, 2}));
    EXPECT_EQ(doubles(self.grad()), (accumulate ? V{1, 2, 3, 4, 5, 6} : V{0, 0, 3, 4, 0, 0}));
  }
}

TEST(IndexingAutograd, OutOfPlaceIndexPutIsAFreshTensorWithItsOwnNode) {
  // As torch.index_put: the result is at version 0, its node points at self and values.
  Tensor self = testing::iota({3, 2}).requires_grad_();
  Tensor values = f64({10, 20, 30, 40}, {2, 2}).requires_grad_();
  Tensor out = autograd::index_put(self, {i64({2, 0})}, values, /*accumulate=*/false);
  EXPECT_EQ(out.version(), 0u);
  EXPECT_EQ(self.version(), 0u);
  EXPECT_EQ(doubles(out), (V{30, 40, 2, 3, 10, 20}));
  EXPECT_EQ(std::string(out.grad_fn()->name()), "IndexPutBackward0");
  EXPECT_EQ(std::string(out.grad_fn()->next_edge(0).function->name()), "AccumulateGrad");
  out.backward(f64({1, 2, 3, 4, 5, 6}, {3, 2}));
  EXPECT_EQ(doubles(values.grad()), (V{5, 6, 1, 2}));
  EXPECT_EQ(doubles(self.grad()), (V{0, 0, 3, 4, 0, 0}));
  EXPECT_THROW(autograd::index_put(self, {i64({3, 0})}, values, false), IndexError);
}

TEST(IndexingAutograd, OnlyTheWinningDuplicateGetsGradient) {
  // x[[1, 3, 1]] = v: v[2] wins at x[1], so v[0] gets no gradient (PyTorch gives it one).
  Tensor v = f64({10, 20, 30}, {3}).requires_grad_();
  Tensor x = dev(zeros({4}, kFloat64));
  x[{i64({1, 3, 1})}] = v;
  EXPECT_EQ(doubles(x), (V{0, 30, 0, 20}));
  x.backward(f64({1, 2, 3, 4}, {4}));
  EXPECT_EQ(doubles(v.grad()), (V{0, 4, 2}));
  // With accumulate every duplicate contributed, so every one gets gradient.
  Tensor w = f64({10, 20, 30}, {3}).requires_grad_();
  Tensor y = dev(zeros({4}, kFloat64));
  y.index_put_({i64({1, 3, 1})}, w, true);
  y.backward(f64({1, 2, 3, 4}, {4}));
  EXPECT_EQ(doubles(w.grad()), (V{2, 4, 2}));
}

TEST(IndexingAutograd, BroadcastValuesAndSlicedDims) {
  // x[:, [0, 2]] = v with v of shape [2] broadcast over 3 rows: dv = column sums.
  Tensor v = f64({1, 2}, {2}).requires_grad_();
  Tensor x = dev(zeros({3, 3}, kFloat64));
  x[{Slice(), i64({0, 2})}] = v;
  x.backward(testing::iota({3, 3}));
  EXPECT_EQ(doubles(v.grad()), (V{0 + 3 + 6, 2 + 5 + 8}));
}

TEST(IndexingAutograd, WritesIntoALeafRequiringGradAreRejected) {
  Tensor x = dev(zeros({3}, kFloat64)).requires_grad_();
  std::vector<unsigned char> before = testing::bytes(x);
  EXPECT_THROW(x.set_item_({0}, 1.0), autograd::AutogradError);
  EXPECT_THROW(x.set_item_({i64({0})}, 1.0), autograd::AutogradError);
  EXPECT_THROW(x.index_put_({i64({0})}, f64({1}, {1})), autograd::AutogradError);
  EXPECT_EQ(testing::bytes(x), before);
  EXPECT_EQ(x.version(), 0u);
  {
    NoGradGuard g;  // allowed in no_grad mode, and still bumps
    x[{i64({0})}] = 1.0;
  }
  EXPECT_EQ(doubles(x.detach()), (V{1, 0, 0}));
  EXPECT_EQ(x.version(), 1u);
}

TEST(IndexingAutograd, StaleSavedTensorNamesTheSetItemCallSite) {
  Tensor x = f64({1, 2, 3}, {3}).requires_grad_();
  Tensor y = x.mul(x);     // saves x? no: saves the operands, which are x (a leaf)
  Tensor z = y.sigmoid();  // saves its output z
  const int line = __LINE__ + 1;
  z[{i64({0})}] = 0.0;
  try {
    z.sum().backward();
    FAIL() << "expected a stale-tensor error";
  } catch (const autograd::AutogradError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("set_item_"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(line)), std::string::npos) << what;
  }
}

TEST(IndexingAutograd, DoubleBackwardThroughIndex) {
  // f = sum(x[idx]^2); df/dx = 2 x scattered with duplicates summed; d(df/dx . v)/dx.
  Tensor x = f64({1, 2, 3}, {3}).requires_grad_();
  Tensor idx = i64({0, 2, 2});
  Tensor f = x.index({idx}).pow(2).sum();
  auto grads = autograd::grad({f}, {x}, {}, /*retain_graph=*/std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(doubles(grads[0]), (V{2, 0, 12}));
  Tensor h = grads[0].mul(f64({1, 1, 1}, {3})).sum();
  h.backward();
  EXPECT_EQ(doubles(x.grad()), (V{2, 0, 4}));
}

}  // namespace
}  // namespace mutagrad
