// Tensor hooks and node pre/post-hooks (autograd/hooks.h): call order as torch 1.13 (checked
// there: Note [Hook order]), replacement gradients, removal, retain_grad, leaves, in-place
// writes and views, and the errors of a wrong hook.
#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;
using autograd::RemovableHandle;
using autograd::VariableList;
using testing_util::error_of;
using testing_util::expect_close;
using testing_util::values;

Tensor ones_leaf() { return testing_util::dev(ones({2}, kFloat64)).requires_grad_(); }
double first(const Tensor& t) { return values(t)[0]; }

TEST(Hooks, TensorHookReplacesGradientAndIsRemovable) {
  Tensor x = ones_leaf();
  Tensor y = x * 2.0;
  std::vector<double> seen;
  RemovableHandle h = autograd::register_hook(y, [&](const Tensor& g) {
    seen.push_back(first(g));
    return g * 10.0;
  });
  (y * 3.0).sum().backward();
  EXPECT_EQ(seen, std::vector<double>{3.0});
  expect_close(x.grad(), {60, 60});
  h.remove();
  h.remove();  // twice: nothing
  x.set_grad(Tensor());
  Tensor y2 = x * 2.0;
  y2.register_hook([&](const Tensor& g) {  // the Tensor member, as libtorch's
    seen.push_back(first(g));
    return Tensor();  // observe only
  });
  (y2 * 3.0).sum().backward();
  expect_close(x.grad(), {6, 6});
}

TEST(Hooks, OrderAsTorch) {
  // torch 1.13: y.register_hook(t1); y.retain_grad(); y.register_hook(t2) with t1 = *10 and
  // t2 = +1 gives log [t1 3, t2 30], y.grad 31 (retain after both: t1 made the slot first),
  // then a pre-hook registered last sees 31, a post-hook 62, the leaf hook 62.
  Tensor x = ones_leaf();
  Tensor y = x * 2.0;
  Tensor z = y * 3.0;
  std::vector<std::string> log;
  autograd::register_hook(y, [&](const Tensor& g) {
    log.push_back(str("t1 ", first(g)));
    return g * 10.0;
  });
  y.retain_grad();
  autograd::register_hook(y, [&](const Tensor& g) {
    log.push_back(str("t2 ", first(g)));
    return g + 1.0;
  });
  y.grad_fn()->register_prehook([&](const VariableList& gs) {
    log.push_back(str("pre ", first(gs[0])));
    return VariableList();
  });
  y.grad_fn()->register_hook([&](const VariableList& gi, const VariableList& go) {
    log.push_back(str("post ", first(gi[0]), " ", first(go[0])));
    return VariableList();
  });
  autograd::register_hook(x, [&](const Tensor& g) {
    log.push_back(str("leaf ", first(g)));
    return Tensor();
  });
  z.sum().backward();
  EXPECT_EQ(log, (std::vector<std::string>{"t1 3", "t2 30", "pre 31", "post 62 31", "leaf 62"}));
  expect_close(y.grad(), {31, 31});
  expect_close(x.grad(), {62, 62});
}

TEST(Hooks, RetainGradBeforeHooksSeesTheUnmodifiedGradient) {
  // torch 1.13: retain_grad(); register_hook(*10) -> y.grad 3.
  Tensor x = ones_leaf();
  Tensor y = x * 2.0;
  y.retain_grad();
  autograd::register_hook(y, [](const Tensor& g) { return g * 10.0; });
  (y * 3.0).sum().backward();
  expect_close(y.grad(), {3, 3});
  expect_close(x.grad(), {60, 60});
}

TEST(Hooks, SlotsKeepTheirFirstPosition) {
  // torch 1.13: prehook P1, tensor hook T1, prehook P2, tensor hook T2 run P1 P2 T1 T2; the
  // other way round T1 T2 P1 P2.
  for (bool prehook_first : {true, false}) {
    Tensor x = ones_leaf();
    Tensor y = x * 2.0;
    std::vector<std::string> log;
    auto pre = [&](const char* name) {
      y.grad_fn()->register_prehook([&log, name](const VariableList&) {
        log.push_back(name);
        return VariableList();
      });
    };
    auto tensor = [&](const char* name) {
      autograd::register_hook(y, [&log, name](const Tensor&) {
        log.push_back(name);
        return Tensor();
      });
    };
    if (prehook_first) {
      pre("P1"), tensor("T1"), pre("P2"), tensor("T2");
    } else {
      tensor("T1"), pre("P1"), tensor("T2"), pre("P2");
    }
    (y * 3.0).sum().backward();
    EXPECT_EQ(log, prehook_first ? (std::vector<std::string>{"P1", "P2", "T1", "T2"})
                                 : (std::vector<std::string>{"T1", "T2", "P1", "P2"}));
  }
}

TEST(Hooks, PreAndPostHooksReplaceGradients) {
  // torch 1.13: prehook *100, post-hook (gi[0] + 0.5, None), leaf hooks: first -> 7, second
  // observes 7.
  Tensor x = ones_leaf();
  Tensor y = x * 2.0;
  y.grad_fn()->register_prehook([](const VariableList& gs) { return VariableList{gs[0] * 100.0}; });
  y.grad_fn()->register_hook([](const VariableList& gi, const VariableList&) {
    VariableList out = gi;
    out[0] = gi[0] + 0.5;
    return out;
  });
  std::vector<double> leaf_seen;
  autograd::register_hook(x, [&](const Tensor& g) {
    leaf_seen.push_back(first(g));
    return g * 0.0 + 7.0;
  });
  autograd::register_hook(x, [&](const Tensor& g) {
    leaf_seen.push_back(first(g));
    return Tensor();
  });
  (y * 3.0).sum().backward();
  EXPECT_EQ(leaf_seen, (std::vector<double>{600.5, 7.0}));
  expect_close(x.grad(), {7, 7});
}

TEST(Hooks, LeafHookRegisteredBeforeTheGraphAndNotCalledByGrad) {
  Tensor x = ones_leaf();
  int calls = 0;
  autograd::register_hook(x, [&](const Tensor& g) {
    ++calls;
    return g * 2.0;
  });
  (x * 1.0).sum().backward();  // the AccumulateGrad is made after the hook
  expect_close(x.grad(), {2, 2});
  EXPECT_EQ(calls, 1);
  // torch 1.13: autograd.grad does not run the leaf's AccumulateGrad, nor its hooks.
  VariableList g = autograd::grad({(x * 3.0).sum()}, {x});
  expect_close(g[0], {3, 3});
  EXPECT_EQ(calls, 1);
}

TEST(Hooks, UndefinedGradientReachesTheHook) {
  // torch 1.13: a, b = x.unbind(0); hooks on both; (a * 2).backward(): b's hook gets None.
  Tensor x = ones_leaf();
  VariableList parts = x.unbind(0);
  std::vector<bool> defined;
  for (const Tensor& p : parts) {
    autograd::register_hook(p, [&](const Tensor& g) {
      defined.push_back(g.defined());
      return Tensor();
    });
  }
  (parts[0] * 2.0).backward();
  EXPECT_EQ(defined, (std::vector<bool>{true, false}));
  expect_close(x.grad(), {2, 0});
}

TEST(Hooks, InPlaceWrites) {
  // torch 1.13: a hook registered before y.mul_(5) sees the gradient of y's old value (15);
  // retain_grad follows the tensor to its new grad_fn (3). A hook registered after the write
  // sees the new value's gradient (torch 2; see Note [Hook order]).
  Tensor x = ones_leaf();
  Tensor y = x * 2.0;
  y.retain_grad();
  std::vector<double> seen;
  autograd::register_hook(y, [&](const Tensor& g) {
    seen.push_back(first(g));
    return Tensor();
  });
  y.mul_(5.0);
  autograd::register_hook(y, [&](const Tensor& g) {
    seen.push_back(first(g));
    return Tensor();
  });
  (y * 3.0).sum().backward();
  EXPECT_EQ(seen, (std::vector<double>{3.0, 15.0}));
  expect_close(y.grad(), {3, 3});
  expect_close(x.grad(), {30, 30});
}

TEST(Hooks, ViewsOfTensorsWrittenInPlace) {
  // torch 1.13: b = x * 1; v = b[:2]; hooks on b and v; v.mul_(3); (b * 1).sum().backward():
  // b's hook sees [3, 3, 1, 1]; v's hook (on v's old grad_fn, no longer in the graph) is not
  // called. A hook registered on v after the write sees v's new gradient.
  Tensor x = testing_util::dev(ones({4}, kFloat64)).requires_grad_();
  Tensor b = x * 1.0;
  Tensor v = b.narrow(0, 0, 2);
  std::vector<std::string> log;
  autograd::register_hook(b, [&](const Tensor& g) {
    log.push_back(str("base ", values(g)[0], values(g)[2]));
    return Tensor();
  });
  autograd::register_hook(v, [&](const Tensor&) {
    log.push_back("view before");
    return Tensor();
  });
  v.mul_(3.0);
  autograd::register_hook(v, [&](const Tensor& g) {
    log.push_back(str("view after ", values(g)[0]));
    return Tensor();
  });
  (b * 1.0 + v.sum()).sum().backward();
  EXPECT_EQ(log, (std::vector<std::string>{"view after 4", "base 151"}));
  expect_close(x.grad(), {15, 15, 1, 1});
}

TEST(Hooks, Errors) {
  Tensor plain = ones({2}, kFloat64);
  std::string msg =
      error_of([&] { autograd::register_hook(plain, [](const Tensor& g) { return g; }); });
  EXPECT_NE(msg.find("cannot register a hook on a tensor that doesn't require gradient"),
            std::string::npos);
  Tensor x = ones_leaf();
  Tensor y = x * 2.0;
  autograd::register_hook(y, [](const Tensor&) { return ones({3}, kFloat64); });
  msg = error_of([&] { y.sum().backward(); });
  EXPECT_NE(msg.find("has changed the size of value"), std::string::npos) << msg;
  Tensor y2 = x * 2.0;
  y2.grad_fn()->register_hook([](const VariableList& gi, const VariableList&) {
    return VariableList{gi[0], gi[0], gi[0]};
  });
  msg = error_of([&] { y2.sum().backward(); });
  EXPECT_NE(msg.find("incorrect number of values (got 3"), std::string::npos) << msg;
  EXPECT_FALSE(x.grad().defined());  // nothing accumulated
}

TEST(Hooks, NoHooksNoCost) {
  Tensor x = ones_leaf();
  Tensor y = x * 2.0;
  EXPECT_EQ(y.grad_fn()->hooks(), nullptr);
  y.retain_grad();  // retain_grad alone does not create hooks
  EXPECT_EQ(y.grad_fn()->hooks(), nullptr);
  RemovableHandle h =
      y.grad_fn()->register_prehook([](const VariableList&) { return VariableList(); });
  EXPECT_NE(y.grad_fn()->hooks(), nullptr);
  h.remove();
  (y * 3.0).sum().backward();
  expect_close(y.grad(), {3, 3});
}

}  // namespace
}  // namespace mutagrad
