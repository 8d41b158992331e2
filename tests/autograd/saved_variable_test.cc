// SavedVariable: the staleness error (PyTorch's text plus the write's op and file:line and the
// node that needed the tensor), and no reference cycle through saved outputs.
#include "autograd/saved_variable.h"

#include <set>
#include <vector>

#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/tensor_names.h"
#include "cuda/cuda.h"
#include "grad_test_util.h"
#include "tensor/cpu/cpu_allocator.h"

namespace mutagrad {
namespace {

using testing_util::dev;

using autograd::AutogradError;
using autograd::VariableList;
using testing_util::leaf;

std::string backward_error(const Tensor& loss) {
  try {
    loss.backward();
  } catch (const AutogradError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(SavedVariable, StaleSavedOutputNamesTheWriteAndTheNode) {
  Tensor x = dev(tensor({1.0f, 2.0f, 3.0f})).requires_grad_();
  Tensor y = x.sigmoid();
  const int line = __LINE__ + 1;
  y.mul_(2.0);
  const std::string msg = backward_error(y.sum());
  EXPECT_EQ(msg.rfind("one of the variables needed for gradient computation has been modified by "
                      "an inplace operation: [torch.FloatTensor [3]], which is output 0 of "
                      "SigmoidBackward0, is at version 1; expected version 0 instead.",
                      0),
            0u)
      << msg;
  EXPECT_TRUE(contains(msg, "The first in-place write after it was saved is mul_ at " +
                                std::string(__FILE__) + ":" + std::to_string(line) + "."))
      << msg;
  EXPECT_TRUE(contains(msg, "SigmoidBackward0 saved it and needs it to compute gradients.")) << msg;
  EXPECT_TRUE(contains(msg, "Hint:")) << msg;
}

TEST(SavedVariable, StaleSavedInputOfANonLeaf) {
  Tensor x = leaf({2}, 1);
  Tensor w = leaf({2}, 2);
  Tensor h = x * 1.0;
  Tensor z = h * w;  // MulBackward0 saves h (and w)
  h.add_(1.0);
  const std::string msg = backward_error(z.sum());
  EXPECT_TRUE(contains(msg,
                       "[torch.DoubleTensor [2]], which is output 0 of AddBackward1, is at "
                       "version 1; expected version 0 instead."))
      << msg;
  EXPECT_TRUE(contains(msg, "is add_ at ")) << msg;
  EXPECT_TRUE(contains(msg, "MulBackward0 saved it")) << msg;
}

TEST(SavedVariable, StaleLeafModifiedUnderNoGrad) {
  Tensor x = leaf({2}, 3);
  Tensor z = x * x;
  {
    NoGradGuard guard;
    x.zero_();
    x.add_(1.0);
  }
  const std::string msg = backward_error(z.sum());
  // A leaf has no creator: no "which is output ..." part; the FIRST write after the save is named.
  EXPECT_TRUE(contains(msg,
                       "[torch.DoubleTensor [2]] is at version 2; expected version 0 "
                       "instead. The first in-place write after it was saved is zero_ at "))
      << msg;
}

TEST(SavedVariable, WritesThroughAnotherViewAlsoInvalidate) {
  Tensor x = leaf({2, 2}, 4);
  Tensor y = x * 1.0;
  Tensor z = y.exp();  // saves its result
  z.select(0, 1).fill_(0.0);
  const std::string msg = backward_error(y.sum() + z.sum());
  EXPECT_TRUE(contains(msg, "is fill_ at ")) << msg;
  EXPECT_TRUE(contains(msg, "ExpBackward0 saved it")) << msg;
}

TEST(SavedVariable, TooManyWritesAgoIsSaidPlainly) {
  Tensor x = leaf({2}, 5);
  Tensor h = x * 1.0;
  Tensor z = h.tanh();
  for (int i = 0; i < 9; ++i) z.mul_(1.0);
  const std::string msg = backward_error(z.sum());
  EXPECT_TRUE(contains(msg, "is at version 9; expected version 0 instead.")) << msg;
  EXPECT_TRUE(contains(msg, "too old to be remembered")) << msg;
}

TEST(SavedVariable, SavedLeafIsAnAliasThatAccumulatesIntoTheLeaf) {
  Tensor x = leaf({3}, 9);
  autograd::Edge edge = autograd::gradient_edge(x);  // as the saving node's edge keeps it alive
  autograd::SavedVariable saved(x, /*is_output=*/false);
  Tensor unpacked = saved.unpack(nullptr);
  EXPECT_FALSE(unpacked.is_same(x));  // not the leaf's handle: no cycle through x.grad()
  EXPECT_TRUE(unpacked.is_alias_of(x));
  ASSERT_TRUE(unpacked.requires_grad());
  (unpacked * 2.0).sum().backward();
  testing_util::expect_close(x.grad(), {2, 2, 2});
  NoGradGuard guard;
  EXPECT_FALSE(saved.unpack(nullptr).requires_grad());
}

TEST(SavedVariable, UnpackReturnsTheSavedTensorWhenNothingChanged) {
  Tensor t = leaf({3}, 6) * 1.0;
  autograd::SavedVariable saved(t, /*is_output=*/false);
  EXPECT_TRUE(saved.unpack(nullptr).is_same(t));
  EXPECT_EQ(saved.saved_version(), 0u);
  saved.reset_data();
  EXPECT_TRUE(saved.is_released());
  EXPECT_THROW(saved.unpack(nullptr), AutogradError);
  EXPECT_FALSE(autograd::SavedVariable().unpack(nullptr).defined());
}

TEST(SavedVariable, SavedOutputDoesNotKeepItsNodeAlive) {
  std::weak_ptr<autograd::Node> node;
  std::weak_ptr<TensorImpl> output;
  {
    Tensor x = leaf({3}, 7);
    Tensor y = x.exp();  // ExpBackward0 saves y itself
    node = y.grad_fn();
    output = y.impl_ptr();
    EXPECT_FALSE(node.expired());
  }
  EXPECT_TRUE(node.expired());
  EXPECT_TRUE(output.expired());
}

TEST(SavedVariable, GraphIsFreedWithItsLastTensor) {
  std::weak_ptr<autograd::Node> first;
  std::weak_ptr<autograd::Node> last;
  {
    Tensor x = leaf({3}, 8);
    Tensor y = x.sigmoid();
    first = y.grad_fn();
    for (int i = 0; i < 10; ++i) y = y.tanh() * y;
    last = y.grad_fn();
    Tensor g = autograd::grad({y.sum()}, {x}, {}, true, /*create_graph=*/true)[0];
    EXPECT_TRUE(g.requires_grad());
  }
  EXPECT_TRUE(first.expired());
  EXPECT_TRUE(last.expired());
}

// Note [Tensor names]: the name given to a tensor (nn.Module's parameter paths) appears in the
// stale error for the tensor and for its views, and never for another tensor.
TEST(SavedVariable, StaleErrorShowsTheTensorsName) {
  Tensor w = dev(tensor({{1.0f, 2.0f}, {3.0f, 4.0f}})).requires_grad_();
  autograd::set_tensor_name(w, "fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w), "fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w.t()), "a view of fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w.detach()), "fc1.weight");  // same memory and geometry
  EXPECT_EQ(autograd::tensor_name_of(w.select(0, 1)), "a view of fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w.clone()), std::nullopt);
  Tensor x = dev(tensor({{1.0f, 1.0f}})).requires_grad_();
  Tensor direct = (w * w).sum();                // saves w itself
  Tensor through_view = x.matmul(w.t()).sum();  // saves w.t()
  {
    NoGradGuard no_grad;
    w.mul_(2.0);
  }
  EXPECT_TRUE(contains(backward_error(direct), "[torch.FloatTensor [2, 2]] (fc1.weight) is at"))
      << backward_error(direct);
  EXPECT_TRUE(contains(backward_error(through_view),
                       "[torch.FloatTensor [2, 2]] (a view of fc1.weight), which is output 0"))
      << backward_error(through_view);
  // Renaming replaces the name; an empty name removes it.
  autograd::set_tensor_name(w, "encoder.fc1.weight");
  EXPECT_EQ(autograd::tensor_name_of(w), "encoder.fc1.weight");
  autograd::set_tensor_name(w, "");
  EXPECT_EQ(autograd::tensor_name_of(w), std::nullopt);
}

TEST(SavedVariable, NameOfADeadTensorIsNeverShown) {
  for (int i = 0; i < 100; ++i) {  // counters reuse addresses: a dead name must not leak
    {
      Tensor named = dev(zeros({2}));
      autograd::set_tensor_name(named, "gone");
    }
    Tensor other = dev(zeros({2}));
    EXPECT_EQ(autograd::tensor_name_of(other), std::nullopt);
  }
}

// ---- Saved tangents hold no reference cycle (issue 40) -----------------------------------------
// A node saves the tangents of what it saves (forward-over-reverse); a tangent computed from
// primals that require grad has a reverse history of its own, which can lead back to the node
// that saved it (a later write into a base rebases its views' tangents; a tangent formula saves
// the op's result before the result gets its node, and a tangent before it is written). Every
// forward-AD program shape below, run on primals that require grad and dropped without
// backward, must leave no node alive, in its dual level already, and no buffer once the level
// is exited. Oracle: the test device's allocator (bytes of live blocks, measured after a
// warm-up run) and weak pointers to every node reachable from the results and their tangents.

int64_t device_bytes() {
  return testing_util::test_device().is_cpu() ? cpu::memory_allocated() : cuda::memory_allocated();
}

// Weak pointers to every node reachable from the grad_fns of `roots` and of their tangents.
void collect_graph(const std::vector<Tensor>& roots,
                   std::vector<std::weak_ptr<autograd::Node>>* out) {
  std::vector<std::shared_ptr<autograd::Node>> stack;
  for (const Tensor& r : roots) {
    if (!r.defined()) continue;
    if (r.grad_fn()) stack.push_back(r.grad_fn());
    if (!autograd::fwd::enabled()) continue;
    for (int64_t level : autograd::fwd::active_levels()) {
      const Tensor t = autograd::fwd::tangent(r, level);
      if (t.defined() && t.grad_fn()) stack.push_back(t.grad_fn());
    }
  }
  std::set<const autograd::Node*> seen;
  while (!stack.empty()) {
    std::shared_ptr<autograd::Node> n = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    out->push_back(n);
    for (const autograd::Edge& e : n->next_edges()) {
      if (e.function) stack.push_back(e.function);
    }
  }
}

size_t count_alive(const std::vector<std::weak_ptr<autograd::Node>>& nodes) {
  size_t alive = 0;
  for (const auto& n : nodes) alive += n.expired() ? 0 : 1;
  return alive;
}

// Runs `program` (given a primal that requires grad and a direction) in a dual level. Once its
// handles are dropped no node it made may be alive, even before the level is exited (Note
// [Saved tangents hold no cycle]); once the level is exited, no buffer either.
template <typename Program>
void expect_forward_ad_freed(const char* what, Program program) {
  auto run = [&](std::vector<std::weak_ptr<autograd::Node>>* nodes) {
    forward_ad::dual_level level;
    {
      Tensor x = leaf({3, 4}, 40, 0.5, 1.5);
      Tensor v = leaf({3, 4}, 41).detach();
      std::vector<Tensor> roots = program(x, v);
      collect_graph(roots, nodes);
      EXPECT_FALSE(nodes->empty()) << what << ": the program made no graph: not a test";
    }
    EXPECT_EQ(count_alive(*nodes), 0u)
        << what << ": of " << nodes->size() << " nodes, alive in the level";
  };
  std::vector<std::weak_ptr<autograd::Node>> warm_up;
  run(&warm_up);  // lazily made constants and caches stay; they are not leaks
  const int64_t before = device_bytes();
  std::vector<std::weak_ptr<autograd::Node>> nodes;
  run(&nodes);
  EXPECT_EQ(count_alive(nodes), 0u) << what << ": of " << nodes.size() << " nodes";
  EXPECT_EQ(device_bytes(), before) << what << ": bytes still allocated";
}

using testing_util::Cube;  // y = x^3 with a jvp formula (a custom Function's forward AD)

using forward_ad::make_dual;
using forward_ad::unpack_dual;

TEST(SavedVariable, SavedTangentsHoldNoCycle) {
  expect_forward_ad_freed("a saved input's tangent", [](const Tensor& x, const Tensor& v) {
    Tensor d = make_dual(x * 1.0, v);
    Tensor y = d * d * x;  // MulBackward0 saves d and its tangent
    return std::vector<Tensor>{y.sum()};
  });
  expect_forward_ad_freed("a saved output's tangent", [](const Tensor& x, const Tensor& v) {
    Tensor d = make_dual(x.clone(), v);
    // Each saves its result, whose tangent is computed from that result.
    Tensor y = d.exp() + d.sigmoid() + d.tanh() + d.sqrt();
    return std::vector<Tensor>{(y * y).sum()};
  });
  expect_forward_ad_freed("a write through a view (CopySlices)", [](const Tensor& x,
                                                                    const Tensor& v) {
    Tensor base = make_dual(x.clone(), v);
    Tensor row = base.select(0, 0);
    Tensor m = row * row;  // saves the view and its tangent (a view of the base's tangent)
    base.select(0, 1).copy_(m.exp());
    base.select(0, 2).copy_(m * row);  // its tangent's history reaches m's node, which saved row
    row.mul_(m);                       // in place on the saved view: the base's CopySlices
    Tensor w = base.narrow(0, 1, 2);
    w.sigmoid_();  // saves its result, a view written in place
    return std::vector<Tensor>{m, base.sum()};
  });
  expect_forward_ad_freed("an in-place op on a dual with an operand that requires grad",
                          [](const Tensor& x, const Tensor& v) {
                            Tensor d = make_dual(x.clone(), v);
                            d.mul_(x);  // its tangent formula saves d's tangent, then writes it
                            return std::vector<Tensor>{d.sum()};
                          });
  expect_forward_ad_freed("a plain tensor saved, then given a history in place",
                          [](const Tensor& x, const Tensor& v) {
                            Tensor t = v * 1.0;  // no history: saved by MulBackward0 below
                            Tensor y = t * x;
                            t.add_(y);  // now t's history leads to that node
                            return std::vector<Tensor>{t.sum()};
                          });
  expect_forward_ad_freed("a dual written into a plain tensor",
                          [](const Tensor& x, const Tensor& v) {
                            Tensor plain = x * 2.0;
                            Tensor d = make_dual(x.clone(), v).exp();
                            plain.narrow(0, 0, 2).copy_(d.narrow(0, 1, 2));
                            return std::vector<Tensor>{(plain * plain).sum()};
                          });
  expect_forward_ad_freed("gradcheck's program, the leaf itself dual",
                          [](const Tensor& x, const Tensor& v) {
                            Tensor d = make_dual(x, v);
                            Tensor y = d * (x * 2.0);
                            y.narrow(0, 1, 2).mul_(d.narrow(0, 0, 2));
                            return std::vector<Tensor>{y.exp(), Cube<>::apply(y)};
                          });
  expect_forward_ad_freed("nested levels", [](const Tensor& x, const Tensor& v) {
    Tensor d = make_dual(x.clone(), v);
    forward_ad::dual_level inner;
    Tensor dd = make_dual(d.exp(), v * 2.0);
    Tensor y = (dd.tanh() * d).sum();
    Tensor t_inner = unpack_dual(y).tangent;  // has outer tangents and a history
    return std::vector<Tensor>{y, t_inner, unpack_dual(t_inner, 0).tangent};
  });
  expect_forward_ad_freed("forward-over-reverse", [](const Tensor& x, const Tensor& v) {
    Tensor d = make_dual(x.clone(), v);
    Tensor y = (d.exp() * d.sigmoid()).sum();
    Tensor g = autograd::grad({y}, {d}, {}, true, /*create_graph=*/true)[0];
    Tensor hv = unpack_dual(g).tangent;  // H v, itself differentiable
    return std::vector<Tensor>{y, g, hv, (hv * hv).sum()};
  });
}

}  // namespace
}  // namespace mutagrad
