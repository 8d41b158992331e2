// The error catalogue of docs/mutation-semantics.md: each example raises the documented type
// with the documented message (and, for in-place ops, leaves the version unchanged).
#include <string>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::dev;

using autograd::AutogradError;
using testing_util::error_of;

Tensor leaf2() { return dev(tensor({1.0, 2.0}, kFloat64)).requires_grad_(); }

TEST(MutationDocs, E1LeafRequiringGrad) {
  Tensor a = leaf2();
  EXPECT_EQ(error_of<AutogradError>([&] { a.add_(1.0); }),
            "a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_EQ(a.version(), 0u);
}

TEST(MutationDocs, E2ViewOfLeaf) {
  Tensor a = leaf2();
  EXPECT_EQ(error_of<AutogradError>([&] { a.narrow(0, 0, 1).mul_(2.0); }),
            "a view of a leaf Variable that requires grad is being used in an in-place "
            "operation.");
}

TEST(MutationDocs, E3NoGradView) {
  Tensor a = leaf2();
  Tensor x = a * 1.0;
  Tensor v;
  {
    NoGradGuard g;
    v = x.narrow(0, 0, 1);
  }
  EXPECT_EQ(error_of<AutogradError>([&] { v.mul_(a.narrow(0, 0, 1)); }),
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
            "You can clarify your code by moving both the view and the inplace either both "
            "inside the no_grad block (if you don't want the inplace to be tracked) or both "
            "outside (if you want the inplace to be tracked).");
}

TEST(MutationDocs, E4MultiOutputView) {
  Tensor a = leaf2();
  Tensor x = a.view({2, 1}) * 1.0;
  EXPECT_EQ(error_of<AutogradError>([&] { x.unbind(0)[0].mul_(2.0); }),
            "Output 0 of UnbindBackward0 is a view and is being modified inplace. This view is "
            "the output of a function that returns multiple views. Such functions do not allow "
            "the output views to be modified inplace. You should replace the inplace operation "
            "by an out-of-place one.");
}

TEST(MutationDocs, E5StaleSavedTensor) {
  Tensor a = leaf2();
  Tensor h = a.exp();
  Tensor y = (h * 3.0).sum();
  h.add_(1.0);
  const int line = __LINE__ - 1;
  EXPECT_EQ(error_of<AutogradError>([&] { y.backward(); }),
            std::string("one of the variables needed for gradient computation has been modified "
                        "by an inplace operation: [torch.DoubleTensor [2]], which is output 0 of "
                        "ExpBackward0, is at version 1; expected version 0 instead. The first "
                        "in-place write after it was saved is add_ at ") +
                __FILE__ + ":" + std::to_string(line) +
                ". ExpBackward0 saved it and needs it to compute gradients. Hint: the write "
                "above changed a tensor that backward needs; use the out-of-place op instead "
                "(e.g. mul instead of mul_), or write into a clone() of the tensor.");
}

TEST(MutationDocs, E6BackwardTwice) {
  Tensor a = leaf2();
  Tensor y = (a * a).sum();
  y.backward();
  EXPECT_EQ(error_of<AutogradError>([&] { y.backward(); }), autograd::kBackwardTwiceMessage);
}

TEST(MutationDocs, E7ValidationErrors) {
  Tensor x = dev(zeros({1}, kFloat64)).expand({3});
  EXPECT_EQ(error_of<ValueError>([&] { x.add_(1.0); }),
            "add_(): unsupported operation: more than one element of the written-to tensor "
            "refers to a single memory location. Please clone() the tensor before performing "
            "the operation.");
  EXPECT_EQ(x.version(), 0u);
  Tensor i = dev(tensor({1, 2}));
  EXPECT_EQ(error_of<DTypeError>([&] { i.mul_(0.5); }),
            "mul_(): result type Float can't be cast to the desired output type Long; convert "
            "the tensor first (x = x.to(kFloat32)) or use the out-of-place op");
  EXPECT_EQ(i.version(), 0u);
  Tensor z = dev(zeros({3}));
  EXPECT_EQ(error_of<ShapeError>([&] {
              z.add_(dev(zeros({2, 3})));
            }),
            "add_(): output with shape [3] doesn't match the broadcast shape [2, 3]; an in-place "
            "op cannot change its tensor's shape, use the out-of-place op");
  EXPECT_EQ(z.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
