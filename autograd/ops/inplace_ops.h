// In-place ops with an explicit MutationSite, for layers that write on the user's behalf
// (indexing's set_item_ bumps with op "set_item_", not "copy_"). The Tensor members
// (x.copy_(y), x.add_(y), ...) are these with the op's own name and the caller's file:line.
//
//   autograd::copy_(view, value, MutationSite{"set_item_", site.file, site.line});
//
// Every in-place op runs, in this order: check_inplace (leaf / view-of-leaf / forbidden view
// errors), validation of every argument, one version bump, the write, and the history update
// (rebase_history; CopySlices when writing through a view). A failed op changes nothing.
#pragma once

#include "tensor/tensor.h"

namespace mutagrad::autograd {

void copy_(const Tensor& self, const Tensor& src, const MutationSite& site);
void fill_(const Tensor& self, const Scalar& value, const MutationSite& site);
// self += alpha * other, for writers that record their own op name (optim/: "SGD.step").
void add_(const Tensor& self, const Tensor& other, const Scalar& alpha, const MutationSite& site);
void masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value,
                  const MutationSite& site);

// Whether PyTorch allows writing a `from` result into a `to` tensor (no float -> integral, no
// non-bool -> bool).
bool can_cast(ScalarType from, ScalarType to);

}  // namespace mutagrad::autograd
