// Mutation meets higher-order gradients and indexing: a saved tensor written between the two
// grads of a Hessian-vector product, detach().zero_(), in-place writes under NoGradGuard and
// writes to a disjoint region of the same storage are all caught at backward, naming the write
// (op and this file's line); set_item_, index_put_ and masked_fill_ on views of non-leaf
// tensors pass gradcheck and gradgradcheck. Expected values are hand-derived.
#include <string>
#include <vector>

#include "grad_test_util.h"
#include "indexing/indexing.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;
using autograd::VariableList;
using indexing::Slice;
using testing_util::dev;
using testing_util::expect_close;
using testing_util::leaf;

Tensor leaf_of(std::vector<double> v) {
  return dev(from_vector(v, {static_cast<int64_t>(v.size())})).requires_grad_();
}

// Runs `backward` and checks it raises the stale-tensor error naming `op` at this file:`line`.
template <typename F>
void expect_stale(F backward, const char* op, int line) {
  try {
    backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("modified by an inplace operation"), std::string::npos) << msg;
    const std::string where = std::string(op) + " at " + __FILE__ + ":" + std::to_string(line);
    EXPECT_NE(msg.find(where), std::string::npos) << "expected '" << where << "' in: " << msg;
  }
}

TEST(MutationHvp, HvpWithoutMutationIsCorrect) {
  Tensor x = leaf_of({1, 2, 3});
  Tensor h = x * 1.0;
  Tensor y = (h * h * h).sum();
  VariableList g = autograd::grad({y}, {x}, {}, true, /*create_graph=*/true);
  expect_close(g[0], {3, 12, 27});  // 3x^2
  Tensor v = leaf_of({1, -1, 2}).detach();
  VariableList hv = autograd::grad({g[0]}, {x}, {v});
  expect_close(hv[0], {6, -12, 36});  // diag(6x) v
}

TEST(MutationHvp, SavedTensorMutatedBetweenTheTwoGradsRaises) {
  Tensor x = leaf_of({1, 2, 3});
  Tensor h = x * 1.0;
  Tensor y = (h * h * h).sum();
  VariableList g = autograd::grad({y}, {x}, {}, true, /*create_graph=*/true);
  h.mul_(2.0);
  const int line = __LINE__ - 1;
  expect_stale([&] { autograd::grad({g[0].sum()}, {x}); }, "mul_", line);
}

TEST(MutationHvp, DetachThenZeroIsCaughtAtBackward) {
  Tensor x = leaf_of({1, 2});
  Tensor h = x * 1.0;
  Tensor y = (h * h).sum();
  h.detach().zero_();
  const int line = __LINE__ - 1;
  expect_close(h, {0, 0});
  expect_stale([&] { y.backward(); }, "zero_", line);
}

TEST(MutationHvp, InplaceUnderNoGradIsCaughtAtBackward) {
  Tensor x = leaf_of({0.5, 1});
  Tensor h = x.exp();  // ExpBackward0 saves its output
  Tensor y = (h * 3.0).sum();
  int line = 0;
  {
    NoGradGuard guard;
    h.add_(1.0);
    line = __LINE__ - 1;
  }
  EXPECT_EQ(h.version(), 1u);  // no_grad records nothing but still bumps
  expect_stale([&] { y.backward(); }, "add_", line);
}

TEST(MutationHvp, WriteToADisjointRegionIsStillCaught) {
  Tensor x = leaf_of({1, 2, 3, 4});
  Tensor h = x * 1.0;
  Tensor front = h.narrow(0, 0, 2);
  Tensor y = (front * front).sum();
  h.narrow(0, 2, 2).fill_(0.0);
  const int line = __LINE__ - 1;
  expect_close(front, {1, 2});  // the saved elements did not change; the counter did
  expect_stale([&] { y.backward(); }, "fill_", line);
}

TEST(MutationHvp, SetItemOnViewOfNonLeafIsCaught) {
  Tensor x = leaf_of({1, 2, 3, 4});
  Tensor h = x * 1.0;
  Tensor y = (h * h).sum();
  h.narrow(0, 1, 2).set_item_({0}, 7.0);
  const int line = __LINE__ - 1;
  expect_close(h, {1, 7, 3, 4});
  expect_stale([&] { y.backward(); }, "set_item_", line);
}

TEST(MutationHvp, GradcheckSetItemOnView) {
  Tensor x = leaf({3, 3}, 31);
  Tensor value = leaf({2}, 32);
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        Tensor v = y.narrow(0, 0, 2);  // rows 0-1
        v.set_item_({Slice(), 1}, in[1]);
        return y * y;
      },
      {x, value});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        Tensor v = y.t();  // non-contiguous view
        v.set_item_({dev(tensor({0, 2}))}, in[1].view({2, 1}).expand({2, 3}));
        return y.sin();
      },
      {x, value});
}

TEST(MutationHvp, GradcheckIndexPutOnView) {
  Tensor x = leaf({4, 3}, 41);
  Tensor values = leaf({3, 2}, 42);
  for (bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "accumulate=true" : "accumulate=false");
    CHECK_GRADS(
        [accumulate](const VariableList& in) {
          Tensor y = in[0] * 2.0;
          Tensor v = y.narrow(1, 0, 2);  // 4x2, non-contiguous
          // Duplicates only when accumulating (deterministic winner otherwise).
          Tensor idx = accumulate ? dev(tensor({0, 2, 0})) : dev(tensor({3, 1, 0}));
          v.index_put_({idx}, in[1], accumulate);
          return y * y;
        },
        {x, values});
  }
}

TEST(MutationHvp, GradcheckMaskedFillOnView) {
  Tensor x = leaf({3, 3}, 51);
  Tensor value = leaf({}, 52);
  Tensor mask = dev(tensor({{true, false, true}, {false, false, true}, {true, true, false}}));
  CHECK_GRADS(
      [mask](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        y.t().masked_fill_(mask, in[1]);
        return y * y;
      },
      {x, value});
  CHECK_GRADS(
      [mask](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        y.narrow(0, 1, 2).masked_fill_(mask.narrow(0, 0, 2), 0.5);
        return y.exp();
      },
      {x});
}

// The public hvp (forward-over-reverse without create_graph, Note [hvp by forward-over-reverse])
// equals the double-vjp hvp on a program writing in place through views of intermediates: a
// product into a slice, a copy_ into a transposed view, an indexed accumulate, and an input
// the loss does not use (zeros from both).
TEST(MutationHvp, PublicHvpEqualsTheDoubleVjpThroughViewWrites) {
  std::vector<bool> in_dual_level;  // per call of f: forward-over-reverse runs it in a level
  autograd::TensorFunction f([&in_dual_level](const VariableList& in) {
    in_dual_level.push_back(forward_ad::current_level().has_value());
    Tensor h = in[0].tanh() * in[1];                // 3x4
    h.narrow(1, 1, 2).mul_(in[0].narrow(1, 0, 2));  // through a view of h
    Tensor w = in[1].exp() * 1.0;  // 3x4 (exp saves its output; the product does not)
    w.t().narrow(0, 0, 2).copy_(h.t().narrow(0, 2, 2));  // dual into a view of w
    w.index_put_({dev(tensor({0, 2, 0}, kInt64))}, h.narrow(0, 0, 3).sin(), /*accumulate=*/true);
    return (w * h).sum() + (h * h).mean();
  });
  const VariableList x = {leaf({3, 4}, 40).detach(), leaf({3, 4}, 41).detach(),
                          leaf({2}, 42).detach()};
  const VariableList v = {leaf({3, 4}, 43).detach(), leaf({3, 4}, 44).detach(),
                          leaf({2}, 45).detach()};
  const autograd::FunctionalResult got = autograd::hvp(f, x, v);
  const autograd::FunctionalResult want = autograd::hvp_by_double_vjp(f, x, v);
  EXPECT_EQ(in_dual_level, (std::vector<bool>{true, false}));
  expect_close(got.outputs[0], testing_util::values(want.outputs[0]), 1e-12);
  ASSERT_EQ(got.result.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(got.result[i].requires_grad());
    EXPECT_EQ(got.result[i].device(), x[i].device());
    expect_close(got.result[i], testing_util::values(want.result[i]), 1e-10);
  }
  expect_close(got.result[2], {0, 0});
  EXPECT_EQ(x[0].version(), 0u);
  EXPECT_FALSE(forward_ad::current_level().has_value());  // its dual level was exited
  // With create_graph the result stays differentiable (the double vjp) and has the same value.
  const VariableList xg = {x[0].clone().requires_grad_(), x[1], x[2]};
  const autograd::FunctionalResult cg = autograd::hvp(f, xg, v, /*create_graph=*/true);
  EXPECT_TRUE(cg.result[0].requires_grad());
  EXPECT_EQ(in_dual_level.back(), false);
  expect_close(cg.result[0], testing_util::values(want.result[0]), 1e-10);
}

}  // namespace
}  // namespace mutagrad
