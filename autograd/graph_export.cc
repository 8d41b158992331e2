#include "autograd/graph_export.h"

// Boost.Graph's edge iterators trip GCC's -Wmaybe-uninitialized (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "autograd/accumulate_grad.h"
#include "autograd/autograd_meta.h"
#include "autograd/copy_slices.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/saved_variable.h"

namespace mutagrad::autograd {
namespace {

enum class VertexKind { kTensor, kNode, kSaved, kStale, kBase };

struct VertexInfo {
  std::string label;
  VertexKind kind = VertexKind::kNode;
};
enum class EdgeKind { kGradient, kSaved, kViewOf };
struct EdgeInfo {
  EdgeKind kind = EdgeKind::kGradient;
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

// The saved tensors of one node, as saved_tensors() lists them.
std::vector<SavedTensorInfo> saved_of(Node* node) {
  SavedCollector saved;
  node->visit_saved(saved);
  std::vector<SavedTensorInfo> out;
  for (auto& [name, var] : saved.entries) {
    SavedTensorInfo info;
    info.node = node;
    info.name = name;
    info.released = var->is_released();
    if (!info.released) {
      info.data = var->data_unchecked();
      info.saved_version = var->saved_version();
      info.counter = var->checked_counter();
      if (info.counter != nullptr) {
        info.version_now = info.counter->current();
        if (info.stale()) info.stale_by = info.counter->site_of_bump(info.saved_version);
      }
      info.snapshotted = var->was_snapshotted();
    }
    out.push_back(std::move(info));
  }
  return out;
}

struct VertexWriter {
  const Graph& g;
  void operator()(std::ostream& out, Vertex v) const {
    const VertexInfo& info = g[v];
    const char* style = info.kind == VertexKind::kTensor  ? "fillcolor=darkolivegreen1"
                        : info.kind == VertexKind::kSaved ? "fillcolor=orange"
                        : info.kind == VertexKind::kStale ? "fillcolor=red, fontcolor=white"
                        : info.kind == VertexKind::kBase  ? "fillcolor=lightblue"
                                                          : "fillcolor=lightgrey";
    out << "[label=\"" << escape(info.label) << "\", shape=box, style=filled, " << style << "]";
  }
};

struct EdgeWriter {
  const Graph& g;
  void operator()(std::ostream& out, boost::graph_traits<Graph>::edge_descriptor e) const {
    if (g[e].kind == EdgeKind::kSaved) out << "[style=dashed, arrowhead=none]";
    if (g[e].kind == EdgeKind::kViewOf) out << "[style=dotted, label=\"view of\"]";
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
      if (leaf.defined()) {
        label += "\n" + describe(leaf);
        const Tensor& grad = leaf.grad();
        label += grad.defined() ? "\ngrad " + describe(grad) : std::string("\ngrad none");
      }
    } else if (auto* slices = dynamic_cast<CopySlices*>(node)) {
      label += std::string("\n(") + slices->fn()->name() + ")";
    }
    Vertex v = boost::add_vertex(VertexInfo{label, VertexKind::kNode}, g);
    vertex_of.emplace(node, v);
    stack.push_back(node);
    for (const SavedTensorInfo& var : saved_of(node)) {
      std::ostringstream os;
      VertexKind kind = VertexKind::kSaved;
      os << var.name << "\n";
      if (var.released) {
        os << "released";
      } else {
        os << (var.data.defined() ? describe(var.data)
                                  : std::string("packed by saved-tensor hooks"))
           << "\nsaved version " << var.saved_version;
        if (var.counter != nullptr) {
          os << ", now " << var.version_now;
          if (var.stale()) {
            kind = VertexKind::kStale;
            os << "\nSTALE: ";
            if (var.stale_by && var.stale_by->op != nullptr) {
              os << var.stale_by->op;
              if (var.stale_by->file != nullptr) {
                os << " at " << var.stale_by->file << ":" << var.stale_by->line;
              }
            } else {
              os << "written (site too old to be remembered)";
            }
          }
        }
        if (var.snapshotted) os << "\nsnapshotted (a copy made by the snapshot policy)";
      }
      Vertex s = boost::add_vertex(VertexInfo{os.str(), kind}, g);
      boost::add_edge(s, v, EdgeInfo{EdgeKind::kSaved}, g);
    }
    return v;
  };
  for (const Tensor& root : roots) {
    Vertex r = boost::add_vertex(VertexInfo{"tensor\n" + describe(root), VertexKind::kTensor}, g);
    // Note [Observers change nothing]: a stale view's grad_fn is not regenerated here; its
    // root links to where backward would go on, its base's node. A leaf root links to nothing.
    const Edge edge = observed_gradient_edge(root);
    const bool leaf = get_view_info(root) == nullptr &&
                      dynamic_cast<const AccumulateGrad*>(edge.function.get()) != nullptr;
    if (edge.is_valid() && !leaf) {
      boost::add_edge(r, node_vertex(edge.function.get()), EdgeInfo{EdgeKind::kGradient}, g);
    }
    if (const ViewInfo* info = get_view_info(root)) {
      std::string label = "base\n" + describe(info->base);
      if (info->base.grad_fn()) label += std::string("\n") + info->base.grad_fn()->name();
      Vertex b = boost::add_vertex(VertexInfo{label, VertexKind::kBase}, g);
      boost::add_edge(r, b, EdgeInfo{EdgeKind::kViewOf}, g);
      const std::shared_ptr<Node>& base_fn = info->base.grad_fn();
      if (base_fn) boost::add_edge(b, node_vertex(base_fn.get()), EdgeInfo{EdgeKind::kGradient}, g);
    }
  }
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    const Vertex from = vertex_of.at(node);
    for (const Edge& edge : node->next_edges()) {
      if (!edge.is_valid()) continue;
      boost::add_edge(from, node_vertex(edge.function.get()), EdgeInfo{EdgeKind::kGradient}, g);
    }
  }
  std::ostringstream out;
  boost::write_graphviz(out, g, VertexWriter{g}, EdgeWriter{g});
  return out.str();
}

std::string to_dot(const Tensor& root) { return to_dot(TensorList(root)); }

std::vector<SavedTensorInfo> saved_tensors(TensorList roots) {
  // The nodes in to_dot's discovery order: each root's gradient edge (and its base's node for a
  // view root), then depth first along next_edges.
  std::vector<SavedTensorInfo> out;
  std::unordered_map<const Node*, bool> seen;
  std::vector<Node*> stack;
  auto discover = [&](Node* node) {
    if (node == nullptr || !seen.emplace(node, true).second) return;
    std::vector<SavedTensorInfo> saved = saved_of(node);
    out.insert(out.end(), std::make_move_iterator(saved.begin()),
               std::make_move_iterator(saved.end()));
    stack.push_back(node);
  };
  for (const Tensor& root : roots) {
    const Edge edge = observed_gradient_edge(root);
    const bool leaf = get_view_info(root) == nullptr &&
                      dynamic_cast<const AccumulateGrad*>(edge.function.get()) != nullptr;
    if (edge.is_valid() && !leaf) discover(edge.function.get());
    if (const ViewInfo* info = get_view_info(root)) discover(info->base.grad_fn().get());
  }
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const Edge& edge : node->next_edges()) {
      if (edge.is_valid()) discover(edge.function.get());
    }
  }
  return out;
}

}  // namespace mutagrad::autograd
