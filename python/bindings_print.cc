// How tensors and graph nodes look from Python: repr(tensor) in torch's layout, grad_fn nodes
// (name(), next_functions, AccumulateGrad's variable), and mutagrad.Size for shapes.
//
//   >>> mutagrad.tensor([1., 2.], requires_grad=True) * 2
//   tensor([2., 4.], grad_fn=<MulBackward0>)
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/accumulate_grad.h"
#include "python/bindings.h"

namespace mutagrad::python {
namespace {

using autograd::Node;

constexpr int kLineWidth = 80;  // the C++ printer's (and torch's default) line width

// Appends ", suffix" to `body`, moving to a new line indented by `indent` when the last line
// would pass kLineWidth (the C++ printer's rule).
std::string add_suffixes(std::string body, const std::vector<std::string>& suffixes, int indent) {
  size_t nl = body.rfind('\n');
  int64_t last_line = static_cast<int64_t>(body.size()) -
                      (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const std::string& suffix : suffixes) {
    int64_t len = static_cast<int64_t>(suffix.size());
    if (last_line + len + 2 > kLineWidth) {
      body += ",\n" + std::string(static_cast<size_t>(indent), ' ') + suffix;
      last_line = indent + len;
    } else {
      body += ", " + suffix;
      last_line += len + 2;
    }
  }
  return body + ")";
}

// Removes the trailing "key=value" suffix from `s` (a repr without its closing parenthesis)
// and returns the value; "" when the last suffix is not `key`. Values never hold ']', and a
// body that isn't a number ends with ']', so a match after the last ']' is a suffix.
std::string take_suffix(std::string& s, const std::string& key) {
  size_t at = s.rfind(key);
  size_t close = s.rfind(']');
  if (at == std::string::npos || (close != std::string::npos && close > at)) return "";
  std::string value = s.substr(at + key.size());
  s.erase(at);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  if (!s.empty() && s.back() == ',') s.pop_back();
  return value;
}

}  // namespace

py::object package_attr(const char* module, const char* name) {
  // Leaked on purpose: the objects must outlive the interpreter's teardown of this module.
  static auto* cache = new std::unordered_map<std::string, py::object>();
  std::string key = std::string(module) + "." + name;
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  py::object value = py::module_::import((std::string("mutagrad.") + module).c_str()).attr(name);
  cache->emplace(key, value);
  return value;
}

py::object make_size(IntArrayRef sizes) {
  py::tuple values(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) values[i] = py::int_(sizes[i]);
  return package_attr("_types", "Size")(values);
}

namespace {

// How a C++ node shows in Python. From Python a number operand reaches a C++ Scalar overload
// (MulBackward1, one edge); torch wraps the number as a tensor and records the tensor-tensor
// node (MulBackward0), whose edge for the number is (None, 0). `number_edge` says where that
// edge goes: -1 none, 0 first, 1 last.
struct PythonNode {
  const char* name;
  int number_edge;
};

const PythonNode* python_node(const Node& node) {
  static const auto* renamed = new std::unordered_map<std::string, PythonNode>{
      {"AddBackward1", {"AddBackward0", 1}},
      {"SubBackward1", {"SubBackward0", 1}},
      {"MulBackward1", {"MulBackward0", 1}},
      {"DivBackward1", {"DivBackward0", 1}},
      {"PowBackward2", {"PowBackward1", 0}},
      // torch names the in-place fill_ nodes apart from the out-of-place fill's.
      {"FillBackward0", {"FillBackward2", -1}},
      {"FillBackward1", {"FillBackward3", -1}},
  };
  auto it = renamed->find(node.name());
  return it == renamed->end() ? nullptr : &it->second;
}

py::tuple next_functions(const Node& n) {
  std::vector<py::object> out;
  for (const auto& e : n.next_edges()) {
    py::object fn = e.function ? py::cast(e.function) : py::none();
    out.push_back(py::make_tuple(fn, e.input_nr));
  }
  const PythonNode* p = python_node(n);
  if (p != nullptr && p->number_edge >= 0) {
    py::object number = py::make_tuple(py::none(), 0);
    out.insert(p->number_edge == 0 ? out.begin() : out.end(), number);
  }
  py::tuple result(out.size());
  for (size_t i = 0; i < out.size(); ++i) result[i] = out[i];
  return result;
}

}  // namespace

std::string python_node_name(const Node& node) {
  const PythonNode* p = python_node(node);
  return p != nullptr ? p->name : node.name();
}

int python_number_edge(const Node& node) {
  const PythonNode* p = python_node(node);
  return p != nullptr ? p->number_edge : -1;
}

std::string tensor_repr(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  // The C++ printer without autograd suffixes; then its size=/dtype= suffixes are redone with
  // the Python dtype name, and the autograd suffix with the Python node name.
  std::string s = t.detach().to_string();
  s.pop_back();  // ')'
  std::vector<std::string> suffixes;
  std::string dtype = take_suffix(s, "dtype=");
  std::string size = take_suffix(s, "size=");
  if (!size.empty()) suffixes.push_back("size=" + size);
  if (!dtype.empty()) suffixes.push_back("dtype=mutagrad." + dtype);
  if (const auto& fn = t.grad_fn()) {
    suffixes.push_back("grad_fn=<" + python_node_name(*fn) + ">");
  } else if (t.requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  return add_suffixes(s, suffixes, static_cast<int>(prefix.size()));
}

void bind_nodes(py::module_& m) {
  py::class_<Node, std::shared_ptr<Node>>(m, "Node")
      .def("name", [](const Node& n) { return python_node_name(n); })
      .def_property_readonly("next_functions", &next_functions)
      .def_property_readonly(
          "variable",
          [](const Node& n) -> py::object {
            // AccumulateGrad only: the leaf it accumulates into.
            const auto* acc = dynamic_cast<const autograd::AccumulateGrad*>(&n);
            if (acc == nullptr) {
              throw py::attribute_error(
                  str("only AccumulateGrad nodes have .variable, this is ", python_node_name(n)));
            }
            return wrap_tensor(acc->variable());
          })
      .def("__repr__", [](py::handle self) {
        return str("<", python_node_name(self.cast<const Node&>()), " object at ",
                   static_cast<const void*>(self.ptr()), ">");
      });
}

}  // namespace mutagrad::python
