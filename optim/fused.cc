// axpy: see fused.h.
#include "optim/fused.h"

namespace mutagrad::optim::detail {

Tensor axpy(const Tensor& a, const Tensor& b, double alpha) {
  if (alpha == 1.0) return a + b;
  if (a.dtype() == kFloat32 && b.dtype() == kFloat32) {
    const double alpha32 = static_cast<double>(static_cast<float>(alpha));
    return (a.to(kFloat64) + b.to(kFloat64) * Scalar(alpha32)).to(kFloat32);
  }
  return a.add(b, alpha);
}

}  // namespace mutagrad::optim::detail
