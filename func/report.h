// func::alias_report: what a captured program's writes and aliases do, as data and as text.
//
//   func::Graph g = func::capture(f, {x});
//   func::AliasReport r = func::alias_report(g);
//   r.mutated_inputs;   // {0}: the program writes its input 0
//   r.writes[0].chain;  // {1, 2}: mul_ writes %2, a view of %1 (the storage's root)
//   std::cout << r.text();
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "func/graph.h"

namespace mutagrad::func {

// The root of each value's storage (Note [Functionalization]): an input, a constant or the
// result of a functional op is its own root; a view's and an in-place op's output is its
// argument's root. Indexed by value id; -1 for an id no node makes.
std::vector<int64_t> storage_roots(const Graph& graph);

// One in-place node of the program.
struct WriteReport {
  int64_t node = 0;               // its index in graph.nodes
  std::string op;                 // "mul_"
  int64_t value = 0;              // the value it writes (a value made by a view or functional op)
  int64_t storage = 0;            // the root of that value's storage
  std::vector<int64_t> chain;     // the view chain, root first, ending with `value`
  std::vector<int64_t> seen_by;   // the storage's other values made before the write (they alias
                                  // the written elements where they overlap), ascending
  std::optional<WriteSite> site;  // the version it moved and its op and line (capture records it)
  std::vector<int64_t>
      invalidates;  // the saved tensors it made stale (indices in saved), ascending
};

// One output of the program.
struct OutputReport {
  int64_t value = 0;
  int64_t storage = 0;                 // the root of its storage
  int64_t input = -1;                  // the input whose storage it shares; -1 for none
  bool constant = false;               // it shares a constant's storage
  std::vector<int64_t> other_outputs;  // the outputs of the same storage, ascending
};

// A view functionalize replays from its root's new value because a write reached its storage
// after the view was last made (Note [Functionalization]).
struct Regeneration {
  int64_t value = 0;  // the view
  int64_t node = -1;  // the node reading it (index in graph.nodes); -1: the return
  int64_t write = 0;  // the last write to its storage before that (index in writes)
};

struct AliasReport {
  std::vector<int64_t> mutated_inputs;    // the positions of the inputs some write reaches
  std::vector<WriteReport> writes;        // in program order
  std::vector<OutputReport> outputs;      // one per output
  std::vector<Regeneration> regenerated;  // in the order functionalize replays them
  std::vector<SavedTensor> saved;         // graph.saved (Note [Stale saved tensors])
  std::vector<std::string> node_code;     // each node as code ("%3 = mul_(%2, 2.0)"), to name them
  std::vector<int64_t> input_values;      // the graph's inputs and constants, to name storages
  std::vector<int64_t> constant_values;

  // One line a fact (docs/functionalization.md, "The alias/mutation report").
  std::string text() const;
};

AliasReport alias_report(const Graph& graph);

}  // namespace mutagrad::func
