// The autograd-state members of Tensor (declared in tensor/tensor.h).
#include "autograd/autograd_meta.h"
#include "autograd/capture_hook.h"
#include "autograd/engine.h"
#include "autograd/errors.h"
#include "autograd/history.h"
#include "tensor/native/views.h"

namespace mutagrad {

using autograd::AutogradMeta;
using autograd::get_autograd_meta;
using autograd::materialize_autograd_meta;

bool Tensor::requires_grad() const { return autograd::tensor_requires_grad(*this); }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  if (requires_grad && !is_floating_point()) {
    throw autograd::AutogradError(
        str("only Tensors of floating point dtype can require gradients; this tensor is ",
            dtype_name(dtype()), ". Convert it first, e.g. x.to(kFloat32).requires_grad_()"));
  }
  if (requires_grad && version_counter().is_inference() && !InferenceMode::is_enabled()) {
    throw autograd::AutogradError(  // torch's text (tensor/inference_mode.h)
        "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  }
  AutogradMeta* meta = get_autograd_meta(*this);
  if (meta != nullptr && meta->grad_fn_) {
    if (!requires_grad) {
      throw autograd::AutogradError(
          "you can only change requires_grad flags of leaf variables. If you want to use a "
          "computed variable in a subgraph that doesn't require differentiation use "
          "var_no_grad = var.detach().");
    }
    return *this;
  }
  if (!requires_grad && meta == nullptr) return *this;
  if (requires_grad != this->requires_grad()) {
    autograd::capture::requires_grad_changing(*unsafe_impl());  // Note [Capture hook]
  }
  materialize_autograd_meta(*this).requires_grad_ = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const { return !grad_fn(); }

Tensor Tensor::grad() const {
  AutogradMeta* meta = get_autograd_meta(*this);
  if (meta == nullptr) return Tensor();
  // Another thread's backward may be accumulating (Note [Concurrent backward]).
  std::lock_guard<std::mutex> lock(meta->grad_mutex_);
  return meta->grad_;
}

void Tensor::set_grad(const Tensor& grad) const {
  // torch 1.13's checks (THPVariable_set_grad), in its order: identity, type (dtype and device
  // type), device index, size. Nothing changes when one fails.
  if (grad.defined()) {
    if (grad.is_same(*this)) {
      throw autograd::AutogradError(
          "set_grad(): can't assign Variable as its own grad: backward would accumulate into "
          "the tensor itself; assign a separate tensor (x.detach().clone(), or "
          "zeros_like(x))");
    }
    if (grad.dtype() != dtype() || grad.device().type() != device().type()) {
      throw DTypeError(str("set_grad(): assigned grad has data of a different type: got ",
                           dtype_name(grad.dtype()), " on ", grad.device(), ", expected ",
                           dtype_name(dtype()), " on ", device(),
                           " like the tensor; convert it with .to()"));
    }
    if (grad.device() != device()) {
      throw DeviceError(
          str("set_grad(): assigned grad has data located on a different device: ", grad.device(),
              ", but the tensor is on ", device(), "; move it with .to(", device(), ")"));
    }
    if (!grad.sizes().equals(sizes())) {
      throw ShapeError(str("set_grad(): assigned grad has data of a different size: got ",
                           grad.sizes(), ", expected ", sizes(),
                           "; a gradient has the shape of its tensor"));
    }
  }
  AutogradMeta* meta = get_autograd_meta(*this);
  if (meta == nullptr && !grad.defined()) return;
  AutogradMeta& m = materialize_autograd_meta(*this);
  std::lock_guard<std::mutex> lock(m.grad_mutex_);
  m.grad_ = grad;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> kNone;
  AutogradMeta* meta = get_autograd_meta(*this);
  if (meta == nullptr) return kNone;
  if (meta->view_ != nullptr) return autograd::view_grad_fn(*this, *meta);
  return meta->grad_fn_;
}

uint32_t Tensor::output_nr() const {
  AutogradMeta* meta = get_autograd_meta(*this);
  return meta != nullptr ? meta->output_nr_ : 0;
}

void Tensor::retain_grad() const {
  if (!requires_grad()) {
    throw autograd::AutogradError(
        "can't retain_grad on Tensor that has requires_grad=False; call requires_grad_() on "
        "the leaf it is computed from first");
  }
  if (is_leaf()) return;  // leaves keep their gradient anyway
  AutogradMeta& meta = materialize_autograd_meta(*this);
  if (meta.retains_grad_) return;
  const std::shared_ptr<autograd::Node>& fn = grad_fn();
  fn->add_retained_grad(meta.output_nr_, impl_ptr());
  meta.retains_grad_ = true;
}

bool Tensor::retains_grad() const {
  AutogradMeta* meta = get_autograd_meta(*this);
  return meta != nullptr && meta->retains_grad_;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

// detach and variable_data make aliases that capture does not cover (Note [Capture hook]).
Tensor Tensor::detach() const {
  Tensor result = native::detach(*this);
  autograd::capture::uncovered_view("detach", result);
  return result;
}

void Tensor::set_data(const Tensor& other) {
  if (!other.defined()) throw ValueError("set_data(): the new data is an undefined tensor");
  if (impl_->view_base() || autograd::get_view_info(*this) != nullptr) {
    throw ValueError(
        "set_data(): x.data = other on a view is not supported (the view would stop aliasing "
        "its base); write the values with x.copy_(other) instead");
  }
  if (requires_grad() && !other.is_floating_point()) {
    throw DTypeError(
        str("data set to a tensor that requires gradients must be floating point, "
            "got ",
            dtype_name(other.dtype()), "; convert it first (other.to(kFloat32))"));
  }
  autograd::capture::uncovered_write("set_data", unsafe_impl());  // Note [Capture hook]
  autograd::capture::uncovered_write("set_data", other.unsafe_impl());
  impl_->set_data(*other.unsafe_impl());
}

Tensor& Tensor::detach_() {
  AutogradMeta* meta = get_autograd_meta(*this);
  if (meta == nullptr) return *this;
  if (meta->view_ != nullptr) {
    throw autograd::AutogradError(
        "Can't detach views in-place. Use detach() instead (it returns a new tensor sharing "
        "this view's memory, outside the graph).");
  }
  // A replay would keep the history detach_ cuts (Note [Capture hook]).
  if (requires_grad()) autograd::capture::uncovered_write("detach_", unsafe_impl());
  std::shared_ptr<autograd::Node> old = std::move(meta->grad_fn_);
  if (meta->retains_grad_ && old) old->remove_retained_grad(unsafe_impl());
  meta->retains_grad_ = false;
  meta->requires_grad_ = false;
  meta->output_nr_ = 0;
  autograd::fwd::clear_tangents(*this);  // as torch: a detached tensor is no longer dual
  autograd::release_node(old);
  return *this;
}

Tensor Tensor::variable_data() const {
  Tensor result = native::variable_data(*this);
  autograd::capture::uncovered_view("variable_data", result);
  return result;
}

}  // namespace mutagrad
