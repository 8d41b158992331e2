// Saved-tensor hooks (autograd/saved_tensor_hooks.h): pack at save time and unpack in backward
// (counts as torch 1.13's), nesting, custom Functions, double backward through packed tensors,
// the version check (Note [Saved-tensor hooks]: checked when pack kept an alias of the tensor
// or unpack returns one, for every pack/unpack pair of VersionCheckFollowsWhatPackKept), a pack
// that writes its input (refused before the write), no reference cycle through the hooks,
// MutationPolicy::kSnapshot, and the errors.
#include <any>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::AutogradContext;
using autograd::SavedTensorHooksGuard;
using autograd::VariableList;
using testing_util::dev;
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

// ---- The version check follows what pack kept (issue 34) -------------------------------------

// A pack/unpack pair; `keeps_alias`: whether pack keeps an alias of the saved tensor, so that a
// write after the save reaches what backward reads (Note [Saved-tensor hooks]).
struct HookPair {
  const char* name;
  autograd::PackHook pack;
  autograd::UnpackHook unpack;
  bool keeps_alias;
  autograd::HoldsAliasFn holds_alias = nullptr;
};

// What a pack may return that the default holds_alias cannot look into.
struct Wrapped {
  Tensor t;
};

std::vector<HookPair> hook_pairs(std::map<int, Tensor>& store) {
  auto tensor_of = [](const std::any& p) { return std::any_cast<Tensor>(p); };
  auto clone_of = [](const std::any& p) { return std::any_cast<Tensor>(p).clone(); };
  return {
      {"identity", identity_pack, identity_unpack, true},
      {"copy at pack", [](const Tensor& t) -> std::any { return t.clone(); }, tensor_of, false},
      {"copy at unpack", identity_pack, clone_of, true},
      {"times one at unpack", identity_pack,
       [](const std::any& p) { return std::any_cast<Tensor>(p) * 1.0; }, true},
      {"detach", [](const Tensor& t) -> std::any { return t.detach(); }, clone_of, true},
      {"variable_data", [](const Tensor& t) -> std::any { return t.variable_data(); }, clone_of,
       true},
      {"view", [](const Tensor& t) -> std::any { return t.view({-1}); },
       [](const std::any& p) { return std::any_cast<Tensor>(p).clone().view({3}); }, true},
      {"dtype round trip", [](const Tensor& t) -> std::any { return t.to(kFloat32); },
       [](const std::any& p) { return std::any_cast<Tensor>(p).to(kFloat64); }, false},
      {"same dtype to", [](const Tensor& t) -> std::any { return t.to(kFloat64); }, clone_of, true},
      {"stored by id",
       [&store](const Tensor& t) -> std::any {
         const int id = static_cast<int>(store.size());
         store[id] = t;
         return id;
       },
       [&store](const std::any& p) { return store.at(std::any_cast<int>(p)); }, true},
      {"stored by id, copy at unpack",
       [&store](const Tensor& t) -> std::any {
         const int id = static_cast<int>(store.size());
         store[id] = t;
         return id;
       },
       [&store](const std::any& p) { return store.at(std::any_cast<int>(p)).clone(); }, true},
      {"stored by id, copy at pack",
       [&store](const Tensor& t) -> std::any {
         const int id = static_cast<int>(store.size());
         store[id] = t.clone();
         return id;
       },
       [&store](const std::any& p) { return store.at(std::any_cast<int>(p)); }, false},
      {"vector of detach",
       [](const Tensor& t) -> std::any { return std::vector<Tensor>{t.detach()}; },
       [](const std::any& p) { return std::any_cast<std::vector<Tensor>>(p)[0].clone(); }, true},
      {"struct of detach, with holds_alias",
       [](const Tensor& t) -> std::any { return Wrapped{t.detach()}; },
       [](const std::any& p) { return std::any_cast<Wrapped>(p).t.clone(); }, true,
       [](const std::any& p, const Tensor& saved) {
         return autograd::detail::shares_storage(std::any_cast<const Wrapped&>(p).t, saved);
       }},
      {"struct of copy, with holds_alias",
       [](const Tensor& t) -> std::any { return Wrapped{t.clone()}; },
       [](const std::any& p) { return std::any_cast<Wrapped>(p).t; }, false,
       [](const std::any& p, const Tensor& saved) {
         return autograd::detail::shares_storage(std::any_cast<const Wrapped&>(p).t, saved);
       }},
  };
}

// What is saved: "input" (MulBackward0 saves a non-leaf twice), "leaf" (a leaf), "output"
// (ExpBackward0 its result), "view" (a view of a non-leaf). Written after the save when
// `write`; returns a's gradient.
Tensor run_saved(const std::string& kind, const HookPair* pair, bool write) {
  Tensor a = leaf({3}, 20);
  Tensor x = a * 1.0, base = a * 1.0;
  Tensor y, target;
  {
    std::optional<SavedTensorHooksGuard> guard;
    if (pair != nullptr) guard.emplace(pair->pack, pair->unpack, pair->holds_alias);
    if (kind == "input") {
      y = (x * x).sum();
      target = x;
    } else if (kind == "leaf") {
      y = (a * a).sum();
      target = a;
    } else if (kind == "output") {
      target = x.exp();
      y = target.sum();
    } else {
      Tensor v = base.view({3});
      y = (v * v).sum();
      target = base;
    }
  }
  if (write) {
    autograd::AutoGradMode no_grad(false);
    target.mul_(100.0);
  }
  y.backward();
  return a.grad();
}

TEST(SavedTensorHooks, VersionCheckFollowsWhatPackKept) {
  for (const std::string kind : {"input", "leaf", "output", "view"}) {
    const std::vector<double> expected = values(run_saved(kind, nullptr, false));
    std::map<int, Tensor> store;
    for (const HookPair& pair : hook_pairs(store)) {
      SCOPED_TRACE(kind + " saved, pair: " + pair.name);
      // No write: the gradients without hooks (a float32 round trip rounds them).
      const double tol = std::string(pair.name) == "dtype round trip" ? 1e-5 : 1e-12;
      expect_close(run_saved(kind, &pair, false), expected, tol);
      if (!pair.keeps_alias) {
        // A copy: the write cannot reach it; backward uses the values at the save (torch too).
        expect_close(run_saved(kind, &pair, true), expected, tol);
        continue;
      }
      // An alias: the write reached what backward would read (torch 1.13 uses the written
      // values silently); we raise, naming the write.
      const std::string msg = error_of([&] { run_saved(kind, &pair, true); });
      EXPECT_NE(msg.find("expected version 0"), std::string::npos) << msg;
      EXPECT_NE(msg.find("The first in-place write after it was saved is mul_"), std::string::npos)
          << msg;
    }
  }
}

// ---- A pack hook must not write its input ---------------------------------------------------

TEST(SavedTensorHooks, PackHookWritingItsInputIsRefusedBeforeTheWrite) {
  const std::vector<std::pair<const char*, std::function<void(const Tensor&)>>> writes = {
      {"add_", [](const Tensor& t) { Tensor(t).add_(1.0); }},
      {"set_item_", [](const Tensor& t) { Tensor(t).set_item_({0}, 5.0); }},
      {"view mul_", [](const Tensor& t) { t.view({-1}).mul_(2.0); }},
      {"zero_", [](const Tensor& t) { Tensor(t).zero_(); }},
      {"detach add_", [](const Tensor& t) { t.detach().add_(1.0); }},
      {"variable_data add_", [](const Tensor& t) { t.variable_data().add_(1.0); }},
  };
  for (const auto& [name, write] : writes) {
    for (const std::string saved : {"output", "input", "leaf"}) {
      SCOPED_TRACE(std::string(name) + " in pack, saving the " + saved);
      Tensor a = leaf({3}, 21);
      Tensor x = a * 1.0;
      const std::vector<double> a0 = values(a), x0 = values(x);
      auto pack = [&write = write](const Tensor& t) -> std::any {
        write(t);
        return t;
      };
      const std::string msg = error_of([&] {
        SavedTensorHooksGuard guard(pack, identity_unpack);
        if (saved == "output") {
          a.exp();
        } else if (saved == "input") {
          x.sin();
        } else {
          a.sin();
        }
      });
      EXPECT_NE(msg.find(autograd::kPackHookInplaceMessage), std::string::npos) << msg;
      EXPECT_NE(msg.find("was refused before it changed anything"), std::string::npos) << msg;
      // Nothing changed: values and versions.
      expect_close(a, a0, 0.0);
      expect_close(x, x0, 0.0);
      EXPECT_EQ(a.version(), 0u);
      EXPECT_EQ(x.version(), 0u);
      EXPECT_EQ(autograd::detail::current_saved_tensor_hooks(), nullptr);
    }
  }
}

TEST(SavedTensorHooks, PackHookMayWriteCopiesAndOtherTensors) {
  Tensor a = leaf({3}, 22);
  Tensor other = dev(zeros({3}, TensorOptions(kFloat64)));
  Tensor y;
  {
    SavedTensorHooksGuard guard(
        [&](const Tensor& t) -> std::any {
          other.add_(t);  // another tensor
          Tensor c = t.clone();
          c.add_(1.0);  // a copy
          return c;
        },
        [](const std::any& p) { return std::any_cast<Tensor>(p) - 1.0; });
    y = a.exp().sum();
  }
  y.backward();
  expect_close(a.grad(), values(a.exp()), 1e-12);
  expect_close(other, values(a.exp()), 1e-12);
  // After pack, writes to the saved tensor are ordinary writes again (the version check).
  Tensor b = a * 1.0;
  {
    SavedTensorHooksGuard guard(identity_pack, identity_unpack);
    y = (b * b).sum();
  }
  b.add_(1.0);
  EXPECT_NE(error_of([&] { y.backward(); }).find("add_"), std::string::npos);
}

// ---- No reference cycle through the hooks (issue 34, item 9) --------------------------------

struct Packed {
  Tensor t;
};

struct SquareSavingBoth : autograd::Function<SquareSavingBoth> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = x * x;
    ctx->save_for_backward({x, y});
    return y;
  }
  static VariableList backward(AutogradContext* ctx, VariableList grads) {
    return {grads[0] * 2.0 * ctx->get_saved_variables()[0]};
  }
};

TEST(SavedTensorHooks, GraphUnderHooksIsFreedWithItsTensors) {
  // Programs whose graph would close a cycle if a node owned what it saved (the Notes in
  // autograd/saved_variable.h); each returns the handles a user keeps.
  const std::vector<std::pair<const char*, std::function<VariableList()>>> programs = {
      {"input rebased onto a node that saved it",
       [] {
         Tensor a = leaf({3}, 23);
         Tensor t = a * 1.0;
         t.add_(t.sin().sum());
         return VariableList{a, t};
       }},
      {"saved output",
       [] {
         Tensor a = leaf({3}, 24);
         return VariableList{a, a.exp()};
       }},
      {"leaf with create_graph",
       [] {
         Tensor a = leaf({3}, 25);
         (a * a).sum().backward({}, /*retain_graph=*/std::nullopt, /*create_graph=*/true);
         return VariableList{a};
       }},
      {"view written into its base",
       [] {
         Tensor a = leaf({4}, 26);
         Tensor b = a * 1.0;
         Tensor v = b.narrow(0, 0, 2);
         b.narrow(0, 2, 2).copy_(v * v);
         return VariableList{a, b, v};
       }},
      {"custom Function saving input and output",
       [] {
         Tensor a = leaf({3}, 27);
         return VariableList{a, SquareSavingBoth::apply(a * 1.0)};
       }},
  };
  for (const auto& [name, program] : programs) {
    for (const bool copy : {false, true}) {
      SCOPED_TRACE(std::string(name) + (copy ? ", copying pack" : ", aliasing pack"));
      std::vector<std::weak_ptr<Packed>> packed;
      {
        VariableList handles;
        {
          SavedTensorHooksGuard guard(
              [&packed, copy = copy](const Tensor& t) -> std::any {
                auto p = std::make_shared<Packed>(Packed{copy ? t.clone() : t});
                packed.push_back(p);
                return p;
              },
              [](const std::any& p) { return std::any_cast<std::shared_ptr<Packed>>(p)->t; });
          handles = program();
        }
        size_t alive = 0;
        for (const auto& w : packed) alive += !w.expired();
        EXPECT_GT(alive, 0u) << "the program kept nothing under the hooks";
      }
      for (const auto& w : packed) EXPECT_TRUE(w.expired()) << "a packed tensor outlived its graph";
    }
  }
}

}  // namespace
}  // namespace mutagrad
