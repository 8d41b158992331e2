// The graph IR of func::capture and func::functionalize: a straight-line program of ops over
// numbered values, printable as code and runnable on new inputs.
//
//   func::Graph g = func::capture(f, {x});
//   std::cout << g.code();
//   //   graph(%0: float32[4]):
//   //     %1 = clone(%0)                      # float32[4]
//   //     %2 = slice(%1, 0, 1, 3, 1)          # float32[2]  view of %1
//   //     %3 = mul_(%2, 2.0)                  # float32[2]  writes %2
//   //     return (%1)
//   std::vector<Tensor> out = g({y});   // the interpreter: the same ops on y
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "autograd/capture_hook.h"
#include "mutagrad.h"

namespace mutagrad::func {

using autograd::capture::OpKind;

// An op, data-dependent control flow or an alias capture cannot represent; names the op.
class CaptureError : public Error {
 public:
  CaptureError(std::string op, const std::string& message) : Error(message), op_(std::move(op)) {}
  const std::string& op() const { return op_; }

 private:
  std::string op_;
};

struct ValueInfo {
  std::vector<int64_t> shape;
  ScalarType dtype = kFloat32;
  Device device = kCPU;
};

// A list of values (advanced indices); -1 stands for None.
struct ValueList {
  std::vector<int64_t> ids;
};
struct ValueRef {
  int64_t id = 0;
};
// A node's argument: None, a value, a number, an int list, a list of values, a dtype, a string
// (scatter_reduce's reduction, to()'s device).
using NodeArg = std::variant<std::monostate, ValueRef, Scalar, std::vector<int64_t>, ValueList,
                             ScalarType, std::string>;

// Where and at which version a captured in-place node wrote (Note [Write sites]).
struct WriteSite {
  int64_t version = -1;  // its storage's version before the write (the write makes it +1)
  std::string op;        // the op the version counter names ("mul_"; "" when too old)
  std::string file;      // the program's source file and line (C++ or Python)
  int line = 0;
  // "mul_ at f.cc:12", or "version 3 -> 4" when the counter no longer remembers the site.
  std::string text() const;
};

struct Node {
  std::string op;  // "mul_", "slice", "slice_scatter", ...
  OpKind kind = OpKind::kFunctional;
  std::vector<NodeArg> args;
  int64_t output = 0;  // a view's output aliases args[0]; an in-place op's output is args[0]
  // Note [Write sites]: set by capture on its in-place nodes from the version counter of the
  // storage written (as autograd's pictures of stale saved tensors name their write); absent on
  // nodes a pass or a hand-built graph made.
  std::optional<WriteSite> site;
  // Note [Signed zeros of functionalized gradients] (func/ops.cc): a view read or a scatter that
  // functionalize made for a write; its backward fills the elements it does not reach with
  // -0.0 instead of +0.0 (the same values forward). code() does not show it.
  bool write_path = false;
};

// Note [Stale saved tensors]
// A tensor the backward graph of the captured run saved (autograd::saved_tensors of the
// program's outputs), set by capture while that graph lives: its version, and the captured
// write that made it stale, the first write to its storage after the save (eager backward would
// refuse it, naming that write). Functionalize's result has none: nothing in it is written.
struct SavedTensor {
  std::string backward;     // the backward node holding it ("MulBackward0")
  std::string name;         // its field in that node ("self", "other", "result")
  int64_t node = -1;        // the recorded node (index in nodes) whose op saved it; -1: none
  int64_t value = -1;       // the value saved, when it is one of the graph's; else -1
  int64_t storage = -1;     // a value of the program's in its storage (-1: none is)
  int64_t version = 0;      // its storage's version when saved
  int64_t version_now = 0;  // its storage's version after the program ran
  int64_t stale_by = -1;    // the in-place node (index in nodes) that made it stale; -1: none did
  bool stale() const { return version_now != version; }
};

class Graph {
 public:
  std::vector<int64_t> inputs;
  std::vector<int64_t> outputs;
  std::vector<Node> nodes;
  std::map<int64_t, Tensor> constants;  // tensors the program read but did not make
  std::vector<ValueInfo> values;        // indexed by value id
  std::vector<SavedTensor> saved;       // Note [Stale saved tensors]; capture sets it

  int64_t add_value(ValueInfo info);
  // The program as code, one node a line, with each value's dtype and shape.
  std::string code() const;
  // Runs the graph on `inputs` (as many as, and of the dtypes and shapes of, the captured ones)
  // through the differentiable ops: results carry autograd history.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  // How many nodes write in place (kInPlace).
  int64_t num_inplace() const;
};

// Reads the text code() printed back into the graph (Note [Reading code back] in func/parse.cc):
// parse_graph(g.code(), g.constants).code() == g.code(), and it runs as g does. `constants`
// gives the tensor of each "%N = constant()" line by N (code() does not print their values).
// ValueError naming the line, its text and what was expected on a malformed line;
// CaptureError (naming it) on an op the interpreter does not know.
Graph parse_graph(const std::string& code, const std::map<int64_t, Tensor>& constants = {});

// One op of the IR: runs it on tensor and scalar arguments (autograd::capture::Arg).
using OpFn = Tensor (*)(const autograd::capture::Args& args);
// The op named `name` ("mul_", "slice", "slice_scatter", "view_copy"); null when unknown.
OpFn find_op(const std::string& name);
// What the interpreter runs for `node`: find_op(node.op), or its write_path form.
OpFn find_op(const Node& node);

}  // namespace mutagrad::func
