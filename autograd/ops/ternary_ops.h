// addcmul, addcdiv and lerp (AddcmulBackward0, AddcdivBackward0, LerpBackward0/1), out of
// place and in place; the in-place forms are also here with an explicit MutationSite, for
// layers that write on the user's behalf (optim/ records "Adam.step" with the user's line).
//
//   Tensor y = mutagrad::addcmul(x, a, b, 0.5);      // x + 0.5 * a * b
//   v.addcdiv_(g, d, -1e-3);                         // v += -1e-3 * g / d, one bump
//   Tensor z = mutagrad::lerp(x, end, 0.25);         // x + 0.25 * (end - x)
//   autograd::addcdiv_(p, m, d, -lr, MutationSite{"Adam.step", site.file, site.line});
//
// Rounding as PyTorch 1.13's CPU kernels: addcmul is self + (value * t1) * t2 and addcdiv
// self + (value * t1) / t2, each product rounded in the compute dtype; lerp is
// self + w * (end - self) when |w| < 0.5, else end - (end - self) * (1 - w).
#pragma once

#include "tensor/tensor.h"

namespace mutagrad {

Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value = 1);
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight);

namespace autograd {

// The in-place ops with the MutationSite the version bump records (see inplace_ops.h for the
// order of steps: check_inplace, validation, one bump, write, history).
void addcmul_(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value,
              const MutationSite& site);
void addcdiv_(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value,
              const MutationSite& site);
void lerp_(const Tensor& self, const Tensor& end, const Scalar& weight, const MutationSite& site);
void lerp_(const Tensor& self, const Tensor& end, const Tensor& weight, const MutationSite& site);

}  // namespace autograd
}  // namespace mutagrad
