// matmul in every shape combination: gradcheck and gradgradcheck at both positions.
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::strided_leaf;

const autograd::TensorFunction kMatmul = [](const VariableList& in) { return in[0].matmul(in[1]); };

TEST(LinalgOps, MatrixTimesMatrix) {
  CHECK_GRADS(kMatmul, {leaf({2, 3}, 1), leaf({3, 4}, 2)});
  CHECK_GRADS(kMatmul, {strided_leaf({2, 3}, 3), strided_leaf({3, 4}, 4)});
  CHECK_GRADS(kMatmul, {leaf({2, 3}, 5), leaf({3, 4}, 6).detach()});
  CHECK_GRADS(kMatmul, {leaf({2, 3}, 7).detach(), leaf({3, 4}, 8)});
}

TEST(LinalgOps, Vectors) {
  CHECK_GRADS(kMatmul, {leaf({3}, 9), leaf({3}, 10)});         // dot
  CHECK_GRADS(kMatmul, {leaf({2, 3}, 11), leaf({3}, 12)});     // matrix @ vector
  CHECK_GRADS(kMatmul, {leaf({3}, 13), leaf({3, 2}, 14)});     // vector @ matrix
  CHECK_GRADS(kMatmul, {leaf({3}, 15), leaf({2, 3, 2}, 16)});  // vector @ batch
  CHECK_GRADS(kMatmul, {leaf({2, 2, 3}, 17), leaf({3}, 18)});  // batch @ vector
}

TEST(LinalgOps, BatchedAndBroadcast) {
  CHECK_GRADS(kMatmul, {leaf({2, 2, 3}, 19), leaf({2, 3, 2}, 20)});
  CHECK_GRADS(kMatmul, {leaf({2, 2, 3}, 21), leaf({3, 2}, 22)});
  CHECK_GRADS(kMatmul, {leaf({2, 3}, 23), leaf({2, 1, 3, 2}, 24)});
  CHECK_GRADS(kMatmul, {strided_leaf({3, 2, 2}, 25), leaf({1, 2, 3}, 26)});
}

TEST(LinalgOps, HandDerivedAndNames) {
  Tensor a = dev(tensor({{1.0, 2.0}, {3.0, 4.0}}, kFloat64)).requires_grad_();
  Tensor b = dev(tensor({{5.0}, {6.0}}, kFloat64)).requires_grad_();
  Tensor c = a.matmul(b);
  EXPECT_STREQ(c.grad_fn()->name(), "MmBackward0");
  c.sum().backward();
  expect_close(a.grad(), {5, 6, 5, 6});
  expect_close(b.grad(), {4, 6});
  EXPECT_STREQ(a.matmul(dev(tensor({1.0, 1.0}, kFloat64))).grad_fn()->name(), "MatmulBackward0");
}

}  // namespace
}  // namespace mutagrad
