// Graphviz DOT of a backward graph, written with Boost.Graph's write_graphviz.
//
//   Tensor loss = (x.sigmoid() * w).sum();
//   std::string dot = autograd::to_dot(loss);   // `dot -Tsvg` renders it
//
// Vertices: the root tensors (green), every Node by name (grey; AccumulateGrad shows its leaf's
// shape), and every saved tensor (orange) with its field name, shape, dtype and saved version
// (or "released" after a backward without retain_graph). Edges follow the gradient: root ->
// grad_fn -> next functions; a dashed edge joins each saved tensor to the node that holds it.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

std::string to_dot(const Tensor& root);
std::string to_dot(TensorList roots);

}  // namespace mutagrad::autograd
