#include "autograd/accumulate_grad.h"

#include <mutex>

#include "autograd/autograd_meta.h"
#include "autograd/grad_mode.h"

namespace mutagrad::autograd {

AccumulateGrad::AccumulateGrad(const Tensor& variable) : variable_(variable.impl_ptr()) {
  add_input_metadata(variable);
}

VariableList AccumulateGrad::apply(VariableList&& grads) {
  std::shared_ptr<TensorImpl> impl = variable_.lock();
  if (impl != nullptr && !grads.empty() && grads[0].defined()) {
    accumulate_grad(Tensor(std::move(impl)), std::move(grads[0]));
  }
  return {};
}

namespace {

// Whether `t` can become a .grad as is: nobody else can see or write its memory.
bool can_steal(const Tensor& t) {
  return !GradMode::is_enabled() && t.impl_ptr().use_count() == 1 && t.storage().use_count() == 1 &&
         !t.is_view() && t.is_contiguous() && get_autograd_meta(t) == nullptr;
}

}  // namespace

void accumulate_grad(const Tensor& variable, Tensor new_grad) {
  AutogradMeta& meta = materialize_autograd_meta(variable);
  // See Note [Concurrent backward] in autograd/accumulate_grad.h.
  std::lock_guard<std::mutex> lock(meta.grad_mutex_);
  if (!meta.grad_.defined()) {
    meta.grad_ = can_steal(new_grad) ? std::move(new_grad) : new_grad.clone();
  } else if (!GradMode::is_enabled()) {
    meta.grad_.add_(new_grad);
  } else {
    meta.grad_ = meta.grad_.add(new_grad);
  }
}

}  // namespace mutagrad::autograd
