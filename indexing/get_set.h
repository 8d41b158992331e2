// get_item / set_item_: the two entry points behind Tensor::index, Tensor::set_item_ and the
// x[{...}] proxy. Both lower the list with apply_slicing(); get_item then gathers (Path B) or
// returns the view (Path A); set_item_ writes through the view (copy_/fill_) or with one
// index_put_ (masked_fill_ for a mask and a scalar).
//
//   Tensor y = indexing::get_item(x, {Slice(), 0});           // x[:, 0], a view
//   indexing::set_item_(x, {idx}, 1.5, CallSite::current());  // x[idx] = 1.5
#pragma once

#include "indexing/tensor_index.h"
#include "tensor/tensor.h"

namespace mutagrad::indexing {

Tensor get_item(const Tensor& self, ArrayRef<TensorIndex> indices);

// Writes value into self[indices], converting it to self's dtype. Bumps self's version counter
// exactly once, with MutationSite{"set_item_", site.file, site.line}, after every check passed;
// on error self is unchanged.
void set_item_(const Tensor& self, ArrayRef<TensorIndex> indices, const Tensor& value,
               CallSite site);
void set_item_(const Tensor& self, ArrayRef<TensorIndex> indices, const Scalar& value,
               CallSite site);

// x.index_put_(indices, values, accumulate): values must have self's dtype. Bumps once with
// MutationSite{"index_put_", ...}.
void index_put_(const Tensor& self, TensorList indices, const Tensor& values, bool accumulate,
                CallSite site);

// The fast path of set_item_: all-integer indices addressing one element of a CPU tensor that
// does not require grad, and a scalar value. Writes it (one bump) and returns true; returns
// false, having done nothing, when the call is not of that form or needs an error raised.
bool try_set_element(const Tensor& self, ArrayRef<TensorIndex> indices, const Scalar& value,
                     CallSite site);

}  // namespace mutagrad::indexing
