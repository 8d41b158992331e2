// Graphs free everything when the last handle goes (issue 18): saved tensors and outputs, tensor
// and node hooks, kSnapshot slots, view replay chains (CopySlices), custom Functions, saved-tensor
// hooks and create_graph gradients hold no reference cycle. The oracle is a CPU allocator that
// counts live buffers (back to zero once the handles are dropped) and weak pointers to every node
// of the graph (all expired). Also run under --config=asan, whose LeakSanitizer
// (detect_leaks=1 in .bazelrc) reports any cycle this missed at exit.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <unordered_set>
#include <vector>

#include "autograd/custom_function.h"
#include "autograd/mutation_policy.h"
#include "autograd/saved_tensor_hooks.h"
#include "grad_test_util.h"
#include "tensor/backend.h"
#include "tensor/cpu/cpu_backend.h"

namespace mutagrad {
namespace {

using autograd::AutogradContext;
using autograd::Function;
using autograd::Node;
using autograd::VariableList;
using indexing::Slice;

// A CPU allocator whose buffers decrement `live` when freed.
class LiveCountingAllocator : public Allocator {
 public:
  std::shared_ptr<void> allocate(size_t nbytes) override {
    // Counts itself: constructed once, in place (a temporary would decrement on its way out).
    struct Buffer {
      Buffer(std::shared_ptr<void> m, std::atomic<int64_t>* l) : memory(std::move(m)), live(l) {
        live->fetch_add(1, std::memory_order_relaxed);
      }
      ~Buffer() { live->fetch_sub(1, std::memory_order_relaxed); }
      Buffer(const Buffer&) = delete;
      Buffer& operator=(const Buffer&) = delete;
      std::shared_ptr<void> memory;
      std::atomic<int64_t>* live;
    };
    std::shared_ptr<void> memory = inner_.allocate(nbytes);
    void* data = memory.get();
    // Aliasing constructor: the buffer's address, owned by the Buffer that counts it.
    return std::shared_ptr<void>(std::make_shared<Buffer>(std::move(memory), &live), data);
  }
  std::atomic<int64_t> live{0};

 private:
  cpu::CpuAllocator inner_;
};

class LiveCountingCpuBackend : public cpu::CpuBackend {
 public:
  Allocator& allocator() override { return counting; }
  LiveCountingAllocator counting;
};

// Weak pointers to every node reachable from `roots` (an explicit stack, no recursion).
std::vector<std::weak_ptr<Node>> graph_of(const std::vector<Tensor>& roots) {
  std::vector<std::weak_ptr<Node>> out;
  std::unordered_set<const Node*> seen;
  std::vector<std::shared_ptr<Node>> stack;
  for (const Tensor& r : roots) {
    if (r.grad_fn()) stack.push_back(r.grad_fn());
  }
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    out.push_back(n);
    for (const autograd::Edge& e : n->next_edges()) {
      if (e.function) stack.push_back(e.function);
    }
  }
  return out;
}

class Leaks : public ::testing::Test {
 protected:
  void SetUp() override { register_backend(DeviceType::CPU, &backend_); }
  void TearDown() override { register_backend(DeviceType::CPU, &cpu::cpu_backend()); }

  int64_t live() const { return backend_.counting.live.load(); }

  // Runs build(), which returns the roots of the graphs it made; when they (and everything
  // build() held) are gone, every buffer and every node must be freed.
  template <typename Build>
  void expect_freed(Build build) {
    ASSERT_EQ(live(), 0);
    std::vector<std::weak_ptr<Node>> nodes;
    {
      std::vector<Tensor> roots = build();
      nodes = graph_of(roots);
      ASSERT_GT(live(), 0) << "the graph allocated nothing: not a test";
    }
    EXPECT_EQ(live(), 0) << "buffers still alive after the last handle went";
    size_t alive = 0;
    for (const auto& n : nodes) alive += n.expired() ? 0 : 1;
    EXPECT_EQ(alive, 0u) << "of " << nodes.size() << " nodes";
    EXPECT_EQ(autograd::num_snapshot_slots(), 0);
  }

  LiveCountingCpuBackend backend_;
};

Tensor leaf_of(IntArrayRef sizes, double value) {
  return full(sizes, value, kFloat64).requires_grad_();
}

TEST_F(Leaks, TheOracleSeesACycle) {
  // A hook that captures its own tensor is a cycle (in PyTorch too): the counts must show it,
  // and removing the hook must free everything.
  autograd::RemovableHandle handle;
  std::weak_ptr<Node> node;
  {
    Tensor a = leaf_of({4}, 1.0);
    Tensor h = a * 2.0;
    handle = h.register_hook([h](const Tensor& g) { return g; });
    node = h.grad_fn();
  }
  EXPECT_GT(live(), 0);
  EXPECT_FALSE(node.expired());
  handle.remove();
  EXPECT_EQ(live(), 0);
  EXPECT_TRUE(node.expired());
}

TEST_F(Leaks, SavedInputsAndOutputs) {
  // exp and sigmoid save their output, mul both inputs; unused, after backward, after a
  // retained backward.
  for (int mode = 0; mode < 3; ++mode) {
    expect_freed([&] {
      Tensor a = leaf_of({3, 4}, 0.5);
      Tensor h = a.exp();
      Tensor loss = (h * h).sum() + h.sigmoid().sum() + (a * h).mean();
      if (mode == 1) loss.backward();
      if (mode == 2) loss.backward(Tensor(), /*retain_graph=*/true);
      return std::vector<Tensor>{loss, a};
    });
  }
}

TEST_F(Leaks, TensorAndNodeHooks) {
  expect_freed([&] {
    Tensor a = leaf_of({4}, 2.0);
    Tensor scale = full({4}, 3.0, kFloat64);
    Tensor h = a * a;
    h.retain_grad();
    h.register_hook([scale](const Tensor& g) { return g * scale; });  // owns a tensor
    a.register_hook([](const Tensor& g) { return g + 1.0; });
    Tensor loss = h.sum();
    loss.grad_fn()->register_hook(
        [scale](const VariableList& in, const VariableList&) { return in; });
    loss.backward(Tensor(), /*retain_graph=*/true);
    return std::vector<Tensor>{loss, h, a};
  });
}

TEST_F(Leaks, SnapshotSlots) {
  expect_freed([&] {
    Tensor a = leaf_of({5}, 1.5);
    MutationPolicyGuard guard(MutationPolicy::kSnapshot);
    Tensor h = a * 2.0;
    Tensor written = (h * h).sum();  // its saved h is snapshotted by the write below
    Tensor kept = (h.exp()).sum();   // its saved output is not written
    h.add_(1.0);
    EXPECT_GT(autograd::num_snapshot_slots(), 0);
    written.backward();
    return std::vector<Tensor>{written, kept, h, a};
  });
}

TEST_F(Leaks, ViewReplayChains) {
  // In-place writes through views of views of a non-leaf: CopySlices on the base, the views'
  // grad_fn regenerated by replaying the view functions, saved outputs of in-place ops on views.
  expect_freed([&] {
    Tensor a = leaf_of({4, 3}, 0.25);
    Tensor base = a * 1.0;
    Tensor rows = base.narrow(0, 1, 2);
    Tensor col = rows.select(1, 0);
    col.mul_(2.0);
    rows.set_item_({Slice(), 2}, 5.0);
    Tensor v = base.index({Slice(0, 2)}).t();
    v.exp_();  // saves its output, a view
    EXPECT_TRUE(col.grad_fn()) << "replayed after the writes";
    Tensor loss = (base * base).sum() + rows.sum() + col.sum();
    loss.backward(Tensor(), /*retain_graph=*/true);
    return std::vector<Tensor>{loss, base, rows, col, v, a};
  });
}

// y = x * k with x and y saved; and an in-place twin that marks its input dirty.
struct Scale : Function<Scale> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double k) {
    Tensor y = x * k;
    ctx->save_for_backward({x, y});
    ctx->saved_data["k"] = k;
    return y;
  }
  static VariableList backward(AutogradContext* ctx, VariableList grads) {
    VariableList s = ctx->get_saved_variables();
    return {grads[0] * ctx->saved_data["k"].to_double() + s[1] * 0.0, Tensor()};
  }
};

struct ScaleInPlace : Function<ScaleInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double k) {
    ctx->mark_dirty({x});
    x.mul_(k);
    ctx->save_for_backward({x});
    ctx->saved_data["k"] = k;
    return x;
  }
  static VariableList backward(AutogradContext* ctx, VariableList grads) {
    return {grads[0] * ctx->saved_data["k"].to_double(), Tensor()};
  }
};

TEST_F(Leaks, CustomFunctionsSavingInputsAndOutputs) {
  expect_freed([&] {
    Tensor a = leaf_of({3}, 1.0);
    Tensor y = Scale::apply(a, 2.0);
    Tensor z = ScaleInPlace::apply(y * 1.0, 3.0);
    Tensor loss = (z * y).sum();
    loss.backward(Tensor(), /*retain_graph=*/true);
    EXPECT_EQ(testing_util::values(a.grad()), std::vector<double>(3, 24.0));  // d(6a * 2a)/da
    return std::vector<Tensor>{loss, z, y, a};
  });
}

TEST_F(Leaks, SavedTensorHooksAndCreateGraph) {
  expect_freed([&] {
    Tensor a = leaf_of({3}, 2.0);
    Tensor loss;
    {
      autograd::SavedTensorHooksGuard hooks(
          [](const Tensor& t) -> std::any { return t.clone(); },
          [](const std::any& p) { return std::any_cast<Tensor>(p); });
      loss = (a * a * a).sum();
    }
    // .grad with a graph (create_graph): AccumulateGrad holds its leaf weakly, so no cycle.
    loss.backward(Tensor(), /*retain_graph=*/true, /*create_graph=*/true);
    Tensor g = a.grad();
    VariableList gg = autograd::grad({g.sum()}, {a}, {}, /*retain_graph=*/true,
                                     /*create_graph=*/true);
    EXPECT_EQ(testing_util::values(gg[0]), std::vector<double>(3, 12.0));  // 6a
    return std::vector<Tensor>{loss, g, gg[0], a};
  });
}

}  // namespace
}  // namespace mutagrad
