// Names given to tensors by their owners, shown by the stale-tensor error.
//
// mutagrad.nn.Module names its parameters and buffers by their path ("fc1.weight"), so that
//   ... inplace operation: [torch.FloatTensor [4, 3]] (a view of fc1.weight), which is ...
// says which parameter an optimizer step or a copy_ made stale.
//
//   set_tensor_name(weight, "fc1.weight");
//   tensor_name_of(weight.t())   // "a view of fc1.weight"
#pragma once

#include <optional>
#include <string>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

// Note [Tensor names]
// A name belongs to the memory: it is kept per version counter (one per storage family), so a
// view, detach() or .data of a named tensor reports it too (as "a view of <name>" unless it has
// the named tensor's sizes, strides and offset). The registry holds the named tensor weakly: once
// it dies the entry is ignored and dropped, so a counter address reused later never shows an old
// name. Naming again replaces the name; an empty name removes it. Thread-safe (one mutex); only
// naming and the error's message take it, never an op.
void set_tensor_name(const Tensor& t, const std::string& name);

// The name of `t`'s memory for an error message ("fc1.weight", "a view of fc1.weight"), or
// nullopt when none was given or its tensor died.
std::optional<std::string> tensor_name_of(const Tensor& t);

}  // namespace mutagrad::autograd
