// Raw view ops: new TensorImpls over the same storage, sharing the version counter and
// recording the root base. No autograd here (autograd/ops/view_ops.cc wraps each one).
//
//   Tensor row = native::select(x, 0, 1);          // x[1]
//   Tensor cols = native::slice(x, 1, 0, 4, 2);    // x[:, 0:4:2]
//   Tensor xt = native::transpose(x, 0, 1);
#pragma once

#include <optional>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad::native {

// The general view: everything below is as_strided with computed geometry.
Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                  std::optional<int64_t> storage_offset = std::nullopt);
Tensor select(const Tensor& self, int64_t dim, int64_t index);
// Python slice semantics: start/stop clamp to [0, size], negative values wrap; step > 0.
Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step = 1);
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
Tensor permute(const Tensor& self, IntArrayRef dims);
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& self);  // 2-D (or fewer) transpose
// Size-1 dims may grow (stride 0); new leading dims may be added; -1 keeps a size.
Tensor expand(const Tensor& self, IntArrayRef sizes);
Tensor unsqueeze(const Tensor& self, int64_t dim);
Tensor squeeze(const Tensor& self);
Tensor squeeze(const Tensor& self, int64_t dim);
// A view with the new shape; ShapeError if the strides do not allow one (use reshape).
Tensor view(const Tensor& self, IntArrayRef sizes);
// view() when possible, a contiguous copy otherwise.
Tensor reshape(const Tensor& self, IntArrayRef sizes);
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor diagonal(const Tensor& self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
// Same geometry, a new TensorImpl (a view of self).
Tensor alias(const Tensor& self);
// Same storage and version counter, no view base, no autograd metadata.
Tensor detach(const Tensor& self);
// Same storage, a fresh version counter (PyTorch's x.data).
Tensor variable_data(const Tensor& self);

}  // namespace mutagrad::native
