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
// (keeping the graph) when grad mode is on (create_graph=true).
void accumulate_grad(const Tensor& variable, Tensor new_grad);

}  // namespace mutagrad::autograd
