// The flat and masked relatives of the scatter family: take / put_ index self as if it were
// 1-D in row-major order (whatever its strides), masked_select reads the elements where a
// mask is true, masked_scatter_ writes a source's leading elements there in row-major order.
// Writes run on index_put_'s kernels: put_'s duplicates resolve as index_put_'s (the last
// wins; accumulate sums in index order), bitwise the same on every backend.
//
//   Tensor picked = x.take(idx);                 // TakeBackward0
//   x.put_(idx, v, /*accumulate=*/true);         // PutBackward0
//   x.masked_scatter_(x.gt(0), src);             // MaskedScatterBackward0
//
// Node names and formulas are PyTorch's (derivatives.yaml): TakeBackward0, PutBackward0,
// MaskedSelectBackward0, MaskedScatterBackward0; except that put_'s source gradient (without
// accumulate) goes to the winning occurrence of a duplicated index only (docs/indexing.md).
#pragma once

#include "tensor/tensor.h"

namespace mutagrad::autograd {

Tensor take(const Tensor& self, const Tensor& index);
void put_(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate,
          const MutationSite& site);
Tensor masked_select(const Tensor& self, const Tensor& mask);
void masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source,
                     const MutationSite& site);

}  // namespace mutagrad::autograd

namespace mutagrad {

// torch.take, torch.put, torch.masked_select, torch.masked_scatter.
Tensor take(const Tensor& self, const Tensor& index);
Tensor put(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate = false);
Tensor masked_select(const Tensor& self, const Tensor& mask);
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source);

}  // namespace mutagrad
