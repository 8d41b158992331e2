// How tensors and graph nodes look from Python: repr(tensor) in torch's layout, grad_fn nodes
// (name(), next_functions, AccumulateGrad's variable), and mutagrad.Size for shapes.
//
//   >>> mutagrad.tensor([1., 2.], requires_grad=True) * 2
//   tensor([2., 4.], grad_fn=<MulBackward0>)
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "autograd/accumulate_grad.h"
#include "autograd/copy_slices.h"
#include "autograd/saved_variable.h"
#include "python/bindings.h"
#include "tensor/print_options.h"

namespace mutagrad::python {
namespace {

using autograd::Node;

// Appends ", suffix" to `body`, moving to a new line indented by `indent` when the last line
// would pass the line width (the C++ printer's rule).
std::string add_suffixes(std::string body, const std::vector<std::string>& suffixes, int indent) {
  const int64_t line_width = print_options().linewidth;
  size_t nl = body.rfind('\n');
  int64_t last_line = static_cast<int64_t>(body.size()) -
                      (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const std::string& suffix : suffixes) {
    int64_t len = static_cast<int64_t>(suffix.size());
    if (last_line + len + 2 > line_width) {
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
  // CopySlices shows the edges of the op it wraps after the base's, torch's number edge too.
  if (const auto* slices = dynamic_cast<const autograd::CopySlices*>(&n)) {
    p = python_node(*slices->fn());
    if (p != nullptr && p->number_edge != 1) p = nullptr;
  }
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

// Note [A Python class per node name]
// torch gives each node kind its own Python class (type(y.grad_fn).__name__ == "MulBackward0").
// Our nodes are one pybind11 class, so the node caster (python/node_caster.h) sets a wrapper's
// __class__ to a subclass of mutagrad._C.Node named after the node, made once per name (and
// never freed). The subclass has __slots__ = (): its instances have Node's layout, which is
// what makes the __class__ assignment legal (Node has py::dynamic_attr, so that both are
// garbage-collected types, as a Python subclass always is); isinstance(fn, Node) stays true.
void set_node_class(py::handle obj, const Node& node) {
  static auto* classes = new std::unordered_map<std::string, py::object>();
  const std::string name = python_node_name(node);
  auto it = classes->find(name);
  if (it == classes->end()) {
    py::dict ns;
    ns["__slots__"] = py::tuple();
    ns["__module__"] = py::str("builtins");  // as torch's: repr is <class 'MulBackward0'>
    py::object base = py::type::of<Node>();
    py::object cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyType_Type))(
        name, py::make_tuple(base), ns);
    it = classes->emplace(name, std::move(cls)).first;
  }
  if (reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr())) != it->second.ptr()) {
    obj.attr("__class__") = it->second;
  }
}

namespace {

// The saved tensors of a node under torch's names, in visiting order.
struct SavedByName final : autograd::SavedVisitor {
  std::vector<std::pair<std::string, autograd::SavedVariable*>> fields;
  void visit(const char* name, autograd::SavedVariable& saved) override {
    fields.emplace_back(name, &saved);
  }
};
struct AttributesByName final : autograd::SavedAttributeVisitor {
  std::vector<std::pair<std::string, autograd::SavedAttribute>> fields;
  void visit(const char* name, const autograd::SavedAttribute& value) override {
    fields.emplace_back(name, value);
  }
};

// torch keeps a Python number operand as a 0-dim tensor of the number's default dtype.
Tensor wrapped_number(const Scalar& s) {
  const ScalarType dtype = s.is_floating_point() ? kFloat64 : s.is_bool() ? kBool : kInt64;
  return full({}, s, dtype);
}

py::object attribute_to_python(const Node& node, const std::string& name,
                               const autograd::SavedAttribute& value) {
  if (const auto* b = std::get_if<bool>(&value)) return py::bool_(*b);
  if (const auto* i = std::get_if<int64_t>(&value)) return py::int_(*i);
  if (const auto* sizes = std::get_if<DimVector>(&value)) {
    py::tuple out(sizes->size());
    for (size_t k = 0; k < sizes->size(); ++k) out[k] = py::int_((*sizes)[k]);
    return std::move(out);
  }
  const Scalar& s = std::get<Scalar>(value);
  // x * 2 shows as MulBackward0, whose other is a tensor in torch.
  if (python_number_edge(node) >= 0 && name == "other") return py::cast(wrapped_number(s));
  return scalar_to_python(s);
}

// x * 2, x / 2, x + 2, x - 2 show as torch's tensor-tensor nodes, which have a field the C++
// number node lacks: self (None there: torch saves it only for other's gradient) or alpha (1).
const char* number_node_field(const Node& node) {
  if (python_number_edge(node) != 1) return nullptr;
  const std::string shown = python_node_name(node);
  if (shown == "MulBackward0" || shown == "DivBackward0") return "self";
  if (shown == "AddBackward0" || shown == "SubBackward0") return "alpha";
  return nullptr;
}

// node._saved_<name>: the saved tensor (unpacked as backward would: the stale-tensor and
// backward-twice errors are backward's), a tuple for the indices of the index family, or the
// saved argument; nullopt when the node keeps nothing of that name.
std::optional<py::object> saved_attribute(Node& node, const std::string& name) {
  SavedByName tensors;
  node.visit_saved(tensors);
  std::vector<autograd::SavedVariable*> found;
  for (auto& [field, saved] : tensors.fields) {
    if (field == name) found.push_back(saved);
  }
  if (!found.empty()) {
    std::vector<Tensor> values;
    for (autograd::SavedVariable* saved : found) values.push_back(saved->unpack(&node));
    if (name == "indices") {
      py::tuple out(values.size());
      for (size_t k = 0; k < values.size(); ++k) out[k] = wrap_tensor(values[k]);
      return py::object(std::move(out));
    }
    return wrap_tensor(values[0]);
  }
  AttributesByName attributes;
  node.visit_saved_attributes(attributes);
  for (auto& [field, value] : attributes.fields) {
    if (field == name) return attribute_to_python(node, name, value);
  }
  if (const char* implied = number_node_field(node)) {
    if (name == implied) return name == "alpha" ? py::object(py::int_(1)) : py::object(py::none());
  }
  return std::nullopt;
}

std::vector<std::string> saved_names(Node& node) {
  SavedByName tensors;
  node.visit_saved(tensors);
  AttributesByName attributes;
  node.visit_saved_attributes(attributes);
  std::vector<std::string> names;
  for (const auto& f : tensors.fields) names.push_back("_saved_" + f.first);
  for (const auto& f : attributes.fields) names.push_back("_saved_" + f.first);
  if (const char* implied = number_node_field(node))
    names.push_back(std::string("_saved_") + implied);
  return names;
}

constexpr const char* kSavedPrefix = "_saved_";

}  // namespace

void bind_nodes(py::module_& m) {
  // mutagrad.set_printoptions (mutagrad/_api_extras.py) resolves profiles and None.
  m.def(
      "_set_printoptions",
      [](int precision, int64_t threshold, int64_t edgeitems, int linewidth,
         std::optional<bool> sci_mode) {
        set_print_options(PrintOptions{precision, threshold, edgeitems, linewidth, sci_mode});
      },
      py::arg("precision"), py::arg("threshold"), py::arg("edgeitems"), py::arg("linewidth"),
      py::arg("sci_mode"));
  // mutagrad.inference_mode (grad_mode.py) also switches grad mode.
  m.def("_set_inference_mode", &InferenceMode::set_enabled, py::arg("enabled"));
  m.def("is_inference_mode_enabled", &InferenceMode::is_enabled);
  m.def("_get_printoptions", [] {
    const PrintOptions o = print_options();
    py::dict d;
    d["precision"] = o.precision;
    d["threshold"] = o.threshold;
    d["edgeitems"] = o.edgeitems;
    d["linewidth"] = o.linewidth;
    d["sci_mode"] = o.sci_mode ? py::object(py::bool_(*o.sci_mode)) : py::object(py::none());
    return d;
  });
  py::class_<Node, std::shared_ptr<Node>>(m, "Node", py::dynamic_attr())
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
      .def("__getattr__",
           [](py::handle self, const std::string& attr) -> py::object {
             Node& node = self.cast<Node&>();
             const std::string prefix = kSavedPrefix;
             if (attr.compare(0, prefix.size(), prefix) == 0) {
               if (auto value = saved_attribute(node, attr.substr(prefix.size()))) return *value;
             }
             throw py::attribute_error(
                 str("'", python_node_name(node), "' object has no attribute '", attr, "'"));
           })
      .def("__dir__",
           [](py::handle self) {
             py::list names = py::module_::import("builtins").attr("object").attr("__dir__")(self);
             for (const std::string& n : saved_names(self.cast<Node&>())) {
               if (!names.contains(py::str(n))) names.append(py::str(n));
             }
             return names;
           })
      .def("__repr__", [](py::handle self) {
        return str("<", python_node_name(self.cast<const Node&>()), " object at ",
                   static_cast<const void*>(self.ptr()), ">");
      });
}

}  // namespace mutagrad::python
