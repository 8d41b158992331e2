// AccumulateGrad: the node at the end of every path to a leaf; adds the gradient into .grad.
//
//   Tensor w = randn({3}, gen).requires_grad_();
//   (w * w).sum().backward();      // AccumulateGrad(w) sets w.grad() = 2 * w
//   (w * w).sum().backward();      // ... and adds to it: w.grad() == 4 * w
#pragma once

#include <memory>

#include "autograd/node.h"

namespace mutagrad::autograd {

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(const Tensor& variable);
  const char* name() const override { return "AccumulateGrad"; }
  VariableList apply(VariableList&& grads) override;
  // The leaf; undefined once the user dropped it. Held weakly: a .grad built with
  // create_graph=true may reach this node, and a strong reference would then be a cycle.
  Tensor variable() const { return Tensor(variable_.lock()); }

 private:
  std::weak_ptr<TensorImpl> variable_;
};

// variable.grad += new_grad with PyTorch's rules: the first gradient is stolen when nobody
// else holds it (else cloned); later ones are added in place in no_grad mode and out of place
// (keeping the graph) when grad mode is on (create_graph=true). Thread-safe per variable.
void accumulate_grad(const Tensor& variable, Tensor new_grad);

// Note [Concurrent backward]
// Several threads may run backward through graphs that share a leaf (PyTorch supports it, e.g.
// Hogwild training). What they share is the leaf's AutogradMeta and its AccumulateGrad node:
// - grad_accumulator() creates the node under AutogradMeta::accumulator_mutex_, so every
//   thread gets the same node (a second one would be dropped while in use);
// - accumulate_grad() reads and writes .grad under AutogradMeta::grad_mutex_, so no update is
//   lost; Tensor::grad() / set_grad() take it too, so the handle is never read half-written.
//   The values of .grad read while another thread adds into it in place are not synchronized,
//   as in PyTorch.
// - the version counters bumped by the in-place adds are atomic (Note [Concurrent bumps] in
//   tensor/version_counter.h).
// Not supported: running one graph (retain_graph=true) on two threads at once. Its nodes'
// saved variables are not guarded (PyTorch locks every node that has state for that).

}  // namespace mutagrad::autograd
