// Internal: shared by the reduction families (reduce_ops.cc, statistics_ops.cc).
//
//   DimVector dims = reduced_dims({-1}, x.dim(), "var");   // wrapped, sorted; {} = all dims
//   Tensor g = keepdim_form(grad, dims, x.dim(), keepdim);  // reduced dims back as size 1
#pragma once

#include <algorithm>

#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace mutagrad::autograd {

// The reduced dims of a tensor of `ndim` dims, wrapped and sorted; empty `dims` means all.
inline DimVector reduced_dims(IntArrayRef dims, int64_t ndim, const char* op) {
  DimVector out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(ndim == 0 ? 0 : wrap_dim(d, ndim, op));
  std::sort(out.begin(), out.end());
  return out;
}

// A reduction's output brought back to keepdim form (reduced dims of size 1), differentiably.
inline Tensor keepdim_form(const Tensor& t, IntArrayRef sorted_dims, int64_t ndim, bool keepdim) {
  if (keepdim || ndim == 0) return t;
  Tensor out = t;
  for (int64_t d : sorted_dims) out = out.unsqueeze(d);
  return out;
}

}  // namespace mutagrad::autograd
