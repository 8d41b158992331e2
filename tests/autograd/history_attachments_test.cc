// What a tensor attaches to its history (retain_grad) moves with it whenever its grad_fn is
// replaced: an in-place write into it (rebase_history), a write through a view of it, a write
// into its base or a sibling view (its grad_fn is regenerated), set_item_, several writes in a
// row. See Note [History attachments move with grad_fn] in autograd/history.h.
//
// Oracle: the loss is sum(t * c) + (terms without t) for a constant c, so t.grad == c.
#include <functional>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using indexing::None;
using indexing::Slice;
using testing_util::expect_close;
using testing_util::values;

struct Replacement {
  std::string name;
  // Given a non-leaf `base` (shape [4]) and `t` = the tensor that retains its grad (t is base
  // itself or a view of it), replaces t's grad_fn one way or another.
  std::function<void(Tensor& base, Tensor& t)> write;
  bool t_is_view;
};

std::vector<Replacement> replacements() {
  return {
      {"in-place op on t (not a view)", [](Tensor&, Tensor& t) { t.mul_(3.0); }, false},
      {"set_item_ on t (not a view)", [](Tensor&, Tensor& t) { t.set_item_({Slice(0, 2)}, 5.0); },
       false},
      {"in-place op on t (a view)", [](Tensor&, Tensor& t) { t.add_(1.0); }, true},
      {"set_item_ on t (a view)", [](Tensor&, Tensor& t) { t.set_item_({0}, 2.0); }, true},
      {"in-place op on t's base", [](Tensor& base, Tensor&) { base.mul_(5.0); }, true},
      {"in-place op on a sibling view", [](Tensor& base, Tensor&) { base.narrow(0, 2, 2).exp_(); },
       true},
      {"two writes: the view, then its base",
       [](Tensor& base, Tensor& t) {
         t.mul_(2.0);
         base.sub_(0.5);
       },
       true},
      {"two writes: the base, then the view",
       [](Tensor& base, Tensor& t) {
         base.add_(1.0);
         t.mul_(3.0);
       },
       true},
  };
}

TEST(HistoryAttachments, RetainedGradFollowsEveryGradFnReplacement) {
  for (const Replacement& r : replacements()) {
    SCOPED_TRACE(r.name);
    Tensor x = testing_util::leaf({4}, 7, 0.5, 1.5);
    Tensor base = x * 2.0;
    Tensor t = r.t_is_view ? base.narrow(0, 0, 2) : base;
    t.retain_grad();
    r.write(base, t);
    EXPECT_TRUE(t.retains_grad());
    const std::vector<double> c =
        r.t_is_view ? std::vector<double>{3, -2} : std::vector<double>{3, -2, 0.5, 4};
    Tensor weights = from_vector(c, {static_cast<int64_t>(c.size())});
    ((t * weights).sum() + x.sum()).backward();
    ASSERT_TRUE(t.grad().defined());
    expect_close(t.grad(), c);
  }
}

// Issue 20 item 4, both repros (torch 1.13 gives [2., 2.] in both).
TEST(HistoryAttachments, RetainGradOnAViewSurvivesAWriteToItOrItsBase) {
  {
    Tensor x = ones({3}).requires_grad_();
    Tensor v = (x * 1).index({Slice(None, 2)});
    v.retain_grad();
    v.add_(1);
    (v * 2).sum().backward();
    ASSERT_TRUE(v.grad().defined());
    expect_close(v.grad(), {2, 2});
  }
  {
    Tensor x = ones({3}).requires_grad_();
    Tensor y = x * 2;
    Tensor v = y.index({Slice(0, 2)});
    v.retain_grad();
    y.mul_(5);
    (v * 2).sum().backward();
    ASSERT_TRUE(v.grad().defined());
    expect_close(v.grad(), {2, 2});
    expect_close(x.grad(), {20, 20, 0});
  }
}

}  // namespace
}  // namespace mutagrad
