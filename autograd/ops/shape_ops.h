// Shape helpers and constructors with torch's semantics (shape_ops.cc, ranges in
// range_factories.cc, the in-place view ops in inplace_view_ops.cc).
//
//   Tensor f = mutagrad::flip(x, {0, -1});          // FlipBackward0 (a copy, as torch)
//   Tensor r = mutagrad::roll(x, {1}, {1});         // RollBackward0
//   Tensor l = mutagrad::tril(m, -1);               // TrilBackward0; m.tril_() in place
//   Tensor g = mutagrad::linspace(0.0, 1.0, 5);     // torch's CPU values, bit for bit
//   x.t_();                                         // metadata in place: TBackward1
//
// Every op copies (none returns a view), works on every dtype and device, and records the
// PyTorch node named in its comment when self requires grad; each backward formula is written
// with differentiable ops, so double backward works. The in-place forms (tril_, triu_, and the
// metadata ops t_, transpose_, unsqueeze_, squeeze_, as_strided_) go through the mutation
// engine: check_inplace, every check, one version bump with the caller's site, the change, the
// history. See Note [In-place view ops] in inplace_view_ops.cc.
#pragma once

#include <optional>

#include "tensor/native/factories.h"
#include "tensor/tensor.h"

namespace mutagrad {

// Reverses the order of elements along each of `dims` (distinct; may be empty).
Tensor flip(const Tensor& self, IntArrayRef dims);
Tensor fliplr(const Tensor& self);  // flip(self, {1}); at least 2-D
Tensor flipud(const Tensor& self);  // flip(self, {0}); at least 1-D
// Shifts elements along dims[i] by shifts[i], wrapping around. Without dims: along the
// flattened tensor (then exactly one shift).
Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims = {});
// Tiles self repeats[i] times along dim i; repeats may have more entries than self has dims
// (self gets leading size-1 dims), never fewer.
Tensor repeat(const Tensor& self, IntArrayRef repeats);
// repeat() with `dims` padded with leading 1s to self's dim count.
Tensor tile(const Tensor& self, IntArrayRef dims);
// The lower (tril) or upper (triu) triangle of the last two dims, the rest zeroed: tril keeps
// column - row <= diagonal, triu keeps column - row >= diagonal.
Tensor tril(const Tensor& self, int64_t diagonal = 0);
Tensor triu(const Tensor& self, int64_t diagonal = 0);
// 1-D self: a square matrix with self on the `diagonal`-th diagonal. 2-D self: a copy of its
// `diagonal`-th diagonal.
Tensor diag(const Tensor& self, int64_t diagonal = 0);
// A tensor whose diagonals (offset, on dims dim1 and dim2 of the result) hold self's last dim.
Tensor diag_embed(const Tensor& self, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);

// Constructors (not differentiable).
// An n x m (m defaults to n) matrix with ones on its diagonal.
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions options = {});
// `steps` values from start to end, evenly spaced (float32 unless options say otherwise).
// See Note [linspace's values] in range_factories.cc.
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options = {});
// base ** linspace(start, end, steps), computed in double.
Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base = 10.0,
                TensorOptions options = {});

}  // namespace mutagrad
