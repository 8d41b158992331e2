// CopySlices: the base's grad_fn after an in-place op wrote through one of its views.
//
// See Note [View + in-place] in autograd/history.h. It wraps the in-place op's node `fn`:
// the gradient of the base is copied, the view's region is replaced by what fn computes for
// the view's old value, and fn's other gradients (e.g. the written value's) pass through.
//
//   Tensor b = x.clone();        // x requires grad
//   b.select(0, 1).mul_(w);      // b.grad_fn()->name() == "CopySlices" (wrapping MulBackward0)
#pragma once

#include <memory>

#include "autograd/autograd_meta.h"
#include "autograd/node.h"

namespace mutagrad::autograd {

class CopySlices final : public Node {
 public:
  // `base`: the view's base, `view`: the view written to, `fn`: the in-place op's node (its
  // next edge 0 is the view's old history, its single input the view's shape).
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<const ViewFn> view_fn,
             std::shared_ptr<Node> fn);
  const char* name() const override { return "CopySlices"; }
  VariableList apply(VariableList&& grads) override;
  void visit_saved(SavedVisitor& visitor) override { fn_->visit_saved(visitor); }
  const std::shared_ptr<Node>& fn() const { return fn_; }

 private:
  DimVector base_sizes_, base_strides_;
  DimVector view_sizes_, view_strides_;
  int64_t view_offset_;  // relative to the base's storage offset
  std::shared_ptr<const ViewFn> view_fn_;
  std::shared_ptr<Node> fn_;
};

}  // namespace mutagrad::autograd
