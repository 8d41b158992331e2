// Differentiable views (forward + backward nodes in view_ops.cc). Every view shares storage and
// version counter with its base and records ViewInfo (see autograd/autograd_meta.h).
//
//   Tensor row = mutagrad::select(x, 0, 1);        // SelectBackward0
//   Tensor col = x.slice(1, 0, 2).t();              // SliceBackward0, then TBackward0
//   auto parts = x.unbind(0);                       // UnbindBackward0 (multi-output views)
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad {

Tensor select(const Tensor& self, int64_t dim, int64_t index);
Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step = 1);
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
Tensor permute(const Tensor& self, IntArrayRef dims);
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& self);
Tensor expand(const Tensor& self, IntArrayRef sizes);
Tensor unsqueeze(const Tensor& self, int64_t dim);
Tensor squeeze(const Tensor& self);
Tensor squeeze(const Tensor& self, int64_t dim);
Tensor view(const Tensor& self, IntArrayRef sizes);
Tensor reshape(const Tensor& self, IntArrayRef sizes);
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor diagonal(const Tensor& self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                  std::optional<int64_t> storage_offset = std::nullopt);
Tensor alias(const Tensor& self);
// The windows of `size` elements along dim, `step` apart, as a new last dim (UnfoldBackward0):
// x of [3, 4] gives x.unfold(1, 2, 1) of [3, 3, 2]. A view: writes reach x (also through
// overlapping windows, as torch: only zero-stride overlap is refused).
Tensor unfold(const Tensor& self, int64_t dim, int64_t size, int64_t step);
// dim split into `sizes` (one of them may be -1), as a view (ViewBackward0): x of [2, 12] gives
// x.unflatten(1, {3, 4}) of [2, 3, 4]. ShapeError when the sizes do not multiply to dim's
// size. (Splitting one dim always has a view.)
Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes);
// torch's _unsafe_view: `self` (a temporary nobody else holds, e.g. a fresh product) with new
// sizes, recorded as a new tensor rather than a view of self (UnsafeViewBackward0).
Tensor unsafe_view(const Tensor& self, IntArrayRef sizes);
std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);

// A copy of `self` whose elements at the as_strided positions (sizes, strides, offset,
// relative to a contiguous layout of self) are replaced by `src` (added when `accumulate`,
// for positions that repeat). Differentiable in both; used by the views' backward formulas.
Tensor as_strided_scatter(const Tensor& self, const Tensor& src, IntArrayRef sizes,
                          IntArrayRef strides, int64_t storage_offset, bool accumulate = false);

namespace autograd {
class Node;
class ViewFn;
// The grad_fn of a view regenerated after its base changed history: `view_fn` replayed on the
// base (the view op's own node), or AsStridedBackward0 with the view's geometry when view_fn
// is null. See Note [Regenerating a view's grad_fn] in autograd/history.h.
std::shared_ptr<Node> make_view_replay_node(const Tensor& base, const Tensor& view,
                                            const std::shared_ptr<const ViewFn>& view_fn);
// The raw (unrecorded) view that unfold() records; validates the arguments.
Tensor unfold_view(const Tensor& self, int64_t dim, int64_t size, int64_t step);
}  // namespace autograd

}  // namespace mutagrad
