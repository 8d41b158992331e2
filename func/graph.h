// The graph IR of func::capture and func::functionalize: a straight-line program of ops over
// numbered values, printable as code and runnable on new inputs.
//
//   func::Graph g = func::capture(f, {x});
//   std::cout << g.code();
//   //   graph(%0: float32[4]):
//   //     %1 = clone(%0)                      # float32[4]
//   //     %2 = slice(%1, 0, 1, 3, 1)          # float32[2]  view of %1
//   //     %3 = mul_(%2, 2.0)                  # float32[2]  writes %1
//   //     return (%1)
//   std::vector<Tensor> out = g({y});   // the interpreter: the same ops on y
#pragma once

#include <map>
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

struct Node {
  std::string op;  // "mul_", "slice", "slice_scatter", ...
  OpKind kind = OpKind::kFunctional;
  std::vector<NodeArg> args;
  int64_t output = 0;  // a view's output aliases args[0]; an in-place op's output is args[0]
};

class Graph {
 public:
  std::vector<int64_t> inputs;
  std::vector<int64_t> outputs;
  std::vector<Node> nodes;
  std::map<int64_t, Tensor> constants;  // tensors the program read but did not make
  std::vector<ValueInfo> values;        // indexed by value id

  int64_t add_value(ValueInfo info);
  // The program as code, one node a line, with each value's dtype and shape.
  std::string code() const;
  // Runs the graph on `inputs` (as many as, and of the dtypes and shapes of, the captured ones)
  // through the differentiable ops: results carry autograd history.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  // How many nodes write in place (kInPlace).
  int64_t num_inplace() const;
};

// One op of the IR: runs it on tensor and scalar arguments (autograd::capture::Arg).
using OpFn = Tensor (*)(const autograd::capture::Args& args);
// The op named `name` ("mul_", "slice", "slice_scatter", "view_copy"); null when unknown.
OpFn find_op(const std::string& name);

}  // namespace mutagrad::func
