// func::functionalize: the pure program of a mutating one.
//
//   func::Graph pure = func::functionalize(func::capture(f, {x}));
//   pure.num_inplace();  // the writes to inputs only (one copy_ each, at the end)
//   auto g = func::functionalize(f);  // capture (on copies), functionalize, run
//   std::vector<Tensor> out = g({x});  // bitwise equal to f({x}); gradients equal f's
#pragma once

#include "func/capture.h"

namespace mutagrad::func {

// Note [Functionalization]
// A pass over a captured Graph, as torch's FunctionalTensorWrapper/ViewMeta do at run time:
// - Every value belongs to a storage, named by its root (an input, a constant, or the result
//   of a functional op); a view remembers the view node that made it from its parent.
// - Each root has a current value (a value of the new graph) and a version. A view's value is
//   regenerated, when it is read after a write to its storage, by replaying its view chain
//   from the root's current value.
// - An in-place op on a value v becomes its out-of-place form (add_ -> add, copy_ -> copy,
//   masked_fill_ -> masked_fill, index_put_ -> index_put; cast back to v's dtype when the
//   out-of-place result's differs), and the new value is scattered back up v's view chain into
//   the root: <view>_scatter(parent, new, view args...) at each step, a fresh tensor with the
//   view's elements replaced. The root's version moves on, so every other alias regenerates.
// - Writes to inputs (and constants) are applied at the end with one copy_ each: the only
//   in-place nodes of the result.
// - remove = kMutationsAndViews also turns each view replay into <view>_copy (a fresh tensor).
enum class Remove { kMutations, kMutationsAndViews };

Graph functionalize(const Graph& graph, Remove remove = Remove::kMutations);

// A program that captures `f` on copies of its inputs, functionalizes the graph and runs it on
// the inputs.
Program functionalize(Program f, Remove remove = Remove::kMutations);

}  // namespace mutagrad::func
