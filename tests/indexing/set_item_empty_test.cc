// Writes that select no element (issue 20 item 10). As PyTorch 1.13 (C++ set_item and
// Python's bare x[False] = v): x[{false}] = v writes nothing, checks nothing and does not bump
// the version, so a tensor saved for backward stays valid. Every other empty selection (an
// empty slice, an empty index tensor, an all-false mask, {None, false}) runs its checks and
// bumps once, as torch does; tests/python/empty_write_test.py compares each form with torch.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "indexing/indexing.h"
#include "mutagrad.h"
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
using V = std::vector<double>;

Tensor empty_index() { return dev(empty({0}, kInt64)); }
Tensor all_false(const Tensor& h) { return h > 100.0; }

// h = x.exp() (which saves h); write(h); h.sum().backward(). x is ones(3).
struct Outcome {
  uint32_t version;  // h's version after the write
  bool backward_ok;
  std::string error;  // backward's error, if any
  V grad;             // x.grad after backward
};

Outcome through_saved_tensor(const std::function<void(Tensor&)>& write) {
  Tensor x = dev(ones({3}, kFloat64)).requires_grad_();
  Tensor h = x.exp();
  write(h);
  Outcome run{h.version(), true, "", {}};
  try {
    h.sum().backward();
    run.grad = doubles(x.grad());
  } catch (const autograd::AutogradError& e) {
    run.backward_ok = false;
    run.error = e.what();
  }
  return run;
}

TEST(SetItemEmpty, BareFalseDoesNotBumpAndBackwardSucceeds) {
  // The repro: torch succeeds.
  Outcome run = through_saved_tensor([](Tensor& h) { h[{false}] = 7.0; });
  EXPECT_EQ(run.version, 0u);
  ASSERT_TRUE(run.backward_ok) << run.error;
  ASSERT_EQ(run.grad.size(), 3u);
  for (double g : run.grad) EXPECT_NEAR(g, std::exp(1.0), 1e-12);
}

TEST(SetItemEmpty, BareFalseWithATensorValueDoesNotBumpNorCheckTheValue) {
  Outcome run = through_saved_tensor([](Tensor& h) { h.set_item_({false}, f64({1, 2, 3}, {3})); });
  EXPECT_EQ(run.version, 0u);
  EXPECT_TRUE(run.backward_ok) << run.error;
  // A value of a shape that could not broadcast to anything indexed: not checked (torch).
  Tensor y = testing::iota({2, 3});
  y.set_item_({false}, dev(zeros({4, 5})));
  EXPECT_EQ(y.version(), 0u);
  EXPECT_EQ(doubles(y), (V{0, 1, 2, 3, 4, 5}));
}

TEST(SetItemEmpty, BareFalseOnALeafRequiringGradIsANoOp) {
  // Nothing is written, so the leaf check does not run either (torch: no error, version 0).
  Tensor x = dev(ones({3})).requires_grad_();
  x[{false}] = 7.0;
  EXPECT_EQ(x.version(), 0u);
  EXPECT_EQ(doubles(x), V(3, 1.0));
  Tensor s = dev(full({}, 2.0));  // 0-dim
  s[{false}] = 7.0;
  EXPECT_EQ(s.version(), 0u);
  EXPECT_EQ(doubles(s), V{2.0});
}

// Every other empty selection is a write of no element: one bump, as in torch, so a tensor
// saved before it is stale (torch's backward raises too).
TEST(SetItemEmpty, OtherEmptySelectionsBumpOnceAsTorch) {
  const std::vector<std::pair<const char*, std::function<void(Tensor&)>>> writes = {
      {"{None, false} = scalar",
       [](Tensor& h) {
         h[{None, false}] = 7.0;
       }},
      {"{false, None} = scalar",
       [](Tensor& h) {
         h[{false, None}] = 7.0;
       }},
      {"{Ellipsis, false} = scalar",
       [](Tensor& h) {
         h[{Ellipsis, false}] = 7.0;
       }},
      {"{tensor(false)} = scalar", [](Tensor& h) { h[{dev(full({}, false, kBool))}] = 7.0; }},
      {"{empty index} = scalar", [](Tensor& h) { h[{empty_index()}] = 7.0; }},
      {"{empty index} = empty", [](Tensor& h) { h[{empty_index()}] = dev(empty({0}, kFloat64)); }},
      {"{all-false mask} = scalar", [](Tensor& h) { h[{all_false(h)}] = 7.0; }},
      {"{all-false mask} = 0-dim",
       [](Tensor& h) { h[{all_false(h)}] = dev(full({}, 7.0, kFloat64)); }},
      {"{all-false mask} = empty",
       [](Tensor& h) { h[{all_false(h)}] = dev(empty({0}, kFloat64)); }},
      {"{Slice(3, 3)} = scalar", [](Tensor& h) { h[{Slice(3, 3)}] = 7.0; }},
      {"{Slice(0, 0)} = empty", [](Tensor& h) { h[{Slice(0, 0)}] = dev(empty({0}, kFloat64)); }},
      {"{Slice(0, 0)} = 0-dim", [](Tensor& h) { h[{Slice(0, 0)}] = dev(full({}, 1.0, kFloat64)); }},
      {"index_put_ empty index",
       [](Tensor& h) { h.index_put_({empty_index()}, dev(empty({0}, kFloat64)), false); }},
      {"index_put_ empty index, accumulate",
       [](Tensor& h) { h.index_put_({empty_index()}, dev(empty({0}, kFloat64)), true); }},
      {"index_put_ all-false mask",
       [](Tensor& h) { h.index_put_({all_false(h)}, dev(full({}, 3.0, kFloat64)), false); }},
      {"index_put_ all-false mask, accumulate",
       [](Tensor& h) { h.index_put_({all_false(h)}, dev(full({}, 3.0, kFloat64)), true); }},
      {"masked_fill_ all-false, scalar", [](Tensor& h) { h.masked_fill_(all_false(h), 3.0); }},
      {"masked_fill_ all-false, 0-dim",
       [](Tensor& h) { h.masked_fill_(all_false(h), dev(full({}, 3.0, kFloat64))); }},
      {"fill_ of an empty view", [](Tensor& h) { h.index({Slice(3, 3)}).fill_(1.0); }},
      {"zero_ of an empty view", [](Tensor& h) { h.index({Slice(3, 3)}).zero_(); }},
      {"copy_ into an empty view",
       [](Tensor& h) { h.index({Slice(3, 3)}).copy_(dev(empty({0}, kFloat64))); }},
  };
  for (const auto& [name, write] : writes) {
    Outcome run = through_saved_tensor(write);
    EXPECT_EQ(run.version, 1u) << name;
    EXPECT_FALSE(run.backward_ok) << name << ": torch's backward fails here too";
    EXPECT_NE(run.error.find("modified by an inplace operation"), std::string::npos) << name;
  }
}

TEST(SetItemEmpty, InPlaceOpsOnAnEmptyTensorBumpAsTorch) {
  Tensor e = dev(ones({0}));
  e.fill_(1.0);
  EXPECT_EQ(e.version(), 1u);
  e.zero_();
  EXPECT_EQ(e.version(), 2u);
  e.copy_(dev(ones({0})));
  EXPECT_EQ(e.version(), 3u);
  e[{Slice()}] = 2.0;
  EXPECT_EQ(e.version(), 4u);
  e[{false}] = 2.0;  // the one write torch skips
  EXPECT_EQ(e.version(), 4u);
}

TEST(SetItemEmpty, EmptyIndexWithoutAutogradBumpsOnceAndWritesNothing) {
  Tensor y = testing::iota({2, 3});
  y[{i64({})}] = 9.0;
  EXPECT_EQ(y.version(), 1u);
  y.index_put_({i64({})}, dev(empty({0, 3}, kFloat64)), /*accumulate=*/true);
  EXPECT_EQ(y.version(), 2u);
  y[{Slice(), Slice(1, 1)}] = 9.0;
  EXPECT_EQ(y.version(), 3u);
  EXPECT_EQ(doubles(y), (V{0, 1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace mutagrad
