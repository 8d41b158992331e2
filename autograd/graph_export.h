// Graphviz DOT of a backward graph, written with Boost.Graph's write_graphviz.
//
//   Tensor loss = (x.sigmoid() * w).sum();
//   std::string dot = autograd::to_dot(loss);   // `dot -Tsvg` renders it
//
// Vertices: the root tensors (green; a root that is a view links to its base, light blue, by a
// dotted "view of" edge), every Node by name (grey; AccumulateGrad shows its leaf's shape and
// .grad, CopySlices the node it wraps), and every saved tensor with its field name, shape,
// dtype, the version it was saved at and its storage's version now (or "released" after a
// backward without retain_graph): orange when current, red with "STALE: <op> at <file>:<line>"
// (the first write after the save, from the version counter's sites) when backward would
// refuse it; kSnapshot copies say so. Edges follow the gradient: root -> grad_fn -> next
// functions; a dashed edge joins each saved tensor to the node that holds it. The text depends
// only on the graph (vertices numbered in discovery order), so the same program gives the
// same DOT.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

std::string to_dot(const Tensor& root);
std::string to_dot(TensorList roots);

}  // namespace mutagrad::autograd
