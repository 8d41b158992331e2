// func::verify: run a program eagerly, captured-then-replayed and functionalized, each on fresh
// copies of the same inputs, and say where they differ.
//
//   func::VerifyResult r = func::verify(f, {x, w});
//   if (!r.ok()) std::cout << r.summary();  // which output or input differs, and the first op
//   r.check();                               // or: throws func::VerifyError with that summary
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "func/functionalize.h"

namespace mutagrad::func {

// A transformation of captured graphs; func::functionalize is the one verify checks by default.
using GraphPass = std::function<Graph(const Graph&)>;

// verify found a difference; what() is VerifyResult::summary().
class VerifyError : public Error {
 public:
  using Error::Error;
};

// One thing that differs from the eager run.
struct Difference {
  std::string run;     // "functionalized" or "replayed"
  std::string what;    // "output 0", "input 1"
  std::string detail;  // "element 2 is 4.0, eager 2.0", "written by eager only", ...
};

struct VerifyResult {
  Graph captured;    // the program as captured (on copies of the inputs)
  Graph functional;  // the pass's result
  std::vector<Difference> differences;
  // When the functionalized run differs: the first node of `captured` whose result (or effect
  // on the inputs) the pass gets wrong, found by checking the pass on each prefix of the graph;
  // -1 when none does (or only the replay differs).
  int64_t first_divergent_node = -1;
  std::string first_divergent_code;  // that node as code: "%5 = add(%3, 1.0)"

  bool ok() const { return differences.empty(); }
  // "verify: ok" or one line a difference, then the first divergent node.
  std::string summary() const;
  // Throws VerifyError(summary()) unless ok().
  void check() const;
};

// Note [What verify compares]
// Eager f, the captured graph replayed, and pass(captured graph) each run on fresh copies
// (detached clones) of `inputs`. Against eager, each compares bit for bit: every output (dtype,
// shape, elements) and every input afterwards. Also:
// - versions: the replay bumps each input's version as often as eager; the functionalized run
//   writes (bumps) exactly the inputs eager writes;
// - aliasing: a replayed output aliases the inputs and outputs eager's does. (A functionalized
//   output never aliases: that is what functionalization means.)
// Capture runs on copies that require grad where the inputs do (as func::functionalize(f)), so
// an op capture does not cover is refused with a CaptureError rather than verified wrongly.
VerifyResult verify(const Program& f, const std::vector<Tensor>& inputs,
                    Remove remove = Remove::kMutations);
VerifyResult verify(const Program& f, const std::vector<Tensor>& inputs, const GraphPass& pass);

namespace testing {
// A deliberately broken functionalize, to show verify catching a bug: functionalize(graph),
// then the first view regenerated after a write (a reader's view of a value a <view>_scatter
// made) is made from that scatter's base instead: its readers see the elements from before the
// write. Returns functionalize(graph) when no view is regenerated.
Graph drop_view_regeneration(const Graph& graph);
}  // namespace testing

}  // namespace mutagrad::func
