// Note [Engine]
// 1. Discovery: an explicit-stack DFS from the roots numbers every reachable node (a flat
//    hash table Node* -> index) and records, per node, the index each next edge leads to.
// 2. Order: Boost.Graph's topological_sort over a compressed-sparse-row copy of those edges
//    (iterative DFS, deterministic: it depends only on discovery order). The walk goes from
//    the roots towards the leaves; a node runs only after every node that feeds it.
// 3. Dependencies: each node counts the edges that feed it; the count must be zero when the
//    node runs (an internal invariant of the order).
// 4. With `outputs` (autograd::grad, backward(inputs=...)) only nodes that lead to one of them
//    run, and Node::should_compute_output() tells formulas which gradients are wanted.
// 5. Each gradient is checked against the receiving input's metadata: summed down to its
//    shape when broadcast (ShapeError otherwise) and cast to its dtype, then added into a
//    per-input buffer. Nodes run in grad mode iff create_graph, so formulas written with
//    differentiable ops build the graph of the gradient.
// 6. The bookkeeping of one call (the arrays above, the order, the run masks) is a GraphTask
//    borrowed from this thread's spares and returned, cleared but with its capacity, at the end:
//    a steady-state training step's backward takes from the heap only what its nodes' formulas
//    allocate and Boost's sort (Note [Small-object pool] in tensor/small_object_pool.h). A
//    nested backward (from a hook or a custom Function) borrows another one.
#include "autograd/engine.h"

#include <algorithm>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/topological_sort.hpp>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/accumulate_grad.h"
#include "autograd/autograd_meta.h"
#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/hooks.h"
#include "autograd/ops/reduce_ops.h"
#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"

namespace mutagrad::autograd {
namespace {

constexpr int32_t kNoTarget = -1;

// Node* -> index: open addressing with linear probing in one array (no allocation per node).
class NodeIndex {
 public:
  NodeIndex() : slots_(kMinSlots, Slot{nullptr, 0}) {}
  // Empty again; keeps its slots unless they are far more than the last graph needed.
  void clear() {
    if (slots_.size() > kMinSlots && slots_.size() > 8 * size_) {
      std::vector<Slot>(kMinSlots, Slot{nullptr, 0}).swap(slots_);
    } else {
      std::fill(slots_.begin(), slots_.end(), Slot{nullptr, 0});
    }
    size_ = 0;
  }
  // {index, inserted}: the existing index of `node`, or `next` after inserting it.
  std::pair<int32_t, bool> emplace(Node* node, int32_t next) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    Slot& slot = slots_[probe(slots_, node)];
    if (slot.node == node) return {slot.index, false};
    slot = Slot{node, next};
    ++size_;
    return {next, true};
  }
  // The index of `node`, or kNoTarget.
  int32_t find(const Node* node) const {
    const Slot& slot = slots_[probe(slots_, node)];
    return slot.node == node ? slot.index : kNoTarget;
  }

 private:
  struct Slot {
    const Node* node;
    int32_t index;
  };
  // The slot holding `node`, or the empty slot where it would go.
  static size_t probe(const std::vector<Slot>& slots, const Node* node) {
    const size_t mask = slots.size() - 1;
    const size_t hash = (reinterpret_cast<uintptr_t>(node) >> 4) * 0x9E3779B97F4A7C15ull;
    size_t i = (hash >> 20) & mask;
    while (slots[i].node != node && slots[i].node != nullptr) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<Slot> bigger(slots_.size() * 2, Slot{nullptr, 0});
    for (const Slot& s : slots_) {
      if (s.node != nullptr) bigger[probe(bigger, s.node)] = s;
    }
    slots_.swap(bigger);
  }
  static constexpr size_t kMinSlots = 64;
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

struct GraphTask {
  std::vector<Node*> nodes;
  NodeIndex index;
  std::vector<int32_t> first_edge;    // per node: its first entry in edge_target
  std::vector<int32_t> edge_target;   // per next edge: the index of the node it leads to
  std::vector<int32_t> input_offset;  // per node: its first slot in `buffers`
  std::vector<int32_t> dependencies;  // per node: edges still to deliver a gradient
  std::vector<Tensor> buffers;        // one per node input
  std::vector<std::pair<int32_t, int32_t>> graph_edges;
  std::vector<int32_t> stack;   // discovery's
  std::vector<int32_t> finish;  // the sort's reverse order
  std::vector<int32_t> order;
  std::vector<char> is_target, reaches, runs;
  std::vector<bool> edge_needed;
  VariableList grads;  // the inputs of the node being run

  void clear() {
    for (auto* v :
         {&first_edge, &edge_target, &input_offset, &dependencies, &stack, &finish, &order}) {
      v->clear();
    }
    nodes.clear();
    index.clear();
    buffers.clear();
    graph_edges.clear();
    is_target.clear();
    reaches.clear();
    runs.clear();
    edge_needed.clear();
    grads.clear();
  }
};

// A GraphTask borrowed from this thread's spares for one call (Note [Engine], 6).
class BorrowedTask {
 public:
  BorrowedTask() {
    if (spares().empty()) {
      task_ = std::make_unique<GraphTask>();
    } else {
      task_ = std::move(spares().back());
      spares().pop_back();
    }
  }
  ~BorrowedTask() {
    task_->clear();
    // A huge graph's arrays are not kept: one big backward must not hold its memory per thread.
    if (spares().size() < kMaxSpares && task_->nodes.capacity() <= kMaxKeptNodes) {
      spares().push_back(std::move(task_));
    }
  }
  BorrowedTask(const BorrowedTask&) = delete;
  BorrowedTask& operator=(const BorrowedTask&) = delete;
  GraphTask& operator*() { return *task_; }

 private:
  static constexpr size_t kMaxSpares = 4;
  static constexpr size_t kMaxKeptNodes = 1 << 16;
  static std::vector<std::unique_ptr<GraphTask>>& spares() {
    thread_local std::vector<std::unique_ptr<GraphTask>> s;
    return s;
  }
  std::unique_ptr<GraphTask> task_;
};

int32_t add_node(GraphTask& task, Node* node, std::vector<int32_t>& stack) {
  auto [index, inserted] = task.index.emplace(node, static_cast<int32_t>(task.nodes.size()));
  if (inserted) {
    task.nodes.push_back(node);
    task.first_edge.push_back(0);
    const int32_t offset =
        task.input_offset.empty()
            ? 0
            : task.input_offset.back() +
                  static_cast<int32_t>(task.nodes[task.nodes.size() - 2]->num_inputs());
    task.input_offset.push_back(offset);
    task.dependencies.push_back(0);
    stack.push_back(index);
  }
  return index;
}

void discover(GraphTask& task, const std::vector<Edge>& roots) {
  std::vector<int32_t>& stack = task.stack;
  for (const Edge& root : roots) {
    if (root.is_valid()) add_node(task, root.function.get(), stack);
  }
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    Node* node = task.nodes[static_cast<size_t>(v)];
    task.first_edge[static_cast<size_t>(v)] = static_cast<int32_t>(task.edge_target.size());
    for (const Edge& edge : node->next_edges()) {
      if (!edge.is_valid()) {
        task.edge_target.push_back(kNoTarget);
        continue;
      }
      const int32_t w = add_node(task, edge.function.get(), stack);
      task.edge_target.push_back(w);
      task.graph_edges.emplace_back(v, w);
      ++task.dependencies[static_cast<size_t>(w)];
    }
  }
  const size_t n = task.nodes.size();
  const int32_t total =
      n == 0 ? 0 : task.input_offset.back() + static_cast<int32_t>(task.nodes.back()->num_inputs());
  task.buffers.resize(static_cast<size_t>(total));
}

// Nodes in an order where every node comes after all nodes with an edge into it: task.order.
void topological_order(GraphTask& task) {
  using Graph = boost::compressed_sparse_row_graph<boost::directedS>;
  const size_t n = task.nodes.size();
  Graph graph(boost::edges_are_unsorted_multi_pass, task.graph_edges.begin(),
              task.graph_edges.end(), n);
  task.finish.reserve(n);  // reverse topological order
  boost::topological_sort(graph, std::back_inserter(task.finish));
  task.order.assign(task.finish.rbegin(), task.finish.rend());
}

// A gradient for `metadata`: reduced over broadcast dims and cast; ShapeError if impossible.
Tensor conform(Tensor grad, const InputMetadata& metadata, const Node& producer, size_t index) {
  if (!grad.sizes().equals(metadata.shape)) {
    if (!native::is_expandable_to(metadata.shape, grad.sizes())) {
      throw ShapeError(str("Function ", producer.name(), " returned an invalid gradient at index ",
                           index, " - got ", grad.sizes(), " but expected shape compatible with ",
                           IntArrayRef(metadata.shape),
                           "; this is a bug in that node's backward formula"));
    }
    grad = sum_to(grad, metadata.shape);
  }
  if (grad.dtype() != metadata.dtype) grad = grad.to(metadata.dtype);
  return grad;
}

void add_to_buffer(Tensor& slot, Tensor grad) {
  if (!slot.defined()) {
    slot = std::move(grad);
  } else {
    slot = slot.add(grad);
  }
}

void store_retained_grads(const Node& node, const Tensor* inputs) {
  for (const Node::RetainedGrad& retained : node.retained_grads()) {
    std::shared_ptr<TensorImpl> impl = retained.tensor.lock();
    const Tensor& grad = inputs[retained.input_nr];
    if (impl == nullptr || !grad.defined()) continue;
    AutogradMeta& meta = materialize_autograd_meta(Tensor(impl));
    meta.grad_ = meta.grad_.defined() ? meta.grad_.add(grad) : grad.clone();
  }
}

}  // namespace

VariableList execute(const std::vector<Edge>& roots, VariableList root_grads, bool keep_graph,
                     bool create_graph, bool accumulate, const std::vector<Edge>& outputs) {
  MG_INTERNAL_ASSERT(roots.size() == root_grads.size(), "one gradient per root");
  BorrowedTask borrowed;
  GraphTask& task = *borrowed;
  discover(task, roots);
  const size_t n = task.nodes.size();
  topological_order(task);
  const std::vector<int32_t>& order = task.order;

  // Which nodes run: all, or (with outputs) those from which an output's node is reachable.
  const bool filtered = !outputs.empty();
  std::vector<char>& is_target = task.is_target;
  std::vector<char>& reaches = task.reaches;
  std::vector<char>& runs = task.runs;
  is_target.assign(n, 0);
  reaches.assign(n, 0);
  runs.assign(n, 1);
  std::vector<bool>& edge_needed = task.edge_needed;
  if (filtered) {
    for (const Edge& out : outputs) {
      if (!out.is_valid()) continue;
      const int32_t v = task.index.find(out.function.get());
      if (v != kNoTarget) is_target[static_cast<size_t>(v)] = 1;
    }
    edge_needed.assign(task.edge_target.size(), false);
    for (size_t k = n; k-- > 0;) {  // leaves first
      const size_t v = static_cast<size_t>(order[k]);
      const size_t first = static_cast<size_t>(task.first_edge[v]);
      for (size_t i = 0; i < task.nodes[v]->num_outputs(); ++i) {
        const int32_t w = task.edge_target[first + i];
        if (w == kNoTarget) continue;
        const bool needed = is_target[static_cast<size_t>(w)] || reaches[static_cast<size_t>(w)];
        edge_needed[first + i] = needed;
        reaches[v] = reaches[v] || needed;
      }
      const bool leaf_target =
          accumulate && is_target[v] && dynamic_cast<AccumulateGrad*>(task.nodes[v]);
      runs[v] = reaches[v] || leaf_target;
    }
  } else if (!accumulate) {
    for (size_t v = 0; v < n; ++v) runs[v] = !dynamic_cast<AccumulateGrad*>(task.nodes[v]);
  }

  for (size_t r = 0; r < roots.size(); ++r) {
    if (!roots[r].is_valid() || !root_grads[r].defined()) continue;
    const int32_t v = task.index.find(roots[r].function.get());
    add_to_buffer(task.buffers[static_cast<size_t>(task.input_offset[static_cast<size_t>(v)]) +
                               roots[r].input_nr],
                  std::move(root_grads[r]));
  }

  VariableList captured(outputs.size());
  AutoGradMode grad_mode(create_graph);
  std::unique_ptr<bool[]> mask;
  for (const int32_t vi : order) {
    const size_t v = static_cast<size_t>(vi);
    Node* node = task.nodes[v];
    MG_INTERNAL_ASSERT(task.dependencies[v] == 0, node->name(), " ran before all its inputs");
    Tensor* inputs = task.buffers.data() + task.input_offset[v];
    const size_t num_inputs = node->num_inputs();
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o].function.get() == node) captured[o] = inputs[outputs[o].input_nr];
    }
    const size_t first = static_cast<size_t>(task.first_edge[v]);
    const size_t num_outputs = node->num_outputs();
    auto deliver_nothing = [&] {
      for (size_t i = 0; i < num_outputs; ++i) {
        const int32_t w = task.edge_target[first + i];
        if (w != kNoTarget) --task.dependencies[static_cast<size_t>(w)];
      }
      for (size_t i = 0; i < num_inputs; ++i) inputs[i] = Tensor();
    };
    if (!runs[v]) {
      deliver_nothing();
      continue;
    }
    NodeHooks* hooks = node->hooks();  // null unless a hook was registered (autograd/hooks.h)
    if (hooks != nullptr) {
      detail::call_pre_hooks(*node, inputs);  // tensor hooks, pre-hooks and retain_grad, in order
    } else {
      store_retained_grads(*node, inputs);
    }
    bool any_defined = false;
    for (size_t i = 0; i < num_inputs; ++i) any_defined = any_defined || inputs[i].defined();
    if (!any_defined) {
      if (!keep_graph) node->release_variables();
      deliver_nothing();
      continue;
    }
    VariableList& grads = task.grads;  // apply() may keep it (then the next node allocates)
    grads.assign(std::make_move_iterator(inputs), std::make_move_iterator(inputs + num_inputs));
    if (filtered) {
      mask.reset(new bool[num_outputs + 1]);
      for (size_t i = 0; i < num_outputs; ++i) mask[i] = edge_needed[first + i];
    }
    detail::OutputMask& current = detail::current_output_mask();
    const bool* saved_mask = current.needed;
    current.needed = filtered ? mask.get() : nullptr;
    const VariableList hook_grads =
        hooks != nullptr && !hooks->post.empty() ? grads : VariableList();
    VariableList results;
    try {
      results = node->apply(std::move(grads));
      grads.clear();
      if (hooks != nullptr && !hooks->post.empty()) {
        detail::call_post_hooks(*node, results, hook_grads);
      }
    } catch (...) {
      current.needed = saved_mask;
      throw;
    }
    current.needed = saved_mask;
    if (!keep_graph) node->release_variables();
    if (results.size() != num_outputs && !(num_outputs == 0 && results.empty())) {
      MG_INTERNAL_ASSERT(false, "Function ", node->name(), " returned an incorrect number of ",
                         "gradients (expected ", num_outputs, ", got ", results.size(), ")");
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      const int32_t w = task.edge_target[first + i];
      if (w == kNoTarget) continue;
      --task.dependencies[static_cast<size_t>(w)];
      if (!results[i].defined() || (filtered && !edge_needed[first + i])) continue;
      const Edge& edge = node->next_edge(i);
      Tensor grad =
          conform(std::move(results[i]), edge.function->input_metadata(edge.input_nr), *node, i);
      add_to_buffer(task.buffers[static_cast<size_t>(task.input_offset[static_cast<size_t>(w)]) +
                                 edge.input_nr],
                    std::move(grad));
    }
  }
  return captured;
}

std::vector<Node*> execution_order(const std::vector<Edge>& roots) {
  BorrowedTask borrowed;
  GraphTask& task = *borrowed;
  discover(task, roots);
  topological_order(task);
  std::vector<Node*> nodes;
  nodes.reserve(task.nodes.size());
  for (const int32_t v : task.order) {
    nodes.push_back(task.nodes[static_cast<size_t>(v)]);
  }
  return nodes;
}

namespace {

Edge root_edge(const Tensor& root, size_t i) {
  Edge edge = gradient_edge(root);
  if (!edge.is_valid()) {
    throw AutogradError(str("element ", i,
                            " of tensors does not require grad and does not have "
                            "a grad_fn; call requires_grad_() on the leaves you differentiate "
                            "with respect to, outside no_grad mode"));
  }
  return edge;
}

Tensor root_grad(const Tensor& root, const Tensor& given, size_t i) {
  if (given.defined()) {
    if (!given.sizes().equals(root.sizes())) {
      throw ShapeError(str("Mismatch in shape: grad_output[", i, "] has a shape of ", given.sizes(),
                           " and output[", i, "] has a shape of ", root.sizes(),
                           "; pass a gradient of the output's shape"));
    }
    return given;
  }
  if (root.numel() != 1) {
    throw AutogradError(str("grad can be implicitly created only for scalar outputs; output ", i,
                            " has shape ", root.sizes(),
                            ". Pass a gradient of that shape (e.g. ones_like(output))"));
  }
  return ones_like(root);
}

}  // namespace

VariableList run_backward(TensorList roots, TensorList grad_outputs, TensorList inputs,
                          bool keep_graph, bool create_graph, bool accumulate) {
  if (!grad_outputs.empty() && grad_outputs.size() != roots.size()) {
    throw ValueError(str("got ", grad_outputs.size(), " gradients for ", roots.size(),
                         " outputs; pass one gradient per output (or none)"));
  }
  std::vector<Edge> root_edges;
  VariableList root_grads;
  root_edges.reserve(roots.size());
  root_grads.reserve(roots.size());
  for (size_t i = 0; i < roots.size(); ++i) {
    root_edges.push_back(root_edge(roots[i], i));
    root_grads.push_back(root_grad(roots[i], grad_outputs.empty() ? Tensor() : grad_outputs[i], i));
  }
  std::vector<Edge> output_edges;
  output_edges.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge edge = gradient_edge(inputs[i]);
    if (!edge.is_valid()) {
      throw AutogradError(str("One of the differentiated Tensors (input ", i,
                              ") does not require grad; call requires_grad_() on it first"));
    }
    output_edges.push_back(std::move(edge));
  }
  VariableList grads = execute(root_edges, std::move(root_grads), keep_graph, create_graph,
                               accumulate, output_edges);
  if (accumulate) {
    // Leaves were handled by their AccumulateGrad; non-leaf inputs get their gradient here.
    AutoGradMode mode(create_graph);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (grads[i].defined() && !inputs[i].is_leaf()) accumulate_grad(inputs[i], grads[i]);
    }
  }
  return grads;
}

void backward(TensorList roots, TensorList grad_outputs, std::optional<bool> retain_graph,
              bool create_graph, TensorList inputs) {
  run_backward(roots, grad_outputs, inputs, retain_graph.value_or(create_graph), create_graph,
               /*accumulate_grad=*/true);
}

}  // namespace mutagrad::autograd
