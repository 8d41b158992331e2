// The in-place fast paths (tensor/native/scalar_inplace.h): add_/sub_/mul_/div_ with a number
// on float32/float64 give the general path's result bit for bit on every layout, bump once with
// the op and the caller's line, record the same history (gradcheck), refuse what the general
// path refuses with nothing changed, and allocate nothing on the CPU; add_(y, alpha) and
// addcmul_ round float32 once, as torch's fused kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "tensor/small_object_pool.h"
#include "tests/autograd/count_heap.h"
#include "tests/autograd/grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::check_grads;
using testing_util::dev;
using testing_util::error_of;
using testing_util::leaf;
using testing_util::values;

// The general path's result: the number wrapped as a 0-dim tensor of x's dtype.
Tensor reference(BinaryOp op, const Tensor& x, const Scalar& v) {
  return native::binary(op, x, native::wrap_scalar(v, x.dtype(), x.device()));
}

void apply(BinaryOp op, Tensor& x, const Scalar& v) {
  if (op == BinaryOp::kAdd) x.add_(v);
  if (op == BinaryOp::kSub) x.sub_(v);
  if (op == BinaryOp::kMul) x.mul_(v);
  if (op == BinaryOp::kDiv) x.div_(v);
}

TEST(ScalarInplace, SameBitsAsTheGeneralPathOnEveryLayout) {
  const BinaryOp ops[] = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv};
  const Scalar numbers[] = {Scalar(0.1), Scalar(3), Scalar(-1e-7), Scalar(int64_t{1} << 40)};
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{70000}}) {  // 70000: 2 threads
      for (int layout = 0; layout < 3; ++layout) {
        for (BinaryOp op : ops) {
          for (const Scalar& v : numbers) {
            Tensor base = leaf({n, 2}, 1).detach().to(dtype);
            Tensor x = layout == 0 ? base : layout == 1 ? base.t() : base.select(1, 1);
            const Tensor want = reference(op, x, v);
            apply(op, x, v);
            const std::vector<double> got = values(x), expect = values(want);
            ASSERT_EQ(got, expect) << binary_op_name(op) << " " << v << " " << dtype_name(dtype)
                                   << " n=" << n << " layout=" << layout;
          }
        }
      }
    }
  }
  Tensor scalar = dev(tensor(2.5));
  scalar.mul_(4);
  EXPECT_EQ(scalar.item<double>(), 10.0);
  Tensor empty = dev(zeros({0, 3}, TensorOptions(kFloat32)));
  empty.add_(1.0);
  EXPECT_EQ(empty.version(), 1u);  // an empty write still bumps, as every in-place op
}

TEST(ScalarInplace, OneBumpWithOpAndLine) {
  Tensor x = dev(zeros({3}, TensorOptions(kFloat32)));
  const int line = __LINE__ + 1;
  x.mul_(2.0);
  EXPECT_EQ(x.version(), 1u);
  std::optional<MutationSite> site = x.version_counter().site_of_bump(0);
  ASSERT_TRUE(site.has_value());
  EXPECT_STREQ(site->op, "mul_");
  EXPECT_EQ(site->line, line);
  x.sub_(1).div_(4);
  EXPECT_EQ(x.version(), 3u);
  EXPECT_STREQ(x.version_counter().site_of_bump(2)->op, "div_");
}

TEST(ScalarInplace, HistoryAndStaleErrors) {
  Tensor a = leaf({2, 3}, 2);
  check_grads([](const VariableList& in) { return in[0].clone().mul_(3.0).add_(1).div_(-2); }, {a});
  Tensor y = a.clone();
  y.sub_(0.5);
  EXPECT_STREQ(y.grad_fn()->name(), "SubBackward1");
  // A saved tensor made stale by the fast path names it.
  Tensor z = a.sigmoid();
  const int line = __LINE__ + 1;
  z.mul_(2.0);
  const std::string msg = error_of([&] { z.sum().backward(); });
  EXPECT_NE(msg.find("mul_ at tests/autograd/scalar_inplace_ops_test.cc:" + std::to_string(line)),
            std::string::npos)
      << msg;
}

TEST(ScalarInplace, RefusedWritesChangeNothing) {
  Tensor a = leaf({3}, 3);
  EXPECT_NE(error_of([&] { a.add_(1.0); }).find("a leaf Variable that requires grad"),
            std::string::npos);
  EXPECT_EQ(a.version(), 0u);
  Tensor shared = dev(zeros({1}, TensorOptions(kFloat32))).expand({4});
  EXPECT_NE(error_of<Error>([&] { shared.mul_(2.0); }).find("more than one element"),
            std::string::npos);
  EXPECT_EQ(shared.version(), 0u);
  // A bool number is not a fast-path operand: sub_(true) is torch's error (add_(true) adds 1).
  Tensor f = dev(zeros({2}, TensorOptions(kFloat32)));
  EXPECT_NE(error_of<DTypeError>([&] { f.sub_(true); }).find("Subtraction"), std::string::npos);
  EXPECT_EQ(f.version(), 0u);
}

TEST(FusedAdd, Float32RoundsOnceAsTorch) {
  // torch's add_(y, alpha=a) is an FMA: x + a * y rounded once (Note [Torch's fused
  // multiply-adds] in tensor/native/fma.h; fma_ops_test covers every op and layout).
  Tensor x = leaf({1000}, 4).detach().to(kFloat32);
  Tensor y = leaf({1000}, 5).detach().to(kFloat32);
  const std::vector<double> xv = values(x), yv = values(y);
  const float alpha = 0.1f;
  Tensor sum = x.clone();
  sum.add_(y, 0.1);
  Tensor diff = x.clone();
  diff.sub_(y, 0.1);
  const std::vector<double> sv = values(sum), dv = values(diff);
  int rounded_twice_differs = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const float xf = static_cast<float>(xv[i]), yf = static_cast<float>(yv[i]);
    const float want_sum = std::fma(alpha, yf, xf);
    EXPECT_EQ(sv[i], want_sum) << i;
    EXPECT_EQ(dv[i], std::fma(-alpha, yf, xf)) << i;
    const float twice = xf + alpha * yf;  // two roundings
    rounded_twice_differs += twice != want_sum;
  }
  EXPECT_GT(rounded_twice_differs, 0);  // the reference can tell the two apart
  EXPECT_EQ(sum.version(), 1u);
  EXPECT_STREQ(sum.version_counter().site_of_bump(0)->op, "add_");
  // Gradients and refused writes are the general path's.
  Tensor a = leaf({4}, 6);
  Tensor b = leaf({4}, 7);
  check_grads([](const VariableList& in) { return in[0].clone().add_(in[1], -2.5); }, {a, b});
  EXPECT_NE(error_of([&] { a.add_(b.detach(), 2.0); }).find("a leaf Variable"), std::string::npos);
  EXPECT_EQ(a.version(), 0u);
}

TEST(FusedAdd, AddcmulAndAddcdivInPlaceEqualOutOfPlace) {
  // The in-place kernel and the out-of-place composite (autograd/ops/ternary_ops.cc) round the
  // same way: float32 as torch's FMA, float64 per op.
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    Tensor x = leaf({1000}, 8).detach().to(dtype);
    Tensor a = leaf({1000}, 9).detach().to(dtype);
    Tensor b = leaf({1000}, 10).detach().to(dtype);
    const Tensor want = addcmul(x, a, b, 0.001);
    Tensor got = x.clone();
    got.addcmul_(a, b, 0.001);
    EXPECT_EQ(values(got), values(want)) << dtype_name(dtype);
    Tensor self_operand = x.clone();
    const Tensor want_self = addcmul(self_operand, self_operand, b, 0.3);
    self_operand.addcmul_(self_operand, b, 0.3);  // t1 is self: read before written
    EXPECT_EQ(values(self_operand), values(want_self)) << dtype_name(dtype);
    const Tensor d = leaf({1000}, 11, 0.5, 2.0).detach().to(dtype);
    const Tensor want_div = addcdiv(x, a, d, -0.01);
    Tensor got_div = x.clone();
    got_div.addcdiv_(a, d, -0.01);
    EXPECT_EQ(values(got_div), values(want_div)) << dtype_name(dtype);
  }
}

TEST(ScalarInplace, AllocatesNothingOnTheCpu) {
  if (!testing_device::test_device().is_cpu()) GTEST_SKIP() << "allocation count: CPU only";
  Tensor tiny = zeros({1}, TensorOptions(kFloat32));
  Tensor k = zeros({1000}, TensorOptions(kFloat64));
  Tensor k2 = ones({1000}, TensorOptions(kFloat64));
  tiny.add_(1.0);  // warm-up (first-use statics)
  const int64_t before = testing_util::heap_news();
  for (int i = 0; i < 100; ++i) {
    tiny.add_(2.0);
    tiny.mul_(0.5);
    k.sub_(1);
    k.div_(3.0);
    k.add_(k2, 0.25);  // the fused add with alpha
    k.addcmul_(k2, k2, 0.5);
    k.addcdiv_(k2, k2, 0.5);
  }
  EXPECT_EQ(testing_util::heap_news() - before, 0);
  EXPECT_EQ(tiny.version(), 201u);
  // The general path (an int64 tensor) allocates, with the small-object pool off (on, its
  // steady state allocates nothing either: tiny_op_allocations_test): the counter would see it.
  Tensor i = zeros({1}, TensorOptions(kInt64));
  const bool pooled = small_object_pool_enabled();
  set_small_object_pool_enabled(false);
  const int64_t general = testing_util::heap_news();
  i.add_(1);
  EXPECT_GT(testing_util::heap_news() - general, 0);
  set_small_object_pool_enabled(pooled);
}

}  // namespace
}  // namespace mutagrad
