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

#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

class Node;

std::string to_dot(const Tensor& root);
std::string to_dot(TensorList roots);

// One tensor a backward graph saved, as to_dot draws it (its saved-tensor boxes).
struct SavedTensorInfo {
  const Node* node = nullptr;  // the node holding it (valid while the graph lives)
  std::string name;            // its field ("self", "other", "result")
  bool released = false;       // freed by a backward without retain_graph
  Tensor data;                 // the saved tensor; undefined when released or packed by hooks
  uint32_t saved_version = 0;  // its storage's version when it was saved
  // Its storage's counter (identity: VersionCounter::id()), null when not version-checked;
  // valid while the graph lives.
  const VersionCounter* counter = nullptr;
  uint32_t version_now = 0;  // the counter's version now
  // The first write after the save (the write that made it stale), when still remembered.
  std::optional<MutationSite> stale_by;
  bool snapshotted = false;  // a copy made by the snapshot policy
  bool stale() const { return counter != nullptr && version_now != saved_version; }
};

// Every saved tensor of the nodes to_dot(roots) draws, node by node in its discovery order, each
// node's in the order the node visits them.
std::vector<SavedTensorInfo> saved_tensors(TensorList roots);

}  // namespace mutagrad::autograd
