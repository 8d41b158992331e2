// The backward engine: one topological order of the graph, then a single reverse walk.
//
//   Tensor loss = (w * x).sum();
//   autograd::backward({loss});                       // w.grad() = x
//   VariableList g = autograd::run_backward({loss}, {}, {w}, /*keep_graph=*/true,
//                                           /*create_graph=*/false, /*accumulate=*/false);
//
// See Note [Engine] in autograd/engine.cc: discovery by an explicit stack, the order from
// Boost.Graph's topological_sort, per-input gradient buffers, gradients reduced to each
// input's shape and dtype, saved tensors freed as nodes finish unless keep_graph.
#pragma once

#include <optional>

#include "autograd/node.h"

namespace mutagrad::autograd {

// Accumulates d(roots)/d(leaf) · grad_outputs into the .grad of every leaf reached, or only of
// `inputs` when given (a non-leaf input gets its gradient in .grad too). An undefined
// grad_output means ones for a one-element root. retain_graph defaults to create_graph.
void backward(TensorList roots, TensorList grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              TensorList inputs = {});

// The engine entry point. Returns, for each of `inputs`, the gradient that reaches it
// (undefined when none does); accumulates into leaves' .grad only when `accumulate_grad`.
VariableList run_backward(TensorList roots, TensorList grad_outputs, TensorList inputs,
                          bool keep_graph, bool create_graph, bool accumulate_grad);

// Lower level: gradients `root_grads` entering `roots`; captures what reaches `outputs`.
VariableList execute(const std::vector<Edge>& roots, VariableList root_grads, bool keep_graph,
                     bool create_graph, bool accumulate_grad, const std::vector<Edge>& outputs);

// The nodes reachable from `roots` in the order execute() runs them (graph inspection:
// autograd/check_backward.h).
std::vector<Node*> execution_order(const std::vector<Edge>& roots);

}  // namespace mutagrad::autograd
