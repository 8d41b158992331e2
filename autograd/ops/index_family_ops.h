// The dim-wise indexing family: index_select (read) and index_add_, index_copy_, index_fill_
// (writes, with out-of-place forms). Each is advanced indexing along one dim, x[:, ..., index],
// so each runs on index_put_'s kernels and inherits their determinism on every backend:
// index_add_ sums duplicates in index order, index_copy_ keeps the last occurrence (Note
// [Deterministic index_put_ on the CPU] in tensor/cpu/index_put.cc; the same bits on CUDA).
//
//   x.index_add_(0, idx, src, /*alpha=*/2);   // x[idx[i]] += 2 * src[i], duplicates summed
//   Tensor rows = x.index_select(0, idx);      // IndexSelectBackward0
//
// Node names and formulas are PyTorch's (derivatives.yaml): IndexSelectBackward0,
// IndexAddBackward0, IndexCopyBackward0, IndexFillBackward0/1; except that index_copy_'s source
// gradient goes to the winning (last) occurrence of a duplicated index only, as index_put_'s,
// where PyTorch credits every duplicate (docs/indexing.md).
#pragma once

#include "tensor/tensor.h"

namespace mutagrad::autograd {

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
void index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                const Scalar& alpha, const MutationSite& site);
void index_copy_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const MutationSite& site);
void index_fill_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                 const MutationSite& site);
// A 0-dim tensor value (IndexFillBackward1 when it requires grad).
void index_fill_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value,
                 const MutationSite& site);

}  // namespace mutagrad::autograd
