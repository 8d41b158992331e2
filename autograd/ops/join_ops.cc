// cat and stack: forward functions and their backward nodes.
#include "autograd/ops/join_ops.h"

#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/view_ops.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {

// Each input gets its slice of the gradient along dim (sizes from the forward).
class CatBackward0 final : public Node {
 public:
  const char* name() const override { return "CatBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(num_outputs());
    int64_t offset = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (should_compute_output(i)) out[i] = grads[0].narrow(dim_, offset, sizes_[i]);
      offset += sizes_[i];
    }
    return out;
  }
  // Tangent: cat of the tangents (linear), zeros for an input without one.
  static Tensor jvp(TensorList inputs, const std::vector<Tensor>& ts, int64_t dim) {
    std::vector<Tensor> parts;
    for (size_t i = 0; i < inputs.size(); ++i) {
      parts.push_back(fwd::tangent_or_zeros(ts[i], inputs[i]));
    }
    return mutagrad::cat(parts, dim);
  }
  int64_t dim_ = 0;
  DimVector sizes_;
};

class StackBackward0 final : public Node {
 public:
  const char* name() const override { return "StackBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(num_outputs());
    for (size_t i = 0; i < out.size(); ++i) {
      if (should_compute_output(i)) out[i] = grads[0].select(dim_, static_cast<int64_t>(i));
    }
    return out;
  }
  // Tangent: stack of the tangents (linear), zeros for an input without one.
  static Tensor jvp(TensorList inputs, const std::vector<Tensor>& ts, int64_t dim) {
    std::vector<Tensor> parts;
    for (size_t i = 0; i < inputs.size(); ++i) {
      parts.push_back(fwd::tangent_or_zeros(ts[i], inputs[i]));
    }
    return mutagrad::stack(parts, dim);
  }
  int64_t dim_ = 0;
};

}  // namespace autograd

namespace {

ScalarType common_dtype(TensorList tensors) {
  ScalarType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());
  return dtype;
}

void check_nonempty(TensorList tensors, const char* op) {
  if (tensors.empty()) {
    throw ValueError(str(op, "(): expected a non-empty list of Tensors"));
  }
  // One device for all (torch's text), checked before anything is allocated.
  for (const Tensor& t : tensors) check_same_device(op, tensors[0].device(), t.device());
}

}  // namespace

Tensor cat(TensorList tensors, int64_t dim) {
  check_nonempty(tensors, "cat");
  const Tensor& first = tensors[0];
  if (first.dim() == 0) {
    throw ShapeError(
        "cat(): zero-dimensional tensor (at position 0) cannot be concatenated; "
        "unsqueeze it first or use stack()");
  }
  const int64_t d = wrap_dim(dim, first.dim(), "cat");
  DimVector shape(first.sizes());
  shape[static_cast<size_t>(d)] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    bool same = t.dim() == first.dim();
    for (int64_t k = 0; same && k < t.dim(); ++k) same = k == d || t.size(k) == first.size(k);
    if (!same) {
      throw ShapeError(str("cat(): Sizes of tensors must match except in dimension ", d,
                           ". Expected sizes ", first.sizes(), " (except dim ", d,
                           ") but got sizes ", t.sizes(), " for tensor number ", i,
                           " in the list"));
    }
    int64_t& total = shape[static_cast<size_t>(d)];
    if (__builtin_add_overflow(total, t.size(d), &total)) {
      throw ShapeError(str("cat(): the sizes of the tensors along dim ", d,
                           " add up to more than int64 can count (at tensor number ", i,
                           " of size ", t.sizes(), "); concatenate fewer or smaller tensors"));
    }
  }
  Tensor result = empty(shape, TensorOptions(common_dtype(tensors)).device(first.device()));
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    native::copy_(native::narrow(result, d, offset, t.size(d)), t);
    offset += t.size(d);
  }
  if (result.is_floating_point()) {
    autograd::fwd::propagate("cat", result, tensors, [&](const std::vector<Tensor>& t) {
      return autograd::CatBackward0::jvp(tensors, t, d);
    });
  }
  if (autograd::compute_requires_grad_list_has_jvp(tensors) && result.is_floating_point()) {
    auto node = make_pooled<autograd::CatBackward0>();
    node->set_next_edges(autograd::collect_next_edges_list(tensors));
    node->dim_ = d;
    for (const Tensor& t : tensors) node->sizes_.push_back(t.size(d));
    autograd::set_history(result, node);
  }
  return result;
}

Tensor stack(TensorList tensors, int64_t dim) {
  check_nonempty(tensors, "stack");
  const Tensor& first = tensors[0];
  const int64_t d = wrap_dim(dim, first.dim() + 1, "stack");
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].sizes().equals(first.sizes())) {
      throw ShapeError(str("stack(): stack expects each tensor to be equal size, but got ",
                           first.sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i));
    }
  }
  DimVector shape(first.sizes());
  shape.insert(static_cast<size_t>(d), static_cast<int64_t>(tensors.size()));
  Tensor result = empty(shape, TensorOptions(common_dtype(tensors)).device(first.device()));
  for (size_t i = 0; i < tensors.size(); ++i) {
    native::copy_(native::select(result, d, static_cast<int64_t>(i)), tensors[i]);
  }
  if (result.is_floating_point()) {
    autograd::fwd::propagate("stack", result, tensors, [&](const std::vector<Tensor>& t) {
      return autograd::StackBackward0::jvp(tensors, t, d);
    });
  }
  if (autograd::compute_requires_grad_list_has_jvp(tensors) && result.is_floating_point()) {
    auto node = make_pooled<autograd::StackBackward0>();
    node->set_next_edges(autograd::collect_next_edges_list(tensors));
    node->dim_ = d;
    autograd::set_history(result, node);
  }
  return result;
}

}  // namespace mutagrad
