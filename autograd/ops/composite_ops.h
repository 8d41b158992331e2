// torch's composite helpers (composite_ops.cc): trace, repeat_interleave, meshgrid, kron, cross,
// cdist and the in-place fill_diagonal_.
//
//   Tensor t = mutagrad::trace(m);                        // TraceBackward0
//   Tensor r = x.repeat_interleave(2, 0);                 // IndexSelectBackward0, as torch
//   auto grids = mutagrad::meshgrid({x, y}, "ij");        // ExpandBackward0 views
//   Tensor k = mutagrad::kron(a, b);                      // UnsafeViewBackward0
//   Tensor c = mutagrad::cross(a, b, 1);                  // LinalgCrossBackward0
//   Tensor d = mutagrad::cdist(x1, x2, 2.0);              // CdistBackward0
//   m.fill_diagonal_(0.0);                                // one bump; CopySlices on a non-leaf
//
// Where torch composes an op of others (repeat_interleave, meshgrid, kron) so do we, with the
// same last node; trace, cross and cdist have their own nodes, whose backward formulas are
// differentiable ops (double backward works). Bad arguments raise before anything is computed,
// with torch's text.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad {

// The sum of a matrix's main diagonal (integers sum in int64, as torch); 2-D only.
Tensor trace(const Tensor& self);

// Each slice i along dim repeated repeats[i] times (a 0-dim or one-element repeats repeats every
// slice). Without dim: over the flattened tensor. output_size, when given, must be the total.
Tensor repeat_interleave(const Tensor& self, const Tensor& repeats,
                         std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
Tensor repeat_interleave(const Tensor& self, int64_t repeats,
                         std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
// torch.repeat_interleave(repeats): i repeated repeats[i] times (int64).
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = std::nullopt);

// Coordinate grids of 0-D/1-D tensors of one dtype and device: indexing "ij" gives out[i] of
// shape [n0, n1, ...] varying along dim i; "xy" swaps the first two dims (NumPy's default).
std::vector<Tensor> meshgrid(TensorList tensors, std::string_view indexing = "ij");

// The Kronecker product: shapes padded with leading 1s to one rank, sizes multiplied.
Tensor kron(const Tensor& self, const Tensor& other);

// The cross product of 3-vectors along dim (broadcasting the others), operands of one dtype.
// Without dim: the first dim of size 3 (torch.cross's default); linalg_cross's dim is -1.
Tensor cross(const Tensor& self, const Tensor& other, std::optional<int64_t> dim = std::nullopt);
Tensor linalg_cross(const Tensor& self, const Tensor& other, int64_t dim = -1);

// The p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M]: [..., P, R], the
// batch dims broadcast. p >= 0 (p = inf: the largest difference; p = 0: the count of differing
// coordinates); floating operands of one dtype.
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0);

}  // namespace mutagrad
