// Double backward through every in-place op, in the two situations where the engine has to
// work hardest, checked against central differences (gradcheck / gradgradcheck):
//  - the op writes a view of a non-leaf (CopySlices, the view's regenerated grad_fn, the
//    saved result of the write; see Note [Saved result of an in-place op on a view]);
//  - the op's operand aliases the tensor it writes (`a.mul_(a)`, `a.mul_(a.view(...))`; see
//    Note [Saving an operand that aliases the written tensor]),
// under both mutation policies. Under kError an aliasing write may be refused with the stale
// tensor error (PyTorch does so); under kSnapshot it must give the right derivatives.
#include <functional>
#include <string>
#include <vector>

#include "autograd/mutation_policy.h"
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::MutationPolicyGuard;
using autograd::VariableList;
using indexing::Slice;
using testing_util::dev;
using testing_util::leaf;

// An in-place op: writes `self` given a second differentiable input `other` (same shape as
// self, values in [0.5, 1.5]; ops that take no tensor ignore it).
struct InplaceOp {
  std::string name;
  std::function<void(Tensor& self, const Tensor& other)> apply;
  bool differentiable_in_other = false;
};

std::vector<InplaceOp> inplace_ops() {
  Tensor mask = dev(from_vector(std::vector<double>{1, 0}, {2}).to(kBool));
  return {
      {"neg_", [](Tensor& s, const Tensor&) { s.neg_(); }},
      {"relu_", [](Tensor& s, const Tensor&) { s.relu_(); }},
      {"sigmoid_", [](Tensor& s, const Tensor&) { s.sigmoid_(); }},
      {"tanh_", [](Tensor& s, const Tensor&) { s.tanh_(); }},
      {"exp_", [](Tensor& s, const Tensor&) { s.exp_(); }},
      {"clamp_", [](Tensor& s, const Tensor&) { s.clamp_(0.2, 1.9); }},
      {"pow_(3)", [](Tensor& s, const Tensor&) { s.pow_(3); }},
      {"pow_(2.5)", [](Tensor& s, const Tensor&) { s.pow_(2.5); }},
      {"mul_(scalar)", [](Tensor& s, const Tensor&) { s.mul_(3.0); }},
      {"div_(scalar)", [](Tensor& s, const Tensor&) { s.div_(4.0); }},
      {"add_(scalar)", [](Tensor& s, const Tensor&) { s.add_(2.0); }},
      {"sub_(scalar)", [](Tensor& s, const Tensor&) { s.sub_(2.0); }},
      {"fill_", [](Tensor& s, const Tensor&) { s.fill_(0.25); }},
      {"zero_", [](Tensor& s, const Tensor&) { s.zero_(); }},
      {"masked_fill_", [mask](Tensor& s, const Tensor&) { s.masked_fill_(mask, 0.5); }},
      {"add_", [](Tensor& s, const Tensor& o) { s.add_(o, 0.5); }, true},
      {"sub_", [](Tensor& s, const Tensor& o) { s.sub_(o); }, true},
      {"mul_", [](Tensor& s, const Tensor& o) { s.mul_(o); }, true},
      {"div_", [](Tensor& s, const Tensor& o) { s.div_(o); }, true},
      {"pow_", [](Tensor& s, const Tensor& o) { s.pow_(o); }, true},
      {"copy_", [](Tensor& s, const Tensor& o) { s.copy_(o * o); }, true},
      {"set_item_",
       [](Tensor& s, const Tensor& o) { s.set_item_({Slice(0, 1)}, o.select(0, 1) * 2); }, true},
      {"index_put_(accumulate)",
       [](Tensor& s, const Tensor& o) {
         s.index_put_({dev(from_vector(std::vector<int64_t>{1, 1}, {2}))}, o * o, true);
       },
       true},
  };
}

class InplaceGradGrad : public ::testing::TestWithParam<autograd::MutationPolicy> {};

// h = x * w (non-leaf); v = h[1:3]; op(v, other); loss uses h and v afterwards.
TEST_P(InplaceGradGrad, OnAViewOfANonLeaf) {
  MutationPolicyGuard policy(GetParam());
  for (const InplaceOp& op : inplace_ops()) {
    SCOPED_TRACE(op.name);
    Tensor x = leaf({4}, 1, 0.5, 1.5);
    Tensor other = leaf({2}, 2, 0.5, 1.5);
    auto fn = [&op](const VariableList& in) {
      Tensor h = in[0] * 1.5;
      Tensor v = h.narrow(0, 1, 2);
      op.apply(v, in[1]);
      return (h * h).sum() + (v * in[0].narrow(0, 0, 2)).sum();
    };
    EXPECT_TRUE(gradcheck(fn, {x, other}));
    EXPECT_TRUE(gradgradcheck(fn, {x, other}));
    // gradgradcheck keeps the graph; a user's second grad() frees it as it goes, which must
    // not free a saved tensor that another node of the same pass still needs.
    auto second_order = [&](bool retain_graph) {
      Tensor loss = fn({x, other});
      auto g = autograd::grad({loss}, {x, other}, {}, std::nullopt, /*create_graph=*/true,
                              /*allow_unused=*/true);
      Tensor s = (g[0] * g[0]).sum();
      if (g[1].defined()) s = s + (g[1] * g[1]).sum();
      return autograd::grad({s}, {x, other}, {}, retain_graph, false, /*allow_unused=*/true);
    };
    VariableList kept = second_order(true);
    VariableList freed = second_order(false);
    for (size_t i = 0; i < kept.size(); ++i) {
      if (!kept[i].defined()) continue;
      testing_util::expect_close(freed[i], testing_util::values(kept[i]), 1e-12);
    }
  }
}

// The operand is the written tensor itself, or a view of it: right derivatives under
// kSnapshot; under kError right derivatives or the stale-tensor error, never a wrong value.
TEST_P(InplaceGradGrad, OperandAliasesTheWrittenTensor) {
  MutationPolicyGuard policy(GetParam());
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> aliases = {
      {"itself", [](const Tensor& a) { return a; }},
      {"a view of it",
       [](const Tensor& a) {
         return a.view({2, 2}).t().reshape({4});
       }},
      {"its base's row", [](const Tensor& a) { return a.narrow(0, 1, 1); }},
  };
  for (const InplaceOp& op : inplace_ops()) {
    if (!op.differentiable_in_other) continue;
    for (const auto& [alias_name, alias] : aliases) {
      SCOPED_TRACE(op.name + " with an operand that is " + alias_name);
      Tensor x = leaf({4}, 3, 0.5, 1.5);
      auto fn = [&op, alias = alias](const VariableList& in) {
        Tensor a = in[0] * 1.25;
        Tensor operand = alias(a);
        if (operand.numel() != 4) operand = operand.expand({4});
        Tensor shaped = operand.narrow(0, 0, 2);
        Tensor v = a.narrow(0, 0, 2);
        op.apply(v, shaped);
        return (a * a).sum();
      };
      if (GetParam() == autograd::MutationPolicy::kSnapshot) {
        EXPECT_TRUE(gradcheck(fn, {x}));
        EXPECT_TRUE(gradgradcheck(fn, {x}));
        continue;
      }
      try {
        EXPECT_TRUE(gradcheck(fn, {x}));
        EXPECT_TRUE(gradgradcheck(fn, {x}));
      } catch (const AutogradError& e) {
        EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos)
            << e.what();
      }
    }
  }
}

// Issue 20 item 5, exactly: a.mul_(a) under kSnapshot, second derivative of a^2 is 2.
TEST(InplaceGradGradRegression, SnapshotMulOfItselfSecondDerivative) {
  MutationPolicyGuard policy(autograd::MutationPolicy::kSnapshot);
  Tensor x = dev(from_vector(std::vector<double>{3.0}, {1})).requires_grad_();
  Tensor a = x * 1;
  a.mul_(a);
  auto g = autograd::grad({a.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true);
  testing_util::expect_close(g[0], {6.0});
  auto gg = autograd::grad({g[0].sum()}, {x});
  testing_util::expect_close(gg[0], {2.0});
}

// Issue 20 item 8, exactly: h[1:3].sigmoid_() then double backward (torch 1.13 gives these).
TEST(InplaceGradGradRegression, SigmoidOnViewDoubleBackward) {
  Tensor x = dev(from_vector(std::vector<double>{1, 2, 3, 4}, {4})).requires_grad_();
  Tensor h = x * 2;
  h.index({Slice(1, 3)}).sigmoid_();
  auto g = autograd::grad({(h * h).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true);
  auto gg = autograd::grad({(g[0] * g[0]).sum()}, {x});
  testing_util::expect_close(gg[0], {128.0, -1.821544418018e-02, -3.845577650326e-04, 512.0},
                             1e-10);
}

// Note [Saved views do not own their base]: saving a view of `a` and then writing into `a` a
// value computed from it must not make a reference cycle (found by LeakSanitizer on the
// aliasing test above): once the tensors are gone, so is the graph.
TEST(InplaceGradGradRegression, SavedViewAndAWriteIntoItsBaseLeaveNoCycle) {
  std::weak_ptr<autograd::Node> copy_slices, mul;
  {
    Tensor x = leaf({4}, 5, 0.5, 1.5);
    Tensor a = x * 1.25;
    Tensor view = a.narrow(0, 0, 2);
    Tensor value = view * view;  // MulBackward0 saves the view (twice)
    mul = value.grad_fn();
    a.narrow(0, 2, 2).copy_(value);
    copy_slices = a.grad_fn();
    EXPECT_STREQ(a.grad_fn()->name(), "CopySlices");
    EXPECT_THROW((a * a).sum().backward(), AutogradError);  // the saved view is stale
  }
  EXPECT_TRUE(copy_slices.expired());
  EXPECT_TRUE(mul.expired());
}

INSTANTIATE_TEST_SUITE_P(Policies, InplaceGradGrad,
                         ::testing::Values(autograd::MutationPolicy::kError,
                                           autograd::MutationPolicy::kSnapshot),
                         [](const auto& info) {
                           return info.param == autograd::MutationPolicy::kError ? "kError"
                                                                                 : "kSnapshot";
                         });

}  // namespace
}  // namespace mutagrad
