// Gradient clipping: see clip_grad.h.
#include "optim/clip_grad.h"

#include <cmath>
#include <limits>

namespace mutagrad::optim {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g.detach());
  }
  if (grads.empty()) return zeros({}, TensorOptions(kFloat32));
  const Device device = grads[0].device();
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  const bool inf_norm = std::isinf(norm_type) && norm_type > 0;
  for (const Tensor& g : grads) {
    norms.push_back((inf_norm ? g.abs().max() : g.norm(norm_type)).to(device));
  }
  Tensor total;
  if (inf_norm) {
    total = norms.size() == 1 ? norms[0] : stack(norms).max();
  } else {
    total = stack(norms).norm(norm_type);
  }
  if (error_if_nonfinite) {
    const double t = total.item<double>();
    if (std::isnan(t) || std::isinf(t)) {
      throw ValueError(str("clip_grad_norm_(): the total norm of order ", norm_type,
                           " for gradients from `parameters` is non-finite (", t,
                           "), so it cannot be clipped; pass error_if_nonfinite=false to "
                           "scale anyway"));
    }
  }
  const Tensor coef = (max_norm / (total + 1e-6)).clamp(std::nullopt, 1.0);
  for (Tensor& g : grads) g.mul_(coef.to(g.device()));
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

}  // namespace mutagrad::optim
