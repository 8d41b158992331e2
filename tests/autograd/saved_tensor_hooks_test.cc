// Saved-tensor hooks (autograd/saved_tensor_hooks.h): pack at save time and unpack in backward
// (counts as torch 1.13's), nesting, custom Functions, double backward through packed tensors,
// the version check (Note [Saved-tensor hooks]: checked when unpack returns an alias of the
// original, not when it returns a copy), MutationPolicy::kSnapshot, and the errors.
#include <any>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::AutogradContext;
using autograd::SavedTensorHooksGuard;
using autograd::VariableList;
using testing_util::error_of;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::values;

std::any identity_pack(const Tensor& t) { return t; }
Tensor identity_unpack(const std::any& p) { return std::any_cast<Tensor>(p); }

TEST(SavedTensorHooks, PackWhenSavedUnpackInBackward) {
  // torch 1.13: y = a.exp(); z = (y * a).sum() packs 3 tensors (ExpBackward0's result,
  // MulBackward0's y and a) and unpacks 3 in backward.
  Tensor a = leaf({2}, 1);
  int packs = 0, unpacks = 0;
  Tensor z;
  {
    SavedTensorHooksGuard guard(
        [&](const Tensor& t) -> std::any {
          ++packs;
          return t;
        },
        [&](const std::any& p) {
          ++unpacks;
          return std::any_cast<Tensor>(p);
        });
    Tensor y = a.exp();
    z = (y * a).sum();
  }
  EXPECT_EQ(packs, 3);
  EXPECT_EQ(unpacks, 0);
  z.backward();
  EXPECT_EQ(unpacks, 3);
  expect_close(a.grad(), values(a.exp() * (a + 1.0)));
}

TEST(SavedTensorHooks, CompressedStorageGivesCloseGradients) {
  // Keep float64 saved tensors as float16 / bfloat16, restore them on unpack: the gradients are
  // those of the saved values rounded to the compact dtype.
  for (ScalarType compact : {kFloat16, kBFloat16}) {
    Tensor a = leaf({3, 2}, 2), b = leaf({3, 2}, 3);
    Tensor loss;
    {
      SavedTensorHooksGuard guard(
          [compact](const Tensor& t) -> std::any { return t.to(compact); },
          [](const std::any& p) { return std::any_cast<Tensor>(p).to(kFloat64); });
      loss = (a * b).sin().sum();
    }
    loss.backward();
    // SinBackward0 saved a * b, MulBackward0 saved a and b: all rounded.
    auto round = [&](const Tensor& t) { return t.detach().to(compact).to(kFloat64); };
    Tensor ab = round(a.detach() * b.detach());
    expect_close(a.grad(), values(ab.cos() * round(b)), 1e-12);
    expect_close(b.grad(), values(ab.cos() * round(a)), 1e-12);
    // ... and close to the exact ones.
    const double tol = compact == kFloat16 ? 2e-3 : 2e-2;
    expect_close(a.grad(), values((a * b).cos() * b), tol);
  }
}

TEST(SavedTensorHooks, InnermostGuardApplies) {
  Tensor a = leaf({2}, 4);
  std::vector<std::string> log;
  Tensor y1, y2;
  {
    SavedTensorHooksGuard outer(
        [&](const Tensor& t) -> std::any {
          log.push_back("outer");
          return t;
        },
        identity_unpack);
    {
      SavedTensorHooksGuard inner(
          [&](const Tensor& t) -> std::any {
            log.push_back("inner");
            return t;
          },
          identity_unpack);
      y1 = a.exp();
    }
    y2 = a.sin();
  }
  Tensor y3 = a.cos();  // no hooks any more
  EXPECT_EQ(log, (std::vector<std::string>{"inner", "outer"}));
  (y1 + y2 + y3).sum().backward();
  expect_close(a.grad(), values(a.exp() + a.cos() - a.sin()));
}

struct Cube : autograd::Function<Cube> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static VariableList backward(AutogradContext* ctx, VariableList grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * 3.0 * x * x};
  }
};

TEST(SavedTensorHooks, CustomFunctionsAndDoubleBackwardThroughPackedTensors) {
  Tensor x = leaf({3}, 5);
  int packs = 0;
  auto pack = [&](const Tensor& t) -> std::any {
    ++packs;
    return t.clone();
  };
  auto fn = [&](const VariableList& in) {
    SavedTensorHooksGuard guard(pack, identity_unpack);
    return Cube::apply(in[0] * 2.0).sin();
  };
  CHECK_GRADS(fn, {x});
  EXPECT_GT(packs, 0);
}

TEST(SavedTensorHooks, VersionCheckWhenUnpackReturnsAnAlias) {
  Tensor a = leaf({2}, 6);
  Tensor b = a * 1.0;
  Tensor y;
  {
    SavedTensorHooksGuard guard(identity_pack, identity_unpack);
    y = (b * b).sum();
  }
  b.add_(1.0);
  // torch 1.13 computes with the written b here; we raise, naming the write.
  const std::string msg = error_of([&] { y.backward(); });
  EXPECT_NE(msg.find("add_"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MulBackward0 saved it"), std::string::npos) << msg;
}

TEST(SavedTensorHooks, NoVersionCheckWhenUnpackReturnsACopy) {
  // torch 1.13: pack = clone gives a.grad = 2 * a (the saved values), no error.
  Tensor a = leaf({2}, 7);
  Tensor b = a * 1.0;
  Tensor y;
  {
    SavedTensorHooksGuard guard([](const Tensor& t) -> std::any { return t.clone(); },
                                identity_unpack);
    y = (b * b).sum();
  }
  const std::vector<double> before = values(b);
  b.add_(1.0);
  y.backward();
  expect_close(a.grad(), {2 * before[0], 2 * before[1]});
}

TEST(SavedTensorHooks, SnapshotPolicyDoesNotApplyToPackedTensors) {
  Tensor a = leaf({2}, 8);
  Tensor b = a * 1.0;
  Tensor y;
  const int64_t slots = autograd::num_snapshot_slots();
  {
    MutationPolicyGuard policy(MutationPolicy::kSnapshot);
    SavedTensorHooksGuard guard(identity_pack, identity_unpack);
    y = (b * b).sum();
    EXPECT_EQ(autograd::num_snapshot_slots(), slots);  // the node holds only the packed object
  }
  b.add_(1.0);
  EXPECT_NE(error_of([&] { y.backward(); }).find("add_"), std::string::npos);
}

TEST(SavedTensorHooks, Errors) {
  EXPECT_THROW(SavedTensorHooksGuard(nullptr, identity_unpack), ValueError);
  Tensor a = leaf({2}, 9);
  Tensor y;
  {
    SavedTensorHooksGuard guard(identity_pack, [](const std::any&) { return Tensor(); });
    y = a.exp().sum();
  }
  EXPECT_NE(error_of([&] { y.backward(); }).find("unpack hook"), std::string::npos);
  // A pack hook that throws leaves the hooks installed as they were.
  {
    SavedTensorHooksGuard guard([](const Tensor&) -> std::any { throw ValueError("no room"); },
                                identity_unpack);
    EXPECT_THROW(a.exp(), ValueError);
    EXPECT_NE(autograd::detail::current_saved_tensor_hooks(), nullptr);
  }
  EXPECT_EQ(autograd::detail::current_saved_tensor_hooks(), nullptr);
  // Backward twice through packed tensors.
  Tensor z;
  {
    SavedTensorHooksGuard guard(identity_pack, identity_unpack);
    z = a.exp().sum();
  }
  z.backward();
  EXPECT_NE(error_of([&] { z.backward(); }).find("second time"), std::string::npos);
}

}  // namespace
}  // namespace mutagrad
