#include "func/graph.h"

#include <iomanip>
#include <sstream>
#include <string>

namespace mutagrad::func {

namespace {

std::string info_string(const ValueInfo& info) {
  std::ostringstream os;
  os << dtype_name(info.dtype) << "[";
  for (size_t i = 0; i < info.shape.size(); ++i) os << (i == 0 ? "" : ", ") << info.shape[i];
  os << "]";
  if (!info.device.is_cpu()) os << " " << info.device;
  return os.str();
}

void print_arg(std::ostream& os, const NodeArg& arg) {
  if (std::holds_alternative<std::monostate>(arg)) {
    os << "None";
  } else if (const auto* v = std::get_if<ValueRef>(&arg)) {
    os << "%" << v->id;
  } else if (const auto* s = std::get_if<Scalar>(&arg)) {
    if (s->is_bool()) {
      os << (s->to<bool>() ? "True" : "False");
    } else if (s->is_floating_point()) {
      // The shortest text that reads back as the same double (0.1, not 0.10000000000000001).
      const double value = s->to<double>();
      std::string text;
      for (int precision = 1; precision <= 17; ++precision) {
        std::ostringstream num;
        num << std::setprecision(precision) << value;
        text = num.str();
        if (std::stod(text) == value) break;
      }
      if (text.find_first_of(".einf") == std::string::npos) text += ".0";
      os << text;
    } else {
      os << s->to<int64_t>();
    }
  } else if (const auto* l = std::get_if<std::vector<int64_t>>(&arg)) {
    os << "[";
    for (size_t i = 0; i < l->size(); ++i) os << (i == 0 ? "" : ", ") << (*l)[i];
    os << "]";
  } else if (const auto* vl = std::get_if<ValueList>(&arg)) {
    os << "[";
    for (size_t i = 0; i < vl->ids.size(); ++i) {
      os << (i == 0 ? "" : ", ");
      if (vl->ids[i] < 0) {
        os << "None";
      } else {
        os << "%" << vl->ids[i];
      }
    }
    os << "]";
  } else if (const auto* dt = std::get_if<ScalarType>(&arg)) {
    os << dtype_name(*dt);
  } else if (const auto* text = std::get_if<std::string>(&arg)) {
    os << '"' << *text << '"';
  }
}

void check_input(const Tensor& t, const ValueInfo& info, size_t i) {
  if (!t.defined()) {
    throw ValueError(str("graph input ", i, " is an undefined tensor; pass a tensor of dtype ",
                         dtype_name(info.dtype), " and shape ", IntArrayRef(info.shape)));
  }
  if (t.dtype() != info.dtype) {
    throw DTypeError(str("graph input ", i, " has dtype ", dtype_name(t.dtype()),
                         " but the graph was captured with ", dtype_name(info.dtype),
                         "; capture it again for this dtype, or convert the input with .to()"));
  }
  if (!t.sizes().equals(info.shape)) {
    throw ShapeError(str("graph input ", i, " has shape ", t.sizes(),
                         " but the graph was captured with ", IntArrayRef(info.shape),
                         "; a captured graph is specialized to its example shapes: capture "
                         "it again with inputs of this shape"));
  }
  if (t.device() != info.device) {
    throw DeviceError(str("graph input ", i, " is on ", t.device(),
                          " but the graph was captured on ", info.device,
                          "; move the input with .to(", info.device, ")"));
  }
}

}  // namespace

int64_t Graph::add_value(ValueInfo info) {
  values.push_back(std::move(info));
  return static_cast<int64_t>(values.size()) - 1;
}

int64_t Graph::num_inplace() const {
  int64_t n = 0;
  for (const Node& node : nodes) n += node.kind == OpKind::kInPlace ? 1 : 0;
  return n;
}

// Note [Write sites]
// Capture takes each in-place node's site when the op has returned: the storage's version
// counter then stands one past the write (an in-place op bumps exactly once), and its
// site_of_bump(version) names the op and the program's file:line, as autograd::to_dot names the
// write that made a saved tensor stale. The report and the pictures show it; passes and the
// interpreter ignore it.
std::string WriteSite::text() const {
  std::string out = str("version ", version, " -> ", version + 1);
  if (op.empty()) return out + " (site too old to be remembered)";
  out += str(", ", op);
  if (!file.empty()) out += str(" at ", file, ":", line);
  return out;
}

std::string Graph::code() const {
  std::ostringstream os;
  os << "graph(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    os << (i == 0 ? "" : ", ") << "%" << inputs[i] << ": " << info_string(values[inputs[i]]);
  }
  os << "):\n";
  for (const auto& [id, t] : constants) {
    os << "    %" << id << " = constant()  # " << info_string(values[id]) << "\n";
  }
  for (const Node& node : nodes) {
    std::ostringstream line;
    line << "    %" << node.output << " = " << node.op << "(";
    for (size_t i = 0; i < node.args.size(); ++i) {
      if (i != 0) line << ", ";
      print_arg(line, node.args[i]);
    }
    line << ")";
    std::string text = line.str();
    if (text.size() < 44) text.resize(44, ' ');
    os << text << "  # " << info_string(values[node.output]);
    const auto* self = node.args.empty() ? nullptr : std::get_if<ValueRef>(&node.args[0]);
    if (self != nullptr && node.kind == OpKind::kView) os << "  view of %" << self->id;
    if (self != nullptr && node.kind == OpKind::kInPlace) os << "  writes %" << self->id;
    os << "\n";
  }
  os << "    return (";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i == 0 ? "" : ", ") << "%" << outputs[i];
  os << ")\n";
  return os.str();
}

std::vector<Tensor> Graph::operator()(const std::vector<Tensor>& args) const {
  if (args.size() != inputs.size()) {
    throw ValueError(str("the graph takes ", inputs.size(), " inputs but got ", args.size(),
                         "; pass one tensor per captured input"));
  }
  std::vector<Tensor> env(values.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_input(args[i], values[inputs[i]], i);
    env[inputs[i]] = args[i];
  }
  for (const auto& [id, t] : constants) env[id] = t;
  for (const Node& node : nodes) {
    OpFn fn = find_op(node);
    if (fn == nullptr) {
      throw CaptureError(node.op,
                         str("the graph has an op the interpreter does not know: ", node.op));
    }
    autograd::capture::Args rt;
    rt.reserve(node.args.size());
    for (const NodeArg& arg : node.args) {
      if (const auto* v = std::get_if<ValueRef>(&arg)) {
        rt.emplace_back(env.at(v->id));
      } else if (const auto* vl = std::get_if<ValueList>(&arg)) {
        std::vector<Tensor> list;
        for (int64_t id : vl->ids) list.push_back(id < 0 ? Tensor() : env.at(id));
        rt.emplace_back(std::move(list));
      } else if (const auto* s = std::get_if<Scalar>(&arg)) {
        rt.emplace_back(*s);
      } else if (const auto* l = std::get_if<std::vector<int64_t>>(&arg)) {
        rt.emplace_back(*l);
      } else if (const auto* dt = std::get_if<ScalarType>(&arg)) {
        rt.emplace_back(*dt);
      } else if (const auto* text = std::get_if<std::string>(&arg)) {
        rt.emplace_back(*text);
      } else {
        rt.emplace_back(std::monostate{});
      }
    }
    env[node.output] = fn(rt);
  }
  std::vector<Tensor> out;
  out.reserve(outputs.size());
  for (int64_t id : outputs) out.push_back(env[id]);
  return out;
}

}  // namespace mutagrad::func
