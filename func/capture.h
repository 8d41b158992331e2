// func::capture: run a program once and record what it did as a Graph (func/graph.h).
//
//   auto f = [](const std::vector<Tensor>& in) {
//     Tensor y = in[0].clone();
//     y.slice(0, 1, 3).mul_(2.0);  // a write into a view of an intermediate
//     return std::vector<Tensor>{y};
//   };
//   func::Graph g = func::capture(f, {x});
//   std::vector<Tensor> out = g({x2});  // the same ops on new inputs
#pragma once

#include <functional>
#include <vector>

#include "func/graph.h"

namespace mutagrad::func {

using Program = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Note [What capture records]
// - Every op of the covered set (func/ops.cc's table) that the program calls on this thread,
//   once (an op's inner ops are not recorded), with its tensor arguments as values, its other
//   arguments as they were, and whether it made a view or wrote in place.
// - A tensor the program reads but no recorded op made (a closed-over parameter, a factory's
//   result) becomes a constant of the graph.
// - Refused, with a CaptureError naming the op: an op outside the covered set whose result or
//   write reaches a traced tensor (an op not covered that writes a traced storage or reads a
//   value computed from the inputs; a view of a traced tensor, or a tensor with autograd
//   history, that no recorded op made); a host read of such a value (item(), bool(), tolist():
//   data-dependent control flow, CaptureError::op() names the read); inputs that share a
//   storage. Note [Reads of traced values] in func/capture.cc.
// - The program runs once, for real, on `example_inputs` (writes to them happen).
Graph capture(const Program& f, const std::vector<Tensor>& example_inputs);

}  // namespace mutagrad::func
