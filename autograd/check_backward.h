// check_backward: a dry run of backward. It walks the graph in the engine's order without
// computing anything and reports every saved tensor that backward would refuse.
//
//   Tensor h = a * 2.0;
//   Tensor loss = (h * h).sum();           // MulBackward0 saves h twice
//   h.add_(1.0);                           // ... and this makes both stale
//   autograd::BackwardCheck check = autograd::check_backward({loss});
//   check.ok();                            // false
//   check.problems[0].write->op;           // "add_", with the file:line of the call above
//   std::cout << check;                    // one line per problem, backward's first one first
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

// Note [Dry-run check of backward]
// Backward refuses a saved tensor when its storage's version moved since the save (stale) or
// when it was freed by an earlier backward without retain_graph (released). check_backward
// visits every node backward would run, in execute()'s order (engine.h: execution_order), and
// every SavedVariable the node holds: nodes save only what their formula needs (MulBackward0
// saves `self` only when `other` requires grad, as PyTorch's generated code), so a held tensor
// is one backward unpacks. Hence problems[0] is the one backward's error names. Limits:
// - a tensor kept by saved-tensor hooks is checked against its original's counter; backward
//   checks it when the pack hook kept an alias of it (Note [Saved-tensor hooks]), else only
//   when the unpack hook returns an alias, so a copying pair may be reported although backward
//   would pass (the report says "packed");
// - a node that receives no gradient at all does not run, and its tensors are not unpacked.
// The node named is the one that saved the tensor, as in backward's error: for a CopySlices,
// the in-place op's node it wraps (`wrapper` says so).
// Double backward: the graph of a gradient computed with create_graph holds the first graph's
// nodes, so check_backward on that gradient checks what the second backward would unpack.
// A root that is a view made in no_grad mode or by a multi-output op, whose base was written in
// place since, is reported too (kind kView): backward would raise before running any node.
struct BackwardProblem {
  enum class Kind { kStale, kReleased, kView };
  Kind kind = Kind::kStale;
  std::string node;          // the node that saved the tensor, e.g. "MulBackward0"
  std::string wrapper;       // "CopySlices" when `node` is the in-place op a CopySlices wraps
  uint64_t sequence_nr = 0;  // that node's creation number (Node::sequence_nr)
  int64_t order = 0;         // its position in backward's execution order (0 runs first;
                             // -1: kView, raised before any node runs)
  std::string field;         // the saved field, e.g. "self"
  DimVector shape;           // of the saved tensor (empty when released)
  ScalarType dtype = kFloat32;
  uint32_t saved_version = 0;
  uint32_t current_version = 0;
  std::optional<MutationSite> write;  // the first write after the save, if still remembered
  bool packed = false;     // kept by saved-tensor hooks, checked only if unpack gives an alias
  std::string view_error;  // kView: the error backward would raise

  // One sentence: what backward would say, and the write that caused it.
  std::string message() const;
};

struct BackwardCheck {
  std::vector<BackwardProblem> problems;  // in backward's order; empty: backward is safe
  int64_t nodes_checked = 0;
  int64_t saved_checked = 0;
  bool ok() const { return problems.empty(); }
};

// The dry run over the graphs of `roots` (tensors without a grad_fn contribute nothing).
BackwardCheck check_backward(TensorList roots);

// "backward would succeed (N nodes, M saved tensors checked)" or one problem per line.
std::ostream& operator<<(std::ostream& os, const BackwardCheck& check);
std::string to_string(const BackwardCheck& check);

}  // namespace mutagrad::autograd
