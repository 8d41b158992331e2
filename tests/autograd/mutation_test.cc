// Mutation and autograd together, after PyTorch's test_autograd.py (values from PyTorch 1.13):
// test_version_counter, test_no_grad_modifies_version, test_detach_then_inplace_raises_in_
// autograd, test_inplace_on_view_backprop_base / _backprop_view_of_view / _of_view /
// _saved_output / _non_contig / _gradcheck.
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;
using autograd::VariableList;
using testing_util::dev;
using testing_util::expect_close;
using testing_util::leaf;

Tensor root_2x2() { return dev(arange(4, kFloat64)).view({2, 2}).detach().requires_grad_(); }

TEST(Mutation, VersionCounterIsSharedByViewsAndDetachButNotVariableData) {
  Tensor x = leaf({2, 3}, 1).detach();
  Tensor v = x.select(0, 0);
  Tensor d = x.detach();
  Tensor data = x.variable_data();
  v.add_(1.0);
  EXPECT_EQ(x.version(), 1u);
  EXPECT_EQ(d.version(), 1u);
  d.mul_(2.0);
  EXPECT_EQ(v.version(), 2u);
  data.zero_();
  EXPECT_EQ(data.version(), 1u);
  EXPECT_EQ(x.version(), 2u);  // writes through x.data are not tracked
}

TEST(Mutation, NoGradModifiesVersion) {
  Tensor x = leaf({3}, 2);
  Tensor y = x * x;
  {
    NoGradGuard guard;
    x.mul_(2.0);
  }
  EXPECT_EQ(x.version(), 1u);
  EXPECT_THROW(y.sum().backward(), AutogradError);
}

TEST(Mutation, DetachThenInplaceRaisesInAutograd) {
  Tensor root = root_2x2();
  Tensor b = root.clone().sigmoid();
  b.detach().zero_();
  try {
    b.sum().backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("[torch.DoubleTensor [2, 2]], which is output 0 of "
                                         "SigmoidBackward0, is at version 1; expected version 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(Mutation, InplaceOnViewBackpropBase) {
  Tensor root = root_2x2();
  Tensor x = root.clone();
  x.narrow(0, 0, 1).mul_(2.0);
  x.sum().backward();
  expect_close(root.grad(), {2, 2, 1, 1});
}

TEST(Mutation, InplaceOnViewBackpropViewOfView) {
  Tensor root = root_2x2();
  Tensor x = root.clone();
  Tensor v1 = x.narrow(0, 0, 1);
  Tensor v2 = v1.narrow(1, 1, 1);
  v2.mul_(2.0);
  x.sum().backward();
  expect_close(root.grad(), {1, 2, 1, 1});
}

TEST(Mutation, InplaceOnViewOfView) {
  Tensor root = root_2x2();
  Tensor x = root.clone();
  Tensor v1 = x.narrow(1, 1, 1);
  Tensor v2 = v1.narrow(0, 0, 1);
  v2.mul_(2.0);
  EXPECT_STREQ(v1.grad_fn()->name(), "SliceBackward0");  // narrow replayed on x
  EXPECT_STREQ(x.grad_fn()->name(), "CopySlices");
  v1.sum().backward();
  expect_close(root.grad(), {0, 2, 0, 1});
}

TEST(Mutation, InplaceOnViewSavedOutput) {
  Tensor root = root_2x2();
  Tensor x = root.clone();
  x.select(0, 1).sigmoid_();
  (x * x).sum().backward();
  expect_close(root.grad(), {0, 2, 0.18495608645965972, 0.08606823439185537});
}

TEST(Mutation, InplaceOnViewNonContiguous) {
  Tensor root = root_2x2();
  Tensor x = root.clone();
  x.t().select(0, 0).add_(10.0);
  x.sum().backward();
  expect_close(root.grad(), {1, 1, 1, 1});
  expect_close(x, {10, 1, 12, 3});
}

TEST(Mutation, InplaceOnViewWithDetachedOperand) {
  Tensor root = root_2x2();
  Tensor x = root.clone();
  Tensor v = x.select(0, 0);
  v.mul_(v.detach() + 1.0);
  x.pow(2).sum().backward();
  expect_close(root.grad(), {0, 8, 4, 6});
}

TEST(Mutation, OperandThatIsAViewOfSelfIsStaleAfterTheWrite) {
  // PyTorch raises here too: the operand shares self's version counter.
  Tensor root = root_2x2();
  Tensor x = root.clone();
  x.select(1, 0).mul_(x.select(1, 1));
  EXPECT_THROW(x.sum().backward(), AutogradError);
}

TEST(Mutation, InplaceOnViewGradcheck) {
  auto fn = [](const VariableList& in) {
    Tensor a = in[0].clone();
    Tensor b = in[1].clone();
    a.narrow(1, 1, 2).select(0, 1).mul_(b.select(0, 0).narrow(0, 0, 2));
    a.slice(0, 0, 3, 2).transpose(0, 1).add_(b.t().slice(0, 0, 3));
    return a;
  };
  CHECK_GRADS(fn, {leaf({3, 3}, 3), leaf({2, 3}, 4)});
}

TEST(Mutation, InplaceOnViewThenUseOfTheOldViewHistory) {
  // A saved view read after its base changed in place is stale (sin saves its input); exp
  // saves only its output, which the write did not touch, so it still works.
  Tensor root = root_2x2();
  Tensor x = root.clone();
  Tensor row = x.select(0, 0);
  Tensor y = row.sin();
  Tensor z = row.exp();
  x.select(0, 1).zero_();
  EXPECT_THROW(y.sum().backward(), AutogradError);
  z.sum().backward();
  expect_close(root.grad(), {1, std::exp(1.0), 0, 0});
}

}  // namespace
}  // namespace mutagrad
