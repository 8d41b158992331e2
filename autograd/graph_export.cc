#include "autograd/graph_export.h"

// Boost.Graph's edge iterators trip GCC's -Wmaybe-uninitialized (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "autograd/accumulate_grad.h"
#include "autograd/copy_slices.h"
#include "autograd/node.h"
#include "autograd/saved_variable.h"

namespace mutagrad::autograd {
namespace {

enum class VertexKind { kTensor, kNode, kSaved };

struct VertexInfo {
  std::string label;
  VertexKind kind = VertexKind::kNode;
};
struct EdgeInfo {
  bool saved = false;
};

using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexInfo, EdgeInfo>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";  // DOT's line break inside a label
      continue;
    }
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << t.sizes() << " " << dtype_name(t.dtype());
  return os.str();
}

class SavedCollector final : public SavedVisitor {
 public:
  void visit(const char* name, SavedVariable& saved) override {
    if (saved.was_saved()) entries.emplace_back(name, &saved);
  }
  std::vector<std::pair<const char*, SavedVariable*>> entries;
};

struct VertexWriter {
  const Graph& g;
  void operator()(std::ostream& out, Vertex v) const {
    const VertexInfo& info = g[v];
    const char* style = info.kind == VertexKind::kTensor  ? "fillcolor=darkolivegreen1"
                        : info.kind == VertexKind::kSaved ? "fillcolor=orange"
                                                          : "fillcolor=lightgrey";
    out << "[label=\"" << escape(info.label) << "\", shape=box, style=filled, " << style << "]";
  }
};

struct EdgeWriter {
  const Graph& g;
  void operator()(std::ostream& out, boost::graph_traits<Graph>::edge_descriptor e) const {
    if (g[e].saved) out << "[style=dashed, arrowhead=none]";
  }
};

}  // namespace

std::string to_dot(TensorList roots) {
  Graph g;
  std::unordered_map<const Node*, Vertex> vertex_of;
  std::vector<const Node*> stack;
  auto node_vertex = [&](Node* node) {
    auto it = vertex_of.find(node);
    if (it != vertex_of.end()) return it->second;
    std::string label = node->name();
    if (auto* acc = dynamic_cast<AccumulateGrad*>(node)) {
      Tensor leaf = acc->variable();
      if (leaf.defined()) label += "\n" + describe(leaf);
    } else if (auto* slices = dynamic_cast<CopySlices*>(node)) {
      label += std::string("\n(") + slices->fn()->name() + ")";
    }
    Vertex v = boost::add_vertex(VertexInfo{label, VertexKind::kNode}, g);
    vertex_of.emplace(node, v);
    stack.push_back(node);
    SavedCollector saved;
    node->visit_saved(saved);
    for (auto& [name, var] : saved.entries) {
      std::ostringstream os;
      os << name << "\n";
      if (var->is_released()) {
        os << "released";
      } else {
        os << describe(var->data_unchecked()) << "\nsaved version " << var->saved_version();
      }
      Vertex s = boost::add_vertex(VertexInfo{os.str(), VertexKind::kSaved}, g);
      boost::add_edge(s, v, EdgeInfo{true}, g);
    }
    return v;
  };
  for (const Tensor& root : roots) {
    Vertex r = boost::add_vertex(VertexInfo{"tensor\n" + describe(root), VertexKind::kTensor}, g);
    const std::shared_ptr<Node>& fn = root.grad_fn();
    if (fn) boost::add_edge(r, node_vertex(fn.get()), EdgeInfo{false}, g);
  }
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    const Vertex from = vertex_of.at(node);
    for (const Edge& edge : node->next_edges()) {
      if (!edge.is_valid()) continue;
      boost::add_edge(from, node_vertex(edge.function.get()), EdgeInfo{false}, g);
    }
  }
  std::ostringstream out;
  boost::write_graphviz(out, g, VertexWriter{g}, EdgeWriter{g});
  return out.str();
}

std::string to_dot(const Tensor& root) { return to_dot(TensorList(root)); }

}  // namespace mutagrad::autograd
