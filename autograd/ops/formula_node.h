// Internal: a backward node named as PyTorch's whose formula is a function of differentiable
// ops over its saved tensors, so it differentiates again (the nn functional ops use it:
// nn_activation_ops.cc, normalization_ops.cc, nn_misc_ops.cc, regression_loss_ops.cc).
//
//   auto node = make_formula_node("GeluBackward0", {self},
//       [](const Tensor& g, const SavedList& s, const Node&) { return VariableList{g * ...}; });
//   node->save("self", self);
//   set_history(result, node);
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/saved_variable.h"

namespace mutagrad::autograd {

// The saved tensors unpacked, in the order saved (undefined where an undefined one was saved).
using SavedList = std::vector<Tensor>;

class FormulaNode final : public Node {
 public:
  // grad: the gradient of output 0 (defined); returns one gradient per next edge.
  using Formula =
      std::function<VariableList(const Tensor& grad, const SavedList& saved, const Node& node)>;
  FormulaNode(const char* name, Formula formula) : name_(name), formula_(std::move(formula)) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return VariableList(num_outputs());
    SavedList saved;
    saved.reserve(saved_.size());
    for (SavedVariable& s : saved_) saved.push_back(s.unpack(this));
    VariableList out = formula_(grads[0], saved, *this);
    out.resize(num_outputs());
    for (size_t i = 0; i < out.size(); ++i) {
      if (!should_compute_output(i)) out[i] = Tensor();
    }
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    for (size_t i = 0; i < saved_.size(); ++i) v.visit(names_[i], saved_[i]);
  }
  // `name` must outlive the node (a literal). An undefined `t` saves nothing (unpacks undefined).
  void save(const char* name, const Tensor& t, bool is_output = false) {
    names_.push_back(name);
    saved_.push_back(t.defined() ? SavedVariable(t, is_output) : SavedVariable());
  }

 private:
  const char* name_;
  Formula formula_;
  std::vector<const char*> names_;
  std::vector<SavedVariable> saved_;
};

// A FormulaNode whose next edges are the gradient edges of `inputs` (undefined: no edge).
inline std::shared_ptr<FormulaNode> make_formula_node(const char* name, TensorList inputs,
                                                      FormulaNode::Formula formula) {
  auto node = std::make_shared<FormulaNode>(name, std::move(formula));
  EdgeList edges;
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs) edges.push_back(t.defined() ? gradient_edge(t) : Edge());
  node->set_next_edges(std::move(edges));
  return node;
}

}  // namespace mutagrad::autograd
