// axpy, fusable, bump_for_step: see fused.h.
#include "optim/fused.h"

#include "autograd/forward_ad.h"
#include "tensor/native/copy.h"

namespace mutagrad::optim::detail {

Tensor axpy(const Tensor& a, const Tensor& b, double alpha) {
  Tensor out = a.clone();
  out.add_(b, alpha);  // the fused in-place path
  return out;
}

bool fusable(const Tensor& param, std::initializer_list<const Tensor*> operands) {
  // Inside a dual level a parameter or gradient may carry a tangent, which the op-by-op step
  // updates too (Note [Tangents under mutation] in autograd/forward_ad.h).
  if (forward_ad::current_level().has_value()) return false;
  const ScalarType t = param.dtype();
  if (!param.device().is_cpu() || (t != kFloat32 && t != kFloat64) || !param.is_contiguous()) {
    return false;
  }
  for (const Tensor* op : operands) {
    if (!op->defined() || op->dtype() != t || !op->device().is_cpu() || !op->is_contiguous() ||
        !op->sizes().equals(param.sizes()) || native::may_overlap(*op, param)) {
      return false;
    }
    for (const Tensor* other : operands) {
      if (other != op && native::may_overlap(*op, *other)) return false;
    }
  }
  return true;
}

void bump_for_step(std::initializer_list<const Tensor*> written, const MutationSite& site) {
  for (const Tensor* t : written) t->version_counter().bump(site, t->unsafe_impl());
}

}  // namespace mutagrad::optim::detail
