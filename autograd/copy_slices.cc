#include "autograd/copy_slices.h"

#include "autograd/history.h"
#include "tensor/native/factories.h"

namespace mutagrad::autograd {

CopySlices::CopySlices(const Tensor& base, const Tensor& view,
                       std::shared_ptr<const ViewFn> view_fn, std::shared_ptr<Node> fn)
    : base_sizes_(base.sizes()),
      base_strides_(base.strides()),
      view_sizes_(view.sizes()),
      view_strides_(view.strides()),
      view_offset_(view.storage_offset() - base.storage_offset()),
      view_fn_(std::move(view_fn)),
      fn_(std::move(fn)) {
  next_edges_.reserve(fn_->num_outputs());
  next_edges_.push_back(gradient_edge(base));
  for (size_t i = 1; i < fn_->num_outputs(); ++i) next_edges_.push_back(fn_->next_edge(i));
}

VariableList CopySlices::apply(VariableList&& grads) {
  VariableList out(num_outputs());
  const Tensor& grad = grads[0];
  if (!grad.defined()) return out;
  // The gradient of the base, in the base's geometry so that the view's geometry applies.
  Tensor result =
      empty_strided(base_sizes_, base_strides_, TensorOptions(grad.dtype()).device(grad.device()));
  result.copy_(grad);
  Tensor grad_slice;
  if (view_fn_) {
    // A base that changed its geometry in place since the view was made (t_(), as_strided_())
    // replays the chain elsewhere or not at all: as_strided then (Note [In-place view ops]).
    try {
      grad_slice = (*view_fn_)(result);
    } catch (const Error&) {
    }
    if (grad_slice.defined() &&
        (!grad_slice.sizes().equals(view_sizes_) || !grad_slice.strides().equals(view_strides_) ||
         grad_slice.storage_offset() - result.storage_offset() != view_offset_)) {
      grad_slice = Tensor();
    }
  }
  if (!grad_slice.defined()) {
    grad_slice =
        result.as_strided(view_sizes_, view_strides_, result.storage_offset() + view_offset_);
  }
  VariableList res = fn_->apply({grad_slice.clone()});
  for (size_t i = 0; i < res.size() && i < out.size(); ++i) {
    if (!should_compute_output(i)) continue;
    if (i == 0) {
      // The view's old values were overwritten: their gradient is what fn says.
      if (res[0].defined()) {
        grad_slice.copy_(res[0]);
      } else {
        grad_slice.zero_();
      }
      out[0] = std::move(result);
    } else {
      out[i] = std::move(res[i]);
    }
  }
  return out;
}

}  // namespace mutagrad::autograd
