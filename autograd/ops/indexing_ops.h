// Differentiable advanced indexing: index (gather, IndexBackward0) and index_put_ (scatter,
// IndexPutBackward0). indexing/ calls these for Path B; Path A uses the view ops.
//
//   Tensor y = autograd::index(x, {Tensor(), idx});          // x[:, idx], records IndexBackward0
//   autograd::index_put_(x, {idx}, v, false, {"index_put_", __FILE__, __LINE__});
//   Tensor z = autograd::index_put(x, {idx}, v, true);       // out of place (used by backward)
//
// Gradients (see docs/indexing.md): index: self <- zeros.index_put(indices, grad, accumulate);
// index_put_: self <- accumulate ? grad : grad.index_put(indices, 0); values <- grad.index(
// indices) summed to values' shape, and with accumulate=false only the winning (last)
// occurrence of a duplicated destination gets gradient.
#pragma once

#include "tensor/tensor.h"

namespace mutagrad::autograd {

// self[indices] (PyTorch's index list: undefined = dim taken whole, masks allowed); a copy.
Tensor index(const Tensor& self, TensorList indices);
// self[indices] = values (or +=) in place; bumps self's version once with `site`.
void index_put_(const Tensor& self, TensorList indices, const Tensor& values, bool accumulate,
                const MutationSite& site);
// A copy of self with the write applied.
Tensor index_put(const Tensor& self, TensorList indices, const Tensor& values, bool accumulate);

}  // namespace mutagrad::autograd
