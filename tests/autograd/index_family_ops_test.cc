// index_select, index_add_, index_copy_, index_fill_ (and out-of-place forms): values against a
// naive loop in index order, gradcheck + gradgradcheck at every differentiable argument (also
// on a view of a non-leaf), PyTorch's node names, one version bump with the call site, and
// refused writes that change nothing. Runs on the CPU and, as index_family_ops_test_cuda, on
// the CUDA device.
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::error_of;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

Tensor idx(const std::vector<int64_t>& v) {
  return dev(from_vector(v, {static_cast<int64_t>(v.size())}));
}

TEST(IndexFamilyOps, IndexAddSumsDuplicatesInIndexOrderAsANaiveLoop) {
  // float32 values whose sum depends on the order: the kernel must add in index order.
  Generator gen(3);
  const std::vector<int64_t> where = {2, 0, 2, 2, 1, 0, 2};
  Tensor src = dev(randn({7, 3}, gen, kFloat32) * 1e4);
  Tensor x = dev(randn({4, 3}, gen, kFloat32));
  const std::vector<double> start = values(x);
  std::vector<float> want(start.begin(), start.end());
  const std::vector<double> s = values(src);
  for (size_t i = 0; i < where.size(); ++i) {
    for (int64_t c = 0; c < 3; ++c) {
      float& dst = want[static_cast<size_t>(where[i] * 3 + c)];
      dst = dst + static_cast<float>(s[i * 3 + static_cast<size_t>(c)]) * 2.0f;
    }
  }
  x.index_add_(0, idx(where), src, 2);
  const std::vector<double> got = values(x);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(static_cast<float>(got[i]), want[i]) << i;
  EXPECT_EQ(x.version(), 1u);
}

TEST(IndexFamilyOps, IndexCopyKeepsTheLastDuplicateAndFillAndSelect) {
  Tensor x = dev(zeros({3, 4}, kFloat64));
  Tensor src = dev(arange(9, kFloat64).view({3, 3}));
  x.index_copy_(1, idx({3, 0, 3}), src);  // column 3 gets src[:, 2], the last
  EXPECT_EQ(values(x), (std::vector<double>{1, 0, 0, 2, 4, 0, 0, 5, 7, 0, 0, 8}));
  x.index_fill_(0, idx({-1}), 7);
  EXPECT_EQ(values(x.index_select(0, idx({2, 0}))), (std::vector<double>{7, 7, 7, 7, 1, 0, 0, 2}));
  EXPECT_EQ(values(x.index_select(1, dev(full({}, 3, kInt64)))), (std::vector<double>{2, 5, 7}));
  EXPECT_EQ(x.index_select(1, dev(full({}, 3, kInt64))).sizes().vec(),
            (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(x.version(), 2u);
}

TEST(IndexFamilyOps, GradientsAtEveryArgument) {
  Tensor index = idx({1, 0, 1, 3});
  CHECK_GRADS([index](const VariableList& in) { return in[0].index_select(1, index); },
              {strided_leaf({3, 4}, 1)});
  CHECK_GRADS([index](const VariableList& in) { return in[0].index_add(0, index, in[1], 2.5); },
              {leaf({5, 2}, 2), leaf({4, 2}, 3)});
  Tensor unique = idx({2, 0, 4});
  CHECK_GRADS([unique](const VariableList& in) { return in[0].index_copy(0, unique, in[1]); },
              {leaf({5, 2}, 4), strided_leaf({3, 2}, 5)});
  CHECK_GRADS([index](const VariableList& in) { return in[0].index_fill(1, index, -1.5); },
              {leaf({2, 4}, 6)});
  // A 0-dim tensor value (IndexFillBackward1): its gradient counts each filled element once,
  // however often the index repeats it.
  CHECK_GRADS([index](const VariableList& in) { return in[0].index_fill(1, index, in[1]); },
              {leaf({2, 4}, 6), leaf({}, 7)});
  Tensor v = leaf({}, 8);
  Tensor y = leaf({2, 4}, 9).index_fill(1, index, v);
  EXPECT_STREQ(y.grad_fn()->name(), "IndexFillBackward1");
  y.sum().backward();
  EXPECT_EQ(values(v.grad()), std::vector<double>{6.0});  // 2 rows x 3 distinct columns
}

TEST(IndexFamilyOps, InPlaceWritesIntoViewsOfNonLeavesAreDifferentiable) {
  Tensor index = idx({0, 2, 0});
  CHECK_GRADS(
      [index](const VariableList& in) {
        Tensor h = in[0] * 1.0;
        h.narrow(1, 1, 3).index_add_(1, index, in[1]);
        return h;
      },
      {leaf({2, 5}, 7), leaf({2, 3}, 8)});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor h = in[0] * 1.0;
        h.select(0, 1).index_fill_(0, idx({1, 3}), 0.25);
        return h * h;
      },
      {leaf({3, 4}, 9)});
}

TEST(IndexFamilyOps, DuplicateCopyCreditsOnlyTheWinner) {
  // PyTorch credits both occurrences of index 1; only the last was written.
  Tensor x = dev(zeros({3}, kFloat64)).requires_grad_();
  Tensor src = dev(tensor({10.0, 20.0, 30.0}, kFloat64)).requires_grad_();
  Tensor y = x.index_copy(0, idx({1, 2, 1}), src);
  EXPECT_EQ(values(y), (std::vector<double>{0, 30, 20}));
  (y * dev(tensor({1.0, 2.0, 3.0}, kFloat64))).sum().backward();
  EXPECT_EQ(values(src.grad()), (std::vector<double>{0, 3, 2}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 0, 0}));
}

TEST(IndexFamilyOps, NodeNamesArePyTorchs) {
  Tensor x = leaf({3, 2}, 10);
  Tensor s = leaf({2, 2}, 11);
  Tensor i = idx({2, 0});
  EXPECT_STREQ(x.index_select(0, i).grad_fn()->name(), "IndexSelectBackward0");
  EXPECT_STREQ(x.index_add(0, i, s).grad_fn()->name(), "IndexAddBackward0");
  EXPECT_STREQ(x.index_copy(0, i, s).grad_fn()->name(), "IndexCopyBackward0");
  EXPECT_STREQ(x.index_fill(0, i, 1).grad_fn()->name(), "IndexFillBackward0");
  Tensor h = x * 2.0;
  h.index_add_(0, i, s);
  EXPECT_STREQ(h.grad_fn()->name(), "IndexAddBackward0");
}

TEST(IndexFamilyOps, StaleSavedTensorNamesTheWrite) {
  Tensor x = leaf({3}, 12);
  Tensor y = x.exp();
  Tensor z = y * y;  // saves y
  y.index_fill_(0, idx({0}), 1.0);
  const std::string message = error_of([&] { z.sum().backward(); });
  EXPECT_NE(message.find("index_fill_"), std::string::npos) << message;
  EXPECT_NE(message.find("index_family_ops_test.cc"), std::string::npos) << message;
}

TEST(IndexFamilyOps, RefusedWritesChangeNothing) {
  Tensor x = dev(arange(6, kFloat64).view({2, 3}));
  const std::vector<double> before = values(x);
  Tensor src = dev(ones({2, 2}, kFloat64));
  EXPECT_THROW(x.index_add_(1, idx({0, 3}), src), IndexError);                  // out of range
  EXPECT_THROW(x.index_add_(1, idx({0, 1, 2}), src), ShapeError);               // source's dim 1
  EXPECT_THROW(x.index_copy_(1, idx({0, 1}), src.to(kFloat32)), DTypeError);    // dtype
  EXPECT_THROW(x.index_fill_(2, idx({0}), 1.0), IndexError);                    // dim
  EXPECT_THROW(x.index_fill_(0, dev(zeros({1, 1}, kInt64)), 1.0), ShapeError);  // not a vector
  EXPECT_THROW(x.index_fill_(0, dev(zeros({1}, kFloat32)), 1.0), IndexError);   // index dtype
  EXPECT_THROW(dev(zeros({2}, kInt32)).index_fill_(0, idx({0}), 1e10), ValueError);  // value
  EXPECT_THROW(dev(zeros({2, 2}, kInt64)).index_add_(1, idx({0, 1}), src.to(kInt64), 1.5),
               DTypeError);  // a floating alpha for integers
  EXPECT_EQ(values(x), before);
  EXPECT_EQ(x.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
