// Views: gradcheck and gradgradcheck for every view op (including as_strided, expand and the
// multi-output views), node names, view tracking (bases, creation modes).
#include "autograd/autograd_meta.h"
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::strided_leaf;

std::vector<Tensor> inputs(IntArrayRef sizes, uint64_t seed) {
  return {leaf(sizes, seed), strided_leaf(sizes, seed + 1)};
}

TEST(ViewOps, SelectSliceNarrow) {
  for (const Tensor& x : inputs({3, 4}, 1)) {
    CHECK_GRADS([](const VariableList& in) { return in[0].select(0, 1); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].select(1, -1); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].slice(1, 1, 4, 2); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].slice(0, -2, std::nullopt); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].narrow(1, 1, 2); }, {x});
  }
}

TEST(ViewOps, PermuteTransposeT) {
  for (const Tensor& x : inputs({2, 3, 2}, 3)) {
    CHECK_GRADS([](const VariableList& in) { return in[0].permute({2, 0, 1}); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].transpose(0, -1); }, {x});
  }
  CHECK_GRADS([](const VariableList& in) { return in[0].t(); }, {leaf({2, 3}, 5)});
  CHECK_GRADS([](const VariableList& in) { return in[0].t(); }, {leaf({3}, 6)});
}

TEST(ViewOps, ExpandUnsqueezeSqueeze) {
  CHECK_GRADS([](const VariableList& in) { return in[0].expand({2, 3, 4}); }, {leaf({3, 1}, 7)});
  CHECK_GRADS(
      [](const VariableList& in) {
        return in[0].expand({-1, 2});
      },
      {strided_leaf({3, 1}, 8)});
  CHECK_GRADS([](const VariableList& in) { return in[0].expand_as(in[1]); },
              {leaf({1, 3}, 9), dev(zeros({2, 3}, kFloat64))});
  CHECK_GRADS([](const VariableList& in) { return in[0].unsqueeze(1); }, {leaf({2, 3}, 10)});
  CHECK_GRADS([](const VariableList& in) { return in[0].unsqueeze(-1); },
              {strided_leaf({2, 3}, 11)});
  CHECK_GRADS([](const VariableList& in) { return in[0].squeeze(); }, {leaf({2, 1, 3, 1}, 12)});
  CHECK_GRADS([](const VariableList& in) { return in[0].squeeze(1); }, {leaf({2, 1, 3}, 13)});
  CHECK_GRADS([](const VariableList& in) { return in[0].squeeze(0); }, {leaf({2, 1, 3}, 14)});
}

TEST(ViewOps, ViewReshapeFlatten) {
  CHECK_GRADS([](const VariableList& in) { return in[0].view({3, 2}); }, {leaf({2, 3}, 15)});
  CHECK_GRADS([](const VariableList& in) { return in[0].view({-1}); }, {leaf({2, 3}, 16)});
  CHECK_GRADS([](const VariableList& in) { return in[0].reshape({6}); }, {leaf({2, 3}, 17)});
  // A strided input cannot be viewed: reshape copies (CloneBackward0 + UnsafeViewBackward0).
  CHECK_GRADS([](const VariableList& in) { return in[0].reshape({6}); },
              {strided_leaf({2, 3}, 18)});
  CHECK_GRADS([](const VariableList& in) { return in[0].flatten(); },
              {strided_leaf({2, 3, 2}, 19)});
  CHECK_GRADS([](const VariableList& in) { return in[0].flatten(1); }, {leaf({2, 3, 2}, 20)});
}

TEST(ViewOps, Diagonal) {
  for (const Tensor& x : inputs({3, 4}, 21)) {
    CHECK_GRADS([](const VariableList& in) { return in[0].diagonal(); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].diagonal(1); }, {x});
    CHECK_GRADS([](const VariableList& in) { return in[0].diagonal(-1, 1, 0); }, {x});
  }
  CHECK_GRADS([](const VariableList& in) { return in[0].diagonal(0, 0, 2); },
              {leaf({2, 3, 2}, 23)});
}

TEST(ViewOps, AsStrided) {
  Tensor x = leaf({3, 4}, 24);
  CHECK_GRADS([](const VariableList& in) { return in[0].as_strided({2, 2}, {4, 1}, 1); }, {x});
  CHECK_GRADS([](const VariableList& in) { return in[0].as_strided({3}, {5}); }, {x});
  // Elements of the view overlap (the same memory read twice): gradients add up.
  CHECK_GRADS([](const VariableList& in) { return in[0].as_strided({3, 3}, {1, 1}); }, {x});
  CHECK_GRADS([](const VariableList& in) { return in[0].as_strided({2, 3}, {0, 2}, 2); }, {x});
  // A view of a view: offsets are absolute in the storage.
  CHECK_GRADS([](const VariableList& in) { return in[0].select(0, 1).as_strided({2}, {2}, 5); },
              {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        return in[0].as_strided({2, 2}, {1, 3}, 1);
      },
      {strided_leaf({3, 4}, 25)});
  Tensor y = dev(tensor({1.0, 2.0, 3.0}, kFloat64)).requires_grad_();
  y.as_strided({2, 2}, {1, 1}).sum().backward();  // reads y[0], y[1], y[1], y[2]
  expect_close(y.grad(), {1, 2, 1});
}

TEST(ViewOps, Alias) {
  CHECK_GRADS([](const VariableList& in) { return in[0].alias(); }, {strided_leaf({2, 3}, 26)});
}

TEST(ViewOps, MultiOutputViews) {
  Tensor x = leaf({4, 3}, 27);
  CHECK_GRADS([](const VariableList& in) { return in[0].unbind(0); }, {x});
  CHECK_GRADS([](const VariableList& in) { return in[0].unbind(1)[2]; }, {x});  // 2 outputs unused
  CHECK_GRADS([](const VariableList& in) { return in[0].split(3, 0); }, {x});
  CHECK_GRADS([](const VariableList& in) { return in[0].split(2, 1)[1]; },
              {strided_leaf({4, 3}, 28)});
  CHECK_GRADS([](const VariableList& in) { return in[0].split_with_sizes({1, 3}, 0); }, {x});
  CHECK_GRADS([](const VariableList& in) { return in[0].chunk(2, 0)[0] * 2.0; }, {x});
  EXPECT_STREQ(x.unbind(0)[1].grad_fn()->name(), "UnbindBackward0");
  EXPECT_EQ(x.unbind(0)[1].output_nr(), 1u);
  EXPECT_STREQ(x.split(2)[0].grad_fn()->name(), "SplitBackward0");
  EXPECT_STREQ(x.chunk(2)[0].grad_fn()->name(), "SplitBackward0");
  EXPECT_STREQ(x.split_with_sizes({1, 3})[0].grad_fn()->name(), "SplitWithSizesBackward0");
}

TEST(ViewOps, CatStack) {
  CHECK_GRADS(
      [](const VariableList& in) {
        return cat({in[0], in[1]}, 1);
      },
      {leaf({2, 3}, 29), strided_leaf({2, 2}, 30)});
  CHECK_GRADS(
      [](const VariableList& in) {
        return stack({in[0], in[1]}, 1);
      },
      {leaf({2, 3}, 31), strided_leaf({2, 3}, 32)});
}

TEST(ViewOps, NodeNames) {
  Tensor x = leaf({2, 3}, 33);
  EXPECT_STREQ(x.select(0, 0).grad_fn()->name(), "SelectBackward0");
  EXPECT_STREQ(x.slice(1, 0, 2).grad_fn()->name(), "SliceBackward0");
  EXPECT_STREQ(x.narrow(1, 0, 2).grad_fn()->name(), "SliceBackward0");
  EXPECT_STREQ(x.permute({1, 0}).grad_fn()->name(), "PermuteBackward0");
  EXPECT_STREQ(x.transpose(0, 1).grad_fn()->name(), "TransposeBackward0");
  EXPECT_STREQ(x.t().grad_fn()->name(), "TBackward0");
  EXPECT_STREQ(x.expand({2, 2, 3}).grad_fn()->name(), "ExpandBackward0");
  EXPECT_STREQ(x.unsqueeze(0).grad_fn()->name(), "UnsqueezeBackward0");
  EXPECT_STREQ(x.unsqueeze(0).squeeze().grad_fn()->name(), "SqueezeBackward0");
  EXPECT_STREQ(x.unsqueeze(0).squeeze(0).grad_fn()->name(), "SqueezeBackward1");
  EXPECT_STREQ(x.view({6}).grad_fn()->name(), "ViewBackward0");
  EXPECT_STREQ(x.reshape({6}).grad_fn()->name(), "ReshapeAliasBackward0");
  Tensor copied = x.t().reshape({6});
  EXPECT_STREQ(copied.grad_fn()->name(), "UnsafeViewBackward0");
  EXPECT_STREQ(copied.grad_fn()->next_edge(0).function->name(), "CloneBackward0");
  EXPECT_FALSE(copied.is_view());
  EXPECT_STREQ(x.diagonal().grad_fn()->name(), "DiagonalBackward0");
  EXPECT_STREQ(x.as_strided({2}, {1}).grad_fn()->name(), "AsStridedBackward0");
  EXPECT_STREQ(x.alias().grad_fn()->name(), "AliasBackward0");
}

TEST(ViewOps, ViewsShareVersionAndRecordTheRootBase) {
  Tensor x = leaf({2, 3}, 34).detach();
  Tensor v = x.select(0, 1).slice(0, 1, 3);
  EXPECT_TRUE(v.is_view());
  EXPECT_TRUE(v.base().is_same(x));
  autograd::ViewInfo* info = autograd::get_view_info(v);
  ASSERT_NE(info, nullptr);
  EXPECT_TRUE(info->base.is_same(x));
  EXPECT_EQ(info->creation_meta, autograd::CreationMeta::kDefault);
  {
    NoGradGuard guard;
    EXPECT_EQ(autograd::get_view_info(x.select(0, 0))->creation_meta,
              autograd::CreationMeta::kNoGradMode);
  }
  EXPECT_EQ(autograd::get_view_info(x.unbind(0)[0])->creation_meta,
            autograd::CreationMeta::kMultiOutputNode);
  // A DEFAULT view of a multi-output view inherits its restriction.
  EXPECT_EQ(autograd::get_view_info(x.unbind(0)[0].slice(0, 0, 1))->creation_meta,
            autograd::CreationMeta::kMultiOutputNode);
}

TEST(ViewOps, NoGradViewOfARequiresGradTensor) {
  // As PyTorch: requires_grad is reported (through the base) but there is no grad_fn.
  Tensor x = leaf({3}, 35);
  Tensor v;
  {
    NoGradGuard guard;
    v = x.slice(0, 0, 2);
  }
  EXPECT_TRUE(v.requires_grad());
  EXPECT_EQ(v.grad_fn(), nullptr);
  EXPECT_TRUE(v.is_leaf());
}

}  // namespace
}  // namespace mutagrad
