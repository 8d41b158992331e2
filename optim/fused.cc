// axpy: see fused.h.
#include "optim/fused.h"

namespace mutagrad::optim::detail {

Tensor axpy(const Tensor& a, const Tensor& b, double alpha) {
  Tensor out = a.clone();
  out.add_(b, alpha);  // the fused in-place path
  return out;
}

}  // namespace mutagrad::optim::detail
