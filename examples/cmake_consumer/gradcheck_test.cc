// GoogleTest against an installed mutagrad: gradcheck from C++, and a stale saved tensor.
#include <gtest/gtest.h>
#include <mutagrad/mutagrad.h>

using namespace mutagrad;

TEST(InstalledMutagrad, GradcheckPassesForSigmoidTimesInput) {
  Generator gen(7);
  Tensor x = randn({3, 4}, gen, kFloat64).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck(
      [](const autograd::VariableList& in) { return in[0].sigmoid() * in[0]; }, {x}));
}

TEST(InstalledMutagrad, WriteIntoASavedTensorIsCaughtAtBackward) {
  Tensor a = ones({3}, kFloat64).requires_grad_();
  Tensor b = a * 2;
  Tensor y = b.sigmoid();  // saves its output
  y.add_(1);               // ... which is then written
  EXPECT_THROW(y.sum().backward(), Error);
}
