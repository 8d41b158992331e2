// Views meet in-place writes: the behaviours of PyTorch's test_leaf_assignment,
// test_no_grad_assignment, test_inplace_on_view_backward, test_inplace_on_view_multiple_outputs,
// test_inplace_multiple_output_view_of_view and test_autograd_views_codegen, as our own tests.
// Expected values are hand-derived.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "grad_test_util.h"
#include "indexing/indexing.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;
using autograd::VariableList;
using testing_util::dev;
using testing_util::error_of;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::values;

double sigmoid_of(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// test_leaf_assignment: writing tensors that require grad into rows of a plain tensor gives it
// history (CopySlices), and backward reaches the written values.
TEST(MutationViews, LeafAssignment) {
  Tensor x = dev(zeros({5, 5}, kFloat64));
  Tensor y = leaf({5}, 1);
  Tensor z = leaf({5}, 2);
  x.set_item_({0}, y);
  x.set_item_({1}, z * 2.0);
  EXPECT_TRUE(x.requires_grad());
  ASSERT_TRUE(x.grad_fn());
  EXPECT_EQ(std::string(x.grad_fn()->name()), "CopySlices");
  EXPECT_EQ(x.version(), 2u);
  x.sum().backward();
  expect_close(y.grad(), {1, 1, 1, 1, 1});
  expect_close(z.grad(), {2, 2, 2, 2, 2});
}

// test_no_grad_assignment: under NoGradGuard a write into a leaf requiring grad is allowed,
// bumps the version and records no history.
TEST(MutationViews, NoGradAssignment) {
  Tensor x = leaf({5, 5}, 3);
  Tensor y = dev(tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64));
  {
    NoGradGuard guard;
    x.set_item_({0}, y);
  }
  EXPECT_EQ(x.version(), 1u);
  EXPECT_TRUE(x.requires_grad());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(x.grad_fn());
  expect_close(x.select(0, 0), {1, 2, 3, 4, 5});
}

// test_inplace_on_view_backward: double backward through an in-place relu_ on a view of an
// intermediate (the gradient-penalty pattern) works and leaves the input unchanged.
TEST(MutationViews, InplaceOnViewBackwardSupportsDoubleBackward) {
  Tensor x = dev(tensor({{1.0, 2.0}, {-3.0, 4.0}}, kFloat64)).requires_grad_();
  Tensor t = (x + 1.0).view({4});
  t.relu_();
  EXPECT_EQ(std::string(t.grad_fn()->name()), "ViewBackward0");
  Tensor p = t.sigmoid();
  VariableList g = autograd::grad({p}, {x}, {ones_like(p)}, std::nullopt, /*create_graph=*/true);
  g[0].sum().backward();
  expect_close(x, {1, 2, -3, 4});
  // p = sigmoid(relu(x + 1)); dp/dx = s(1 - s) where x + 1 > 0, else 0; its derivative is
  // s(1 - s)(1 - 2s) where x + 1 > 0, else 0, with s = sigmoid(x + 1).
  std::vector<double> first, second;
  for (double xv : {1.0, 2.0, -3.0, 4.0}) {
    const double s = sigmoid_of(xv + 1.0);
    const bool on = xv + 1.0 > 0;
    first.push_back(on ? s * (1 - s) : 0.0);
    second.push_back(on ? s * (1 - s) * (1 - 2 * s) : 0.0);
  }
  expect_close(g[0], first);
  expect_close(x.grad(), second);
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor u = (in[0] + 1.0).view({4});
        u.relu_();
        return u.sigmoid();
      },
      {dev(tensor({{1.0, 2.0}, {-3.0, 4.0}}, kFloat64)).requires_grad_()});
}

// test_inplace_on_view_multiple_outputs: outputs of unbind / split / chunk cannot be written in
// place with grad mode on; the failed write changes nothing. Under NoGradGuard it is allowed.
TEST(MutationViews, InplaceOnMultipleOutputViewsIsRefused) {
  Tensor root = dev(arange(9, kFloat64)).reshape({3, 3}).requires_grad_();
  Tensor x = root.clone();
  using Producer = std::function<std::vector<Tensor>(const Tensor&)>;
  const std::vector<std::pair<std::string, Producer>> producers = {
      {"UnbindBackward0", [](const Tensor& t) { return t.unbind(0); }},
      {"SplitBackward0", [](const Tensor& t) { return t.split(1, 0); }},
      {"SplitWithSizesBackward0",
       [](const Tensor& t) {
         return t.split_with_sizes({1, 2}, 0);
       }},
      {"SplitBackward0", [](const Tensor& t) { return t.chunk(3, 0); }},
  };
  for (const auto& [node, produce] : producers) {
    SCOPED_TRACE(node);
    std::vector<Tensor> parts = produce(x);
    const uint32_t version = x.version();
    EXPECT_EQ(error_of([&] { parts[0].mul_(2.0); }),
              "Output 0 of " + node +
                  " is a view and is being modified inplace. This view is the output of a "
                  "function that returns multiple views. Such functions do not allow the output "
                  "views to be modified inplace. You should replace the inplace operation by an "
                  "out-of-place one.");
    EXPECT_EQ(x.version(), version);
    expect_close(x, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  }
  std::vector<Tensor> parts = x.unbind(0);
  {
    NoGradGuard guard;
    parts[1].mul_(2.0);
  }
  expect_close(x, {0, 1, 2, 6, 8, 10, 6, 7, 8});
}

// test_inplace_multiple_output_view_of_view: a view of a multi-output view inherits its
// CreationMeta, so writing into it is refused too.
TEST(MutationViews, ViewOfAMultipleOutputViewInheritsTheRefusal) {
  Tensor a = leaf({10}, 4).clone();
  std::vector<Tensor> b = a.unbind(0);
  Tensor c = b[0].view_as(b[0]);
  EXPECT_NE(error_of([&] {
              c.mul_(2.0);
            }).find("This view is the output of a function that returns multiple views."),
            std::string::npos);
  Tensor d = a.split(5, 0)[1].narrow(0, 1, 2).t();
  EXPECT_NE(error_of([&] { d.add_(1.0); })
                .find("is a view and is being modified inplace. This view is the output of a "
                      "function that returns multiple views."),
            std::string::npos);
}

// A view of a view made under NoGradGuard inherits kNoGradMode.
TEST(MutationViews, ViewOfANoGradViewInheritsTheRefusal) {
  Tensor x = leaf({4, 2}, 5).clone();
  Tensor v;
  {
    NoGradGuard guard;
    v = x.narrow(0, 0, 2);
  }
  Tensor w = v.t().select(0, 1);
  const std::string msg = error_of([&] { w.copy_(leaf({2}, 7)); });
  // The kNoGradMode sentence: inherited from v through t() and select().
  EXPECT_NE(msg.find("is a view and is being modified inplace. Given that this use case is "
                     "ambiguous and error-prone, it is forbidden."),
            std::string::npos)
      << msg;
  expect_close(x.narrow(0, 0, 2), values(leaf({4, 2}, 5).narrow(0, 0, 2)));
}

// test_autograd_views_codegen: every view op returns a view whose base is the root tensor (as
// ._base), sharing storage and version counter, and writing into it rebases the root.
TEST(MutationViews, EveryViewOpReturnsAViewOfTheRootThatRebasesIt) {
  using ViewFn = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<std::string, ViewFn>> views = {
      {"select", [](const Tensor& t) { return t.select(0, 1); }},
      {"slice", [](const Tensor& t) { return t.slice(1, 0, 3, 2); }},
      {"narrow", [](const Tensor& t) { return t.narrow(0, 1, 2); }},
      {"permute",
       [](const Tensor& t) {
         return t.permute({1, 0});
       }},
      {"transpose", [](const Tensor& t) { return t.transpose(0, 1); }},
      {"t", [](const Tensor& t) { return t.t(); }},
      {"unsqueeze", [](const Tensor& t) { return t.unsqueeze(1); }},
      {"squeeze", [](const Tensor& t) { return t.unsqueeze(0).squeeze(0); }},
      {"view", [](const Tensor& t) { return t.view({12}); }},
      {"reshape",
       [](const Tensor& t) {
         return t.reshape({2, 6});
       }},
      {"flatten", [](const Tensor& t) { return t.flatten(); }},
      {"diagonal", [](const Tensor& t) { return t.diagonal(); }},
      {"as_strided",
       [](const Tensor& t) {
         return t.as_strided({2, 2}, {4, 1}, 1);
       }},
      {"alias", [](const Tensor& t) { return t.alias(); }},
      {"index (basic)",
       [](const Tensor& t) {
         return t.index({1, indexing::Slice(1, indexing::None)});
       }},
  };
  for (const auto& [name, make_view] : views) {
    SCOPED_TRACE(name);
    Tensor x = leaf({3, 4}, 6);
    Tensor root = x * 1.0;
    Tensor v = make_view(root);
    ASSERT_TRUE(v.is_view());
    EXPECT_TRUE(v.base().is_same(root));
    EXPECT_TRUE(v.alias().alias().base().is_same(root));  // a view of a view: the root
    EXPECT_TRUE(v.is_alias_of(root));
    const uint32_t before = root.version();
    v.mul_(3.0);
    EXPECT_EQ(root.version(), before + 1);
    EXPECT_EQ(v.version(), root.version());
    EXPECT_EQ(std::string(root.grad_fn()->name()), "CopySlices");
    // d(sum root)/dx is 3 where the view covers the root, 1 elsewhere.
    root.sum().backward();
    Tensor marker = dev(zeros({3, 4}, kFloat64));
    make_view(marker).fill_(1.0);
    std::vector<double> expected;
    for (double m : values(marker)) expected.push_back(m > 0 ? 3.0 : 1.0);
    expect_close(x.grad(), expected);
  }
}

// Note [Regenerating a view's grad_fn]: a view's grad_fn is its own view chain replayed on the
// base; as_strided views, and every view with replay disabled (PyTorch 1.13's behaviour), get
// AsStridedBackward0. The gradients are the same either way.
TEST(MutationViews, RegeneratedGradFnReplaysTheViewChainOrFallsBackToAsStrided) {
  struct Case {
    bool replay;
    bool through_as_strided;
    const char* expected;
  };
  for (const Case& c : {Case{true, false, "SliceBackward0"}, Case{true, true, "AsStridedBackward0"},
                        Case{false, false, "AsStridedBackward0"}}) {
    SCOPED_TRACE(c.expected);
    autograd::set_view_replay_enabled(c.replay);
    Tensor x = leaf({4, 3}, 8);
    Tensor root = x * 1.0;
    Tensor parent = c.through_as_strided ? root.as_strided({3, 4}, {1, 3}, 0) : root.t();
    Tensor v = parent.narrow(1, 1, 2);  // root rows 1-2, transposed
    Tensor w = parent.select(0, 2);     // root column 2
    w.mul_(5.0);                        // rebases root; v's grad_fn must be regenerated
    EXPECT_EQ(std::string(v.grad_fn()->name()), c.expected);
    (v * v).sum().backward();
    // v = root rows 1-2 (after the write, column 2 of them is 5x): d/dx = 2 v * dv/dx.
    Tensor expected = dev(zeros({4, 3}, kFloat64));
    for (int64_t i = 1; i <= 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        const double xv = x.index({i, j}).item<double>();
        const double scale = j == 2 ? 5.0 : 1.0;
        expected.index_put_({dev(tensor({i})), dev(tensor({j}))},
                            dev(tensor({2 * scale * scale * xv}, kFloat64)));
      }
    }
    expect_close(x.grad(), values(expected));
  }
  autograd::set_view_replay_enabled(true);
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor y = in[0] * 1.0;
        Tensor v = y.t().narrow(0, 1, 2).unsqueeze(0);
        y.select(1, 1).mul_(in[0].select(1, 0));  // writes into y through another view
        return v.exp();                           // v's regenerated history
      },
      {leaf({3, 3}, 9)});
}

}  // namespace
}  // namespace mutagrad
