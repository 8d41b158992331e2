#include "func/verify.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "func/render.h"

namespace mutagrad::func {

namespace {

std::vector<Tensor> fresh(const std::vector<Tensor>& in) {
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> out;
  out.reserve(in.size());
  for (const Tensor& t : in) out.push_back(t.detach().clone());
  return out;
}

// As func::functionalize(f) captures: copies that require grad (with history) where `in` do.
std::vector<Tensor> capture_copies(const std::vector<Tensor>& in) {
  std::vector<Tensor> out = fresh(in);
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].requires_grad()) continue;
    out[i].requires_grad_();
    if (!in[i].is_leaf()) out[i] = out[i].clone();
  }
  return out;
}

std::vector<uint32_t> versions(const std::vector<Tensor>& ts) {
  std::vector<uint32_t> out;
  for (const Tensor& t : ts) out.push_back(t.version());
  return out;
}

// "" when `a` (eager) and `b` are equal bit for bit, else what differs.
std::string bit_difference(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) {
    return str("dtype ", dtype_name(b.dtype()), ", eager ", dtype_name(a.dtype()));
  }
  if (!a.sizes().equals(b.sizes())) return str("shape ", b.sizes(), ", eager ", a.sizes());
  autograd::NoGradGuard no_grad;
  const Tensor x = a.detach().cpu().contiguous().reshape({-1});
  const Tensor y = b.detach().cpu().contiguous().reshape({-1});
  const auto* px = static_cast<const char*>(x.unsafe_impl()->data());
  const auto* py = static_cast<const char*>(y.unsafe_impl()->data());
  const int64_t size = x.element_size();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::memcmp(px + i * size, py + i * size, static_cast<size_t>(size)) != 0) {
      return str("element ", i, " (flat) is ", y.select(0, i).item(), ", eager ",
                 x.select(0, i).item());
    }
  }
  return "";
}

// Whether pass(prefix) agrees with the replay of the prefix: nodes [0, end], returning the last
// node's result.
bool prefix_agrees(const Graph& g, size_t end, const GraphPass& pass,
                   const std::vector<Tensor>& inputs) {
  Graph prefix;
  prefix.inputs = g.inputs;
  prefix.constants = g.constants;
  prefix.values = g.values;
  prefix.nodes.assign(g.nodes.begin(), g.nodes.begin() + static_cast<int64_t>(end) + 1);
  prefix.outputs = {g.nodes[end].output};
  std::vector<Tensor> a_in = fresh(inputs);
  std::vector<Tensor> b_in = fresh(inputs);
  std::vector<Tensor> a = prefix(a_in);
  std::vector<Tensor> b;
  try {
    b = pass(prefix)(b_in);
  } catch (const Error&) {
    return false;
  }
  if (b.size() != a.size() || !bit_difference(a[0], b[0]).empty()) return false;
  for (size_t i = 0; i < a_in.size(); ++i) {
    if (!bit_difference(a_in[i], b_in[i]).empty()) return false;
  }
  return true;
}

bool is_view_like(const Node& n) {
  return n.kind == OpKind::kView ||
         (n.op.size() > 5 && n.op.compare(n.op.size() - 5, 5, "_copy") == 0);
}

}  // namespace

std::string VerifyResult::summary() const {
  if (ok()) return "verify: ok (eager, replayed and functionalized agree bit for bit)\n";
  std::ostringstream os;
  os << "verify: " << differences.size() << " difference" << (differences.size() == 1 ? "" : "s")
     << " from the eager run\n";
  for (const Difference& d : differences) {
    os << "  " << d.run << ": " << d.what << ": " << d.detail << "\n";
  }
  if (first_divergent_node >= 0) {
    os << "  first divergent node: " << first_divergent_node << ": " << first_divergent_code
       << "\n";
  }
  return os.str();
}

void VerifyResult::check() const {
  if (!ok()) throw VerifyError(summary());
}

VerifyResult verify(const Program& f, const std::vector<Tensor>& inputs, Remove remove) {
  return verify(f, inputs, [remove](const Graph& g) { return functionalize(g, remove); });
}

VerifyResult verify(const Program& f, const std::vector<Tensor>& inputs, const GraphPass& pass) {
  VerifyResult r;
  r.captured = capture(f, capture_copies(inputs));
  r.functional = pass(r.captured);

  std::vector<Tensor> eager_in = fresh(inputs);
  const std::vector<uint32_t> eager_before = versions(eager_in);
  const std::vector<Tensor> eager = f(eager_in);
  std::vector<Tensor> replay_in = fresh(inputs);
  const std::vector<uint32_t> replay_before = versions(replay_in);
  const std::vector<Tensor> replayed = r.captured(replay_in);
  std::vector<Tensor> pure_in = fresh(inputs);
  const std::vector<uint32_t> pure_before = versions(pure_in);
  const std::vector<Tensor> pure = r.functional(pure_in);

  auto compare = [&](const std::string& run, const std::vector<Tensor>& out,
                     const std::vector<Tensor>& in) {
    if (out.size() != eager.size()) {
      r.differences.push_back({run, "outputs", str(out.size(), " outputs, eager ", eager.size())});
    }
    for (size_t i = 0; i < std::min(out.size(), eager.size()); ++i) {
      const std::string d = bit_difference(eager[i], out[i]);
      if (!d.empty()) r.differences.push_back({run, str("output ", i), d});
    }
    for (size_t i = 0; i < in.size(); ++i) {
      const std::string d = bit_difference(eager_in[i], in[i]);
      if (!d.empty()) r.differences.push_back({run, str("input ", i), d});
    }
  };
  compare("replayed", replayed, replay_in);
  compare("functionalized", pure, pure_in);

  for (size_t i = 0; i < inputs.size(); ++i) {
    const uint32_t eager_writes = eager_in[i].version() - eager_before[i];
    const uint32_t replay_writes = replay_in[i].version() - replay_before[i];
    const uint32_t pure_writes = pure_in[i].version() - pure_before[i];
    if (replay_writes != eager_writes) {
      r.differences.push_back({"replayed", str("input ", i),
                               str("version moved by ", replay_writes, ", eager ", eager_writes)});
    }
    if ((pure_writes != 0) != (eager_writes != 0)) {
      r.differences.push_back({"functionalized", str("input ", i),
                               eager_writes != 0
                                   ? std::string("written by eager only")
                                   : std::string("written by the functionalized run only")});
    }
  }
  for (size_t i = 0; i < std::min(replayed.size(), eager.size()); ++i) {
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (eager[i].is_alias_of(eager_in[j]) != replayed[i].is_alias_of(replay_in[j])) {
        r.differences.push_back(
            {"replayed", str("output ", i),
             str(eager[i].is_alias_of(eager_in[j]) ? "does not alias" : "aliases", " input ", j,
                 " (eager's does the opposite)")});
      }
    }
    for (size_t j = i + 1; j < std::min(replayed.size(), eager.size()); ++j) {
      if (eager[i].is_alias_of(eager[j]) != replayed[i].is_alias_of(replayed[j])) {
        r.differences.push_back({"replayed", str("output ", i),
                                 str(eager[i].is_alias_of(eager[j]) ? "does not alias" : "aliases",
                                     " output ", j, " (eager's does the opposite)")});
      }
    }
  }

  bool functional_differs = false;
  for (const Difference& d : r.differences) functional_differs |= d.run == "functionalized";
  if (functional_differs) {
    for (size_t k = 0; k < r.captured.nodes.size(); ++k) {
      if (!prefix_agrees(r.captured, k, pass, inputs)) {
        r.first_divergent_node = static_cast<int64_t>(k);
        r.first_divergent_code = node_lines(r.captured).at(k);
        break;
      }
    }
  }
  return r;
}

namespace testing {

Graph drop_view_regeneration(const Graph& graph) {
  Graph g = functionalize(graph);
  // The first view (a reader's, not a write's own read) of a value a scatter made: the view
  // replayed after a write. It is made from the scatter's base instead, the stale elements.
  std::map<int64_t, int64_t> scattered;  // a scatter's output -> its base
  for (Node& node : g.nodes) {
    const std::string& op = node.op;
    if (op.size() > 8 && op.compare(op.size() - 8, 8, "_scatter") == 0) {
      scattered[node.output] = std::get<ValueRef>(node.args[0]).id;
      continue;
    }
    if (!is_view_like(node) || node.write_path) continue;
    auto* base = std::get_if<ValueRef>(&node.args[0]);
    auto it = base != nullptr ? scattered.find(base->id) : scattered.end();
    if (it == scattered.end()) continue;
    base->id = it->second;
    return g;
  }
  return g;
}

}  // namespace testing

}  // namespace mutagrad::func
