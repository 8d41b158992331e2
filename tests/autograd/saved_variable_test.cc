// SavedVariable: the staleness error (PyTorch's text plus the write's op and file:line and the
// node that needed the tensor), and no reference cycle through saved outputs.
#include "autograd/saved_variable.h"

#include "autograd/history.h"
#include "autograd/tensor_names.h"
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::dev;

using autograd::AutogradError;
using testing_util::leaf;

std::string backward_error(const Tensor& loss) {
  try {
    loss.backward();
  } catch (const AutogradError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(SavedVariable, StaleSavedOutputNamesTheWriteAndTheNode) {
  Tensor x = dev(tensor({1.0f, 2.0f, 3.0f})).requires_grad_();
  Tensor y = x.sigmoid();
  const int line = __LINE__ + 1;
  y.mul_(2.0);
  const std::string msg = backward_error(y.sum());
  EXPECT_EQ(msg.rfind("one of the variables needed for gradient computation has been modified by "
                      "an inplace operation: [torch.FloatTensor [3]], which is output 0 of "
                      "SigmoidBackward0, is at version 1; expected version 0 instead.",
                      0),
            0u)
      << msg;
  EXPECT_TRUE(contains(msg, "The first in-place write after it was saved is mul_ at " +
                                std::string(__FILE__) + ":" + std::to_string(line) + "."))
      << msg;
  EXPECT_TRUE(contains(msg, "SigmoidBackward0 saved it and needs it to compute gradients.")) << msg;
  EXPECT_TRUE(contains(msg, "Hint:")) << msg;
}

TEST(SavedVariable, StaleSavedInputOfANonLeaf) {
  Tensor x = leaf({2}, 1);
  Tensor w = leaf({2}, 2);
  Tensor h = x * 1.0;
  Tensor z = h * w;  // MulBackward0 saves h (and w)
  h.add_(1.0);
  const std::string msg = backward_error(z.sum());
  EXPECT_TRUE(contains(msg,
                       "[torch.DoubleTensor [2]], which is output 0 of AddBackward1, is at "
                       "version 1; expected version 0 instead."))
      << msg;
  EXPECT_TRUE(contains(msg, "is add_ at ")) << msg;
  EXPECT_TRUE(contains(msg, "MulBackward0 saved it")) << msg;
}

TEST(SavedVariable, StaleLeafModifiedUnderNoGrad) {
  Tensor x = leaf({2}, 3);
  Tensor z = x * x;
  {
    NoGradGuard guard;
    x.zero_();
    x.add_(1.0);
  }
  const std::string msg = backward_error(z.sum());
  // A leaf has no creator: no "which is output ..." part; the FIRST write after the save is named.
  EXPECT_TRUE(contains(msg,
                       "[torch.DoubleTensor [2]] is at version 2; expected version 0 "
                       "instead. The first in-place write after it was saved is zero_ at "))
      << msg;
}

TEST(SavedVariable, WritesThroughAnotherViewAlsoInvalidate) {
  Tensor x = leaf({2, 2}, 4);
  Tensor y = x * 1.0;
  Tensor z = y.exp();  // saves its result
  z.select(0, 1).fill_(0.0);
  const std::string msg = backward_error(y.sum() + z.sum());
  EXPECT_TRUE(contains(msg, "is fill_ at ")) << msg;
  EXPECT_TRUE(contains(msg, "ExpBackward0 saved it")) << msg;
}

TEST(SavedVariable, TooManyWritesAgoIsSaidPlainly) {
  Tensor x = leaf({2}, 5);
  Tensor h = x * 1.0;
  Tensor z = h.tanh();
  for (int i = 0; i < 9; ++i) z.mul_(1.0);
  const std::string msg = backward_error(z.sum());
  EXPECT_TRUE(contains(msg, "is at version 9; expected version 0 instead.")) << msg;
  EXPECT_TRUE(contains(msg, "too old to be remembered")) << msg;
}

TEST(SavedVariable, SavedLeafIsAnAliasThatAccumulatesIntoTheLeaf) {
  Tensor x = leaf({3}, 9);
  autograd::Edge edge = autograd::gradient_edge(x);  // as the saving node's edge keeps it alive
  autograd::SavedVariable saved(x, /*is_output=*/false);
  Tensor unpacked = saved.unpack(nullptr);
  EXPECT_FALSE(unpacked.is_same(x));  // not the leaf's handle: no cycle through x.grad()
  EXPECT_TRUE(unpacked.is_alias_of(x));
  ASSERT_TRUE(unpacked.requires_grad());
  (unpacked * 2.0).sum().backward();
  testing_util::expect_close(x.grad(), {2, 2, 2});
  NoGradGuard guard;
  EXPECT_FALSE(saved.unpack(nullptr).requires_grad());
}

TEST(SavedVariable, UnpackReturnsTheSavedTensorWhenNothingChanged) {
  Tensor t = leaf({3}, 6) * 1.0;
  autograd::SavedVariable saved(t, /*is_output=*/false);
  EXPECT_TRUE(saved.unpack(nullptr).is_same(t));
  EXPECT_EQ(saved.saved_version(), 0u);
  saved.reset_data();
  EXPECT_TRUE(saved.is_released());
  EXPECT_THROW(saved.unpack(nullptr), AutogradError);
  EXPECT_FALSE(autograd::SavedVariable().unpack(nullptr).defined());
}

TEST(SavedVariable, SavedOutputDoesNotKeepItsNodeAlive) {
  std::weak_ptr<autograd::Node> node;
  std::weak_ptr<TensorImpl> output;
  {
    Tensor x = leaf({3}, 7);
    Tensor y = x.exp();  // ExpBackward0 saves y itself
    node = y.grad_fn();
    output = y.impl_ptr();
    EXPECT_FALSE(node.expired());
  }
  EXPECT_TRUE(node.expired());
  EXPECT_TRUE(output.expired());
}

TEST(SavedVariable, GraphIsFreedWithItsLastTensor) {
  std::weak_ptr<autograd::Node> first;
  std::weak_ptr<autograd::Node> last;
  {
    Tensor x = leaf({3}, 8);
    Tensor y = x.sigmoid();
    first = y.grad_fn();
    for (int i = 0; i < 10; ++i) y = y.tanh() * y;
    last = y.grad_fn();
    Tensor g = autograd::grad({y.sum()}, {x}, {}, true, /*create_graph=*/true)[0];
    EXPECT_TRUE(g.requires_grad());
  }
  EXPECT_TRUE(first.expired());
  EXPECT_TRUE(last.expired());
}

// Note [Tensor names]: the name given to a tensor (nn.Module's parameter paths) appears in the
// stale error for the tensor and for its views, and never for another tensor.
TEST(SavedVariable, StaleErrorShowsTheTensorsName) {
  Tensor w = dev(tensor({{1.0f, 2.0f}, {3.0f, 4.0f}})).requires_grad_();
  autograd::set_tensor_name(w, "fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w), "fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w.t()), "a view of fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w.detach()), "fc1.weight");  // same memory and geometry
  EXPECT_EQ(autograd::tensor_name_of(w.select(0, 1)), "a view of fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w.clone()), std::nullopt);
  Tensor x = dev(tensor({{1.0f, 1.0f}})).requires_grad_();
  Tensor direct = (w * w).sum();                // saves w itself
  Tensor through_view = x.matmul(w.t()).sum();  // saves w.t()
  {
    NoGradGuard no_grad;
    w.mul_(2.0);
  }
  EXPECT_TRUE(contains(backward_error(direct), "[torch.FloatTensor [2, 2]] (fc1.weight) is at"))
      << backward_error(direct);
  EXPECT_TRUE(contains(backward_error(through_view),
                       "[torch.FloatTensor [2, 2]] (a view of fc1.weight), which is output 0"))
      << backward_error(through_view);
  // Renaming replaces the name; an empty name removes it.
  autograd::set_tensor_name(w, "encoder.fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w), "encoder.fc1.weight");
  autograd::set_tensor_name(w, "");
  EXPECT_EQ(autograd::tensor_name_of(w), std::nullopt);
}

TEST(SavedVariable, NameOfADeadTensorIsNeverShown) {
  for (int i = 0; i < 100; ++i) {  // counters reuse addresses: a dead name must not leak
    {
      Tensor named = dev(zeros({2}));
      autograd::set_tensor_name(named, "gone");
    }
    Tensor other = dev(zeros({2}));
    EXPECT_EQ(autograd::tensor_name_of(other), std::nullopt);
  }
}

}  // namespace
}  // namespace mutagrad
