// In-place ops: gradients (gradcheck/gradgradcheck through clone + op_), writes through views
// (CopySlices), the check_inplace errors, one version bump per op, and no change on failure.
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;
using autograd::VariableList;
using testing_util::dev;
using testing_util::error_of;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

TEST(InplaceOps, ArithmeticWithTensorOperands) {
  Tensor x = leaf({2, 3}, 1);
  Tensor w = leaf({3}, 2, 0.5, 2.0);  // broadcast into self
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0].clone();
        return y.add_(in[1], 2.0);
      },
      {x, w});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0].clone();
        return y.sub_(in[1]);
      },
      {x, w});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0].clone();
        return y.mul_(in[1]);
      },
      {x, w});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0].clone();
        return y.div_(in[1]);
      },
      {x, w});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0].clone();
        return y.mul_(in[1]);
      },
      {strided_leaf({2, 3}, 3), strided_leaf({2, 3}, 4)});
}

TEST(InplaceOps, ArithmeticWithScalars) {
  Tensor x = strided_leaf({2, 3}, 5);
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0].clone();
        return y.add_(2.0);
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0].clone();
        return y.sub_(1);
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0].clone();
        return y.mul_(-3.0);
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0].clone();
        return y.div_(4.0);
      },
      {x});
}

TEST(InplaceOps, Unary) {
  Tensor x = leaf({2, 3}, 6, 0.2, 1.0);
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 1.0;
        return y.neg_();
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] - 0.6;
        return y.relu_();
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.sigmoid_();
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.tanh_();
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.exp_();
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.clamp_(0.7, 1.5);
      },
      {x});
}

TEST(InplaceOps, CopyFillZeroMaskedFill) {
  Tensor x = leaf({2, 3}, 7);
  Tensor src = leaf({3}, 8);
  Tensor value = leaf({}, 9);
  Tensor mask = dev(tensor({{true, false, false}, {false, true, true}}));
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.copy_(in[1]);
      },
      {x, src});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.fill_(3.0) * in[0];
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.fill_(in[1]);
      },
      {x, value});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.zero_() + in[0];
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.masked_fill_(in[1], 5.0);
      },
      {x, mask});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 2.0;
        return y.masked_fill_(in[2], in[1]);
      },
      {x, value, mask});
}

TEST(InplaceOps, NodeNames) {
  Tensor y = leaf({3}, 10) * 1.0;
  EXPECT_STREQ(y.mul_(2.0).grad_fn()->name(), "MulBackward1");
  EXPECT_STREQ(y.add_(leaf({3}, 11)).grad_fn()->name(), "AddBackward0");
  EXPECT_STREQ(y.sigmoid_().grad_fn()->name(), "SigmoidBackward0");
  EXPECT_STREQ(y.copy_(leaf({3}, 12)).grad_fn()->name(), "CopyBackwards");
  EXPECT_STREQ(y.fill_(1.0).grad_fn()->name(), "FillBackward0");
  EXPECT_STREQ(y.zero_().grad_fn()->name(), "ZeroBackward0");
}

TEST(InplaceOps, WritesThroughViewsRebaseTheBase) {
  Tensor x = leaf({3, 4}, 13);
  Tensor w = leaf({4}, 14);
  auto through_select = [](const VariableList& in) {
    Tensor y = in[0].clone();
    y.select(0, 1).mul_(in[1]);
    return y;
  };
  CHECK_GRADS(through_select, {x, w});
  auto through_slice_of_transpose = [](const VariableList& in) {
    Tensor y = in[0].clone();
    y.t().slice(0, 1, 4, 2).sigmoid_();
    return y * y;
  };
  CHECK_GRADS(through_slice_of_transpose, {x});
  auto copy_into_view = [](const VariableList& in) {
    Tensor y = in[0] * 1.0;
    y.slice(1, 0, 2).copy_(in[1].slice(0, 0, 2));
    return y;
  };
  CHECK_GRADS(copy_into_view, {x, w});
  Tensor y = x.clone();
  Tensor v = y.select(0, 1);
  v.mul_(w);
  EXPECT_STREQ(y.grad_fn()->name(), "CopySlices");
  EXPECT_STREQ(v.grad_fn()->name(), "SelectBackward0");  // replayed on the new base history
  // A view created before the write sees its grad_fn regenerated from the new base history.
  Tensor z = x.clone();
  Tensor row = z.select(0, 0);
  EXPECT_STREQ(row.grad_fn()->name(), "SelectBackward0");
  std::shared_ptr<autograd::Node> before = row.grad_fn();
  z.mul_(2.0);
  EXPECT_STREQ(row.grad_fn()->name(), "SelectBackward0");
  EXPECT_NE(row.grad_fn(), before);  // a new node, over MulBackward0
  EXPECT_STREQ(row.grad_fn()->next_edge(0).function->name(), "MulBackward1");  // z * 2.0
  row.sum().backward();
  expect_close(x.grad(), {2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0});
}

TEST(InplaceOps, WritingAGradValueIntoAViewOfAPlainTensor) {
  Tensor base = dev(zeros({2, 3}, kFloat64));
  Tensor w = leaf({3}, 15);
  base.select(0, 1).copy_(w);
  EXPECT_TRUE(base.requires_grad());
  EXPECT_STREQ(base.grad_fn()->name(), "CopySlices");
  (base * 2.0).sum().backward();
  expect_close(w.grad(), {2, 2, 2});
}

TEST(InplaceOps, InplaceOnPlainTensorWithGradOperandGivesHistory) {
  Tensor y = dev(ones({3}, kFloat64));
  Tensor w = leaf({3}, 16);
  y.mul_(w);
  EXPECT_FALSE(y.is_leaf());
  EXPECT_STREQ(y.grad_fn()->name(), "MulBackward0");
  y.sum().backward();
  expect_close(w.grad(), {1, 1, 1});
}

TEST(InplaceOps, LeafAndViewOfLeafErrors) {
  Tensor x = leaf({3}, 17);
  EXPECT_EQ(error_of([&] { x.add_(1.0); }), autograd::kLeafInplaceMessage);
  EXPECT_EQ(error_of([&] { x.slice(0, 0, 2).mul_(2.0); }), autograd::kViewOfLeafInplaceMessage);
  EXPECT_EQ(x.version(), 0u);  // rejected before the bump
  // A leaf that does not require grad may be written with a value that does.
  Tensor plain = dev(zeros({3}, kFloat64));
  plain.add_(x);
  EXPECT_TRUE(plain.requires_grad());
}

TEST(InplaceOps, NoGradAllowsLeafWritesAndStillBumps) {
  Tensor x = leaf({3}, 18);
  {
    NoGradGuard guard;
    x.mul_(2.0);
    x.select(0, 0).fill_(7.0);
  }
  EXPECT_EQ(x.version(), 2u);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(values(x)[0], 7.0);
}

TEST(InplaceOps, EachOpBumpsTheVersionExactlyOnce) {
  Tensor y = leaf({2, 3}, 19) * 1.0;
  Tensor w = leaf({3}, 20);
  Tensor mask = dev(tensor({true, false, true}));
  const std::vector<std::function<void()>> ops = {[&] { y.add_(w); },
                                                  [&] { y.add_(1.0); },
                                                  [&] { y.sub_(w, 2); },
                                                  [&] { y.sub_(1.0); },
                                                  [&] { y.mul_(w); },
                                                  [&] { y.mul_(2.0); },
                                                  [&] { y.div_(w); },
                                                  [&] { y.div_(2.0); },
                                                  [&] { y.neg_(); },
                                                  [&] { y.relu_(); },
                                                  [&] { y.sigmoid_(); },
                                                  [&] { y.tanh_(); },
                                                  [&] { y.exp_(); },
                                                  [&] { y.clamp_(0.0, 1.0); },
                                                  [&] { y.masked_fill_(mask, 0.5); },
                                                  [&] { y.copy_(w); },
                                                  [&] { y.fill_(2.0); },
                                                  [&] { y.zero_(); },
                                                  [&] { y.masked_fill_(mask, leaf({}, 21)); },
                                                  [&] { y.fill_(leaf({}, 22)); }};
  uint32_t version = y.version();
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i]();
    EXPECT_EQ(y.version(), ++version) << "op " << i;
  }
}

TEST(InplaceOps, FailedOpsChangeNothing) {
  Tensor y = dev(tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, kFloat64));
  const std::vector<double> before = values(y);
  EXPECT_THROW(y.add_(dev(ones({4}, kFloat64))), ShapeError);
  EXPECT_THROW(y.mul_(dev(ones({3, 2, 3}, kFloat64))), ShapeError);  // would grow self
  EXPECT_THROW(y.copy_(dev(ones({2}, kFloat64))), ShapeError);
  EXPECT_THROW(y.masked_fill_(dev(tensor({1, 0, 1})), 0.0), DTypeError);
  Tensor ints = dev(tensor({1, 2, 3}));
  EXPECT_THROW(ints.mul_(0.5), DTypeError);  // float result into an int tensor
  EXPECT_THROW(ints.exp_(), DTypeError);
  // True division and float clamp bounds give float results: refused before the bump.
  EXPECT_EQ(error_of<DTypeError>([&] { ints.div_(2); }),
            "div_(): result type Float can't be cast to the desired output type Long; convert the "
            "tensor first (x = x.to(kFloat32)) or use the out-of-place op");
  EXPECT_THROW(ints.div_(dev(tensor({2, 2, 2}))), DTypeError);
  EXPECT_THROW(ints.clamp_(0.5, 1.5), DTypeError);
  ints.clamp_(1, 2);  // integer bounds are fine
  EXPECT_EQ(values(ints), (std::vector<double>{1, 2, 2}));
  EXPECT_EQ(ints.version(), 1u);
  EXPECT_THROW(dev(ones({3}, kFloat64)).expand({2, 3}).add_(1.0),
               ValueError);  // overlapping memory
  EXPECT_EQ(y.version(), 0u);
  EXPECT_EQ(ints.version(), 1u);  // only the clamp_ that succeeded
  EXPECT_EQ(values(y), before);
}

TEST(InplaceOps, ForbiddenViewErrorsKeepPyTorchsText) {
  Tensor x = leaf({4}, 23);
  Tensor v;
  {
    NoGradGuard guard;
    v = x.slice(0, 0, 2);
  }
  EXPECT_EQ(error_of([&] { v.mul_(2.0); }),
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You "
            "can clarify your code by moving both the view and the inplace either both inside the "
            "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
            "want the inplace to be tracked).");
  Tensor y = x.clone();
  std::vector<Tensor> parts = y.unbind(0);
  EXPECT_EQ(error_of([&] { parts[0].mul_(2.0); }),
            "Output 0 of UnbindBackward0 is a view and is being modified inplace. This view is the "
            "output of a function that returns multiple views. Such functions do not allow the "
            "output views to be modified inplace. You should replace the inplace operation by an "
            "out-of-place one.");
  y.mul_(2.0);  // the base changes: accessing a multi-output view's grad_fn is now an error
  EXPECT_EQ(error_of([&] { parts[1].grad_fn(); }),
            "Output 1 of UnbindBackward0 is a view and its base or another view of its base has "
            "been modified inplace. This view is the output of a function that returns multiple "
            "views. Such functions do not allow the output views to be modified inplace. You "
            "should replace the inplace operation by an out-of-place one.");
  Tensor z = x.clone();
  Tensor w;
  {
    NoGradGuard guard;
    w = z.slice(0, 0, 2);
  }
  z.mul_(2.0);
  EXPECT_NE(error_of([&] { w.grad_fn(); })
                .find("A view was created in no_grad mode and its base or another view of its "
                      "base has been modified inplace with grad mode enabled."),
            std::string::npos);
}

TEST(InplaceOps, RetainGradFollowsTheNewGradFn) {
  Tensor x = leaf({2}, 24);
  Tensor h = x * 2.0;
  h.retain_grad();
  h.mul_(3.0);
  (h * h).sum().backward();
  expect_close(h.grad(), {2 * values(h)[0], 2 * values(h)[1]});
}

TEST(InplaceOps, SelfAsOperandIsSavedAndReportedStale) {
  // PyTorch behaves the same: y.mul_(y) saves y, which the write then makes stale.
  Tensor y = leaf({2}, 25) * 1.0;
  y.mul_(y);
  EXPECT_THROW(y.sum().backward(), AutogradError);
}

TEST(InplaceOps, OverlappingOperandIsReadBeforeTheWrite) {
  Tensor y = dev(tensor({1.0, 2.0, 3.0, 4.0}, kFloat64));
  y.slice(0, 1, 4).add_(y.slice(0, 0, 3));
  EXPECT_EQ(values(y), (std::vector<double>{1, 3, 5, 7}));
}

}  // namespace
}  // namespace mutagrad
