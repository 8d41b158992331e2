// clone, contiguous, to(dtype), masked_fill: gradcheck, gradgradcheck, names, dtype handling.
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::strided_leaf;

TEST(CopyOps, CloneContiguous) {
  CHECK_GRADS([](const VariableList& in) { return in[0].clone(); }, {strided_leaf({2, 3}, 1)});
  CHECK_GRADS([](const VariableList& in) { return in[0].contiguous(); }, {strided_leaf({2, 3}, 2)});
  Tensor x = leaf({2, 3}, 3);
  EXPECT_TRUE(x.contiguous().is_same(x));  // nothing to copy: the same tensor
  EXPECT_STREQ(x.t().contiguous().grad_fn()->name(), "CloneBackward0");
  EXPECT_STREQ(x.clone().grad_fn()->name(), "CloneBackward0");
}

TEST(CopyOps, ToDtype) {
  Tensor x = dev(tensor({1.0f, -2.0f})).requires_grad_();
  Tensor y = x.to(kFloat64);
  EXPECT_STREQ(y.grad_fn()->name(), "ToCopyBackward0");
  (y * y).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  expect_close(x.grad(), {2, -4});
  EXPECT_TRUE(x.to(kFloat32).is_same(x));
  EXPECT_FALSE(x.to(kInt64).requires_grad());  // integer results are not differentiable
  CHECK_GRADS([](const VariableList& in) { return in[0].to(kFloat64); }, {strided_leaf({2, 2}, 4)});
}

TEST(CopyOps, MaskedFill) {
  Tensor mask = dev(tensor({{true, false, true}, {false, false, true}}));
  CHECK_GRADS([](const VariableList& in) { return in[0].masked_fill(in[1], 2.0); },
              {leaf({2, 3}, 5), mask});
  CHECK_GRADS([](const VariableList& in) { return in[0].masked_fill(in[1], 2.0); },
              {strided_leaf({2, 3}, 6), mask});
  // The mask broadcasts the input up: [3] with a [2, 3] mask gives [2, 3].
  CHECK_GRADS([](const VariableList& in) { return in[0].masked_fill(in[1], -1.0); },
              {leaf({3}, 7), mask});
  // A 0-dim tensor value is differentiable too (MaskedFillBackward1).
  CHECK_GRADS([](const VariableList& in) { return in[0].masked_fill(in[2], in[1]); },
              {leaf({2, 3}, 8), leaf({}, 9), mask});
  Tensor x = leaf({2, 3}, 10);
  EXPECT_STREQ(x.masked_fill(mask, 0.0).grad_fn()->name(), "MaskedFillBackward0");
  EXPECT_STREQ(x.masked_fill(mask, leaf({}, 11)).grad_fn()->name(), "MaskedFillBackward1");
  EXPECT_THROW(x.masked_fill(mask, leaf({1}, 12)), ShapeError);
}

}  // namespace
}  // namespace mutagrad
