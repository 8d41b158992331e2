// Node: one recorded op of the backward graph; Edge: where a gradient goes next.
//
// A Node receives one gradient per output of its forward op ("inputs" of the node, each with
// an InputMetadata: shape, dtype, device) and returns one gradient per next edge (one per
// differentiable input of the forward op). Subclasses are named after PyTorch's
// (MulBackward0, SelectBackward0, CopySlices, AccumulateGrad); see autograd/ops/*.cc.
//
//   class NegBackward0 final : public Node {
//    public:
//     const char* name() const override { return "NegBackward0"; }
//     VariableList apply(VariableList&& grads) override { return {grads[0].neg()}; }
//   };
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <variant>
#include <vector>

#include "tensor/small_vector.h"
#include "tensor/tensor.h"

namespace mutagrad::autograd {

class Node;
class SavedVariable;
struct NodeHooks;       // autograd/hooks.h
class RemovableHandle;  // autograd/hooks.h

using VariableList = std::vector<Tensor>;
// Node hooks (autograd/hooks.h): a pre-hook sees the gradients arriving at the node (one per
// forward output), a post-hook also the gradients it computed; each may return replacements
// (an empty list: keep them).
using FunctionPreHook = std::function<VariableList(const VariableList& grad_outputs)>;
using FunctionPostHook =
    std::function<VariableList(const VariableList& grad_inputs, const VariableList& grad_outputs)>;

// The `input_nr`-th input of `function`; invalid (null function) when no gradient is needed.
struct Edge {
  Edge() = default;
  Edge(std::shared_ptr<Node> fn, uint32_t nr) : function(std::move(fn)), input_nr(nr) {}
  bool is_valid() const { return function != nullptr; }

  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
};
using EdgeList = boost::container::small_vector<Edge, 2>;

// What the gradient arriving at a node input must look like (the forward output's).
struct InputMetadata {
  DimVector shape;
  ScalarType dtype = kFloat32;
  Device device = kCPU;
};

// Receives each saved variable of a node with the name of the field holding it.
class SavedVisitor {
 public:
  virtual ~SavedVisitor() = default;
  virtual void visit(const char* name, SavedVariable& saved) = 0;
};

// A non-tensor argument a node keeps for backward, under torch's name (Python's _saved_<name>:
// dim, keepdim, exponent, self_sym_sizes, ...). A DimVector is a tuple of ints in Python.
using SavedAttribute = std::variant<bool, int64_t, Scalar, DimVector>;
class SavedAttributeVisitor {
 public:
  virtual ~SavedAttributeVisitor() = default;
  virtual void visit(const char* name, const SavedAttribute& value) = 0;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Releases the next edges without recursing down long chains (see autograd/node.cc).
  virtual ~Node();

  // The PyTorch-style name, e.g. "MulBackward0".
  virtual const char* name() const = 0;
  // grads[i] is the gradient of forward output i (undefined: no gradient flowed there, treat as
  // zero). Returns one gradient per next edge; undefined where none is needed or it is zero.
  virtual VariableList apply(VariableList&& grads) = 0;
  // Calls visitor.visit(name, field) for each SavedVariable the node holds.
  virtual void visit_saved(SavedVisitor& visitor) {}
  // Calls visitor.visit(name, value) for each non-tensor argument the node keeps.
  virtual void visit_saved_attributes(SavedAttributeVisitor& visitor) const {}
  // Frees the saved variables (retain_graph=false); a later unpack reports backward-twice.
  void release_variables();

  // ---- Edges (one per differentiable input of the forward op) --------------------------------
  const EdgeList& next_edges() const { return next_edges_; }
  const Edge& next_edge(size_t i) const { return next_edges_[i]; }
  size_t num_outputs() const { return next_edges_.size(); }
  void set_next_edges(EdgeList edges) { next_edges_ = std::move(edges); }
  void add_next_edge(Edge edge) { next_edges_.push_back(std::move(edge)); }
  // Whether the gradient for next edge i is wanted: the edge is valid and, inside the engine,
  // leads to a tensor whose gradient was asked for.
  bool should_compute_output(size_t i) const;
  bool should_compute_any_output() const;

  // ---- Inputs (one per forward output) -------------------------------------------------------
  // Records the shape/dtype/device of a forward output; returns its input_nr.
  uint32_t add_input_metadata(const Tensor& output);
  uint32_t add_input_metadata(IntArrayRef shape, ScalarType dtype, Device device);
  size_t num_inputs() const { return input_metadata_.size(); }
  const InputMetadata& input_metadata(size_t i) const { return input_metadata_[i]; }

  // ---- retain_grad() of non-leaf outputs -----------------------------------------------------
  // The engine stores the gradient of input `input_nr` into `tensor`'s .grad before apply().
  void add_retained_grad(uint32_t input_nr, const std::shared_ptr<TensorImpl>& tensor);
  void remove_retained_grad(const TensorImpl* tensor);
  struct RetainedGrad {
    uint32_t input_nr;
    std::weak_ptr<TensorImpl> tensor;
  };
  const std::vector<RetainedGrad>& retained_grads() const { return retained_grads_; }

  // ---- Hooks (autograd/hooks.h) ----------------------------------------------------------------
  // Null until a hook is registered: without hooks the engine pays one null check per node.
  NodeHooks* hooks() const { return hooks_.get(); }
  const std::shared_ptr<NodeHooks>& shared_hooks() const { return hooks_; }
  void set_hooks(std::shared_ptr<NodeHooks> hooks) { hooks_ = std::move(hooks); }
  RemovableHandle register_prehook(FunctionPreHook hook);
  RemovableHandle register_hook(FunctionPostHook hook);

  // Creation order on the creating thread (increasing), for stable printing; not used for
  // scheduling.
  uint64_t sequence_nr() const { return sequence_nr_; }

 protected:
  EdgeList next_edges_;

 private:
  boost::container::small_vector<InputMetadata, 1> input_metadata_;
  std::vector<RetainedGrad> retained_grads_;
  std::shared_ptr<NodeHooks> hooks_;
  uint64_t sequence_nr_ = next_sequence_nr();

  static uint64_t next_sequence_nr();
};

// Drops one reference to a node; when it is the last, the node (and the chain of nodes that
// only it kept alive) is destroyed iteratively, so a 10^6-long chain cannot overflow the stack.
void release_node(std::shared_ptr<Node>& node);

// Internal: the engine's per-apply mask of wanted outputs (see Node::should_compute_output).
namespace detail {
struct OutputMask {
  const bool* needed = nullptr;  // one flag per next edge of the node being applied, or null
};
OutputMask& current_output_mask();
}  // namespace detail

}  // namespace mutagrad::autograd
