// gather and the scatter family (scatter_, scatter_add_, scatter_reduce_, with out-of-place
// forms): element-wise indexing along one dim. For a 3-D self and dim = 1,
//   gather:   out[i][j][k] = self[i][index[i][j][k]][k]
//   scatter_: self[i][index[i][j][k]][k] = src[i][j][k]   (scatter_add_: +=, scatter_reduce_:
//             *=, max, min or mean)
// Each is advanced indexing with one index tensor per dim (the element's own coordinate on the
// other dims, `index` on `dim`), so each runs on index_put_'s kernels and inherits their
// determinism on every backend (Note [Deterministic scatter] in scatter_ops.cc).
//
//   x.scatter_add_(0, segment, v);                 // segment sums; duplicates summed in order
//   Tensor picked = x.gather(1, idx);               // GatherBackward0
//   x.scatter_reduce_(0, idx, v, "amax", false);    // ScatterReduceBackward0
//
// Node names and formulas are PyTorch's (derivatives.yaml): GatherBackward0, ScatterBackward0
// (src), ScatterBackward1 (value), ScatterAddBackward0, ScatterReduceBackward0; except that
// scatter_'s src gradient goes to the winning (last) occurrence of a duplicated destination only,
// and a src larger than index gets a zero gradient outside index's shape where PyTorch refuses
// the backward (docs/indexing.md).
#pragma once

#include <string_view>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);
void scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
              const MutationSite& site);
void scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
              const MutationSite& site);
void scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                  const MutationSite& site);
// reduce: "sum", "prod", "mean", "amax" or "amin" (PyTorch's names).
void scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     std::string_view reduce, bool include_self, const MutationSite& site);

// Helpers of the flat and masked families (take_put_ops.cc), below autograd: the positions of
// a scatter of `index` into `sizes` along `dim` that win without accumulate (the last
// occurrence of each destination), as a bool tensor of index's shape.
Tensor scatter_winners(const Tensor& index, int64_t dim, IntArrayRef sizes);
// `g` (a gradient of index's shape) zero-padded to `sizes` (the src's), differentiably.
Tensor pad_gradient_to(const Tensor& g, IntArrayRef sizes);

}  // namespace mutagrad::autograd

namespace mutagrad {

// torch.gather, torch.scatter, torch.scatter_add, torch.scatter_reduce.
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce, bool include_self = true);

}  // namespace mutagrad
