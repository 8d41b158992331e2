// clamp_ with tensor bounds (autograd/ops/clamp_ops.h): one tracked write with ClampBackward0,
// gradients by gradcheck/gradgradcheck, CopySlices through a view, refusals that change nothing.
// Runs on the CPU and, as :clamp_inplace_ops_test_cuda, on the host-run CUDA device.
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::error_of;
using testing_util::leaf;
using testing_util::values;

Tensor vec(const std::vector<double>& v) {
  return dev(from_vector<double>(v, {static_cast<int64_t>(v.size())}));
}

TEST(ClampInPlace, ValuesOneBumpAndNode) {
  Tensor y = vec({-2, 0.5, 3, 1.5});
  clamp_(y, vec({-1, 1, 0, 2}), vec({0, 2, 2, 1}));
  EXPECT_EQ(values(y), std::vector<double>({-1, 1, 2, 1}));  // lo > hi gives hi, as torch
  EXPECT_EQ(y.version(), 1u);
  Tensor z = leaf({4}, 1).clone();
  clamp_(z, Tensor(), vec({0, 0, 0, 0}));
  EXPECT_STREQ(z.grad_fn()->name(), "ClampBackward0");
  EXPECT_EQ(z.version(), 1u);
}

TEST(ClampInPlace, Gradients) {
  // Bounds away from the values, so the numeric derivative does not straddle a kink.
  Tensor x = dev(from_vector<double>({-2, 0.5, 3, 1.5}, {4})).requires_grad_();
  Tensor lo = dev(from_vector<double>({-1, 1, 0, 2.5}, {4})).requires_grad_();
  Tensor hi = dev(from_vector<double>({0, 2, 2, 1}, {4})).requires_grad_();
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 1.0;
        clamp_(y, in[1], in[2]);
        return y;
      },
      {x, lo, hi});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 1.0;
        clamp_(y, in[1], Tensor());
        return y;
      },
      {x, lo});
}

TEST(ClampInPlace, ThroughAView) {
  Tensor x = leaf({2, 2}, 2);
  Tensor base = x.clone();
  Tensor row = base.select(0, 1);
  clamp_(row, vec({2.0}), Tensor());
  EXPECT_STREQ(base.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(base.version(), 1u);
  base.sum().backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>({1, 1, 0, 0}));  // row 1 clamped to 2
}

TEST(ClampInPlace, RefusalsChangeNothing) {
  Tensor y = vec({1, 2, 3});
  EXPECT_NE(error_of<ShapeError>([&] {
              clamp_(y, dev(zeros({2, 3}, kFloat64)), Tensor());
            }).find("broadcast shape"),
            std::string::npos);
  Tensor ints = dev(from_vector<int64_t>({1, 2, 3}, {3}));
  EXPECT_NE(error_of<DTypeError>([&] { clamp_(ints, vec({1.5}), Tensor()); }).find("can't be cast"),
            std::string::npos);
  EXPECT_THROW(clamp_(y, Tensor(), Tensor()), ValueError);
  EXPECT_EQ(values(y), std::vector<double>({1, 2, 3}));
  EXPECT_EQ(y.version(), 0u);
  EXPECT_EQ(ints.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
