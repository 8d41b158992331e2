// to_dot: the backward graph as Graphviz DOT via Boost.Graph.
// GCC 12 at -O1 (the asan build) reports a false -Wmaybe-uninitialized inside libstdc++'s
// std::regex compiler, which this test's DOT parser instantiates.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::leaf;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(GraphExport, NodesEdgesAndSavedTensors) {
  Tensor x = leaf({2, 3}, 1);
  Tensor w = leaf({3}, 2);
  Tensor loss = (x.sigmoid() * w).sum();
  const std::string dot = autograd::to_dot(loss);
  EXPECT_EQ(dot.rfind("digraph G {", 0), 0u) << dot;
  for (const char* part :
       {"SumBackward0", "MulBackward0", "SigmoidBackward0", "AccumulateGrad\\n[2, 3] float64",
        "AccumulateGrad\\n[3] float64", "self\\n[2, 3] float64\\nsaved version 0",
        "other\\n[3] float64\\nsaved version 0", "result\\n[2, 3] float64\\nsaved version 0",
        "tensor\\n[] float64", "style=dashed"}) {
    EXPECT_TRUE(contains(dot, part)) << part << "\n" << dot;
  }
  // 1 root tensor + 5 nodes + 3 saved tensors.
  size_t vertices = 0;
  for (size_t p = dot.find("[label="); p != std::string::npos; p = dot.find("[label=", p + 1)) {
    ++vertices;
  }
  EXPECT_EQ(vertices, 9u) << dot;
  loss.backward();
  EXPECT_TRUE(contains(autograd::to_dot(loss), "released"));
}

TEST(GraphExport, CopySlicesShowsTheWrappedNode) {
  Tensor x = leaf({2, 2}, 3);
  Tensor y = x.clone();
  y.select(0, 0).mul_(2.0);
  const std::string dot = autograd::to_dot(y);
  EXPECT_TRUE(contains(dot, "CopySlices\\n(MulBackward1)")) << dot;
  EXPECT_TRUE(contains(dot, "CloneBackward0")) << dot;
}

}  // namespace
}  // namespace mutagrad

namespace mutagrad {
namespace {

// The DOT that Boost's write_graphviz emits, read back: `N[label="...", ...];` and
// `A->B [attrs];` lines.
struct DotGraph {
  struct Vertex {
    std::string label, attrs;
  };
  std::map<int, Vertex> vertices;
  std::vector<std::tuple<int, int, std::string>> edges;

  static DotGraph parse(const std::string& dot) {
    DotGraph g;
    std::istringstream in(dot);
    std::string line;
    const std::regex vertex(R"re(^(\d+)\[label="((?:[^"\\]|\\.)*)"(.*)\];$)re");
    const std::regex edge(R"(^(\d+)->(\d+) ?(.*);$)");
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_match(line, m, vertex)) {
        g.vertices[std::stoi(m[1])] = Vertex{m[2], m[3]};
      } else if (std::regex_match(line, m, edge)) {
        g.edges.emplace_back(std::stoi(m[1]), std::stoi(m[2]), m[3]);
      } else {
        EXPECT_TRUE(line == "digraph G {" || line == "}") << "unexpected DOT line: " << line;
      }
    }
    return g;
  }
  // The vertices whose label starts with `prefix`.
  std::vector<int> find(const std::string& prefix) const {
    std::vector<int> out;
    for (const auto& [id, v] : vertices) {
      if (v.label.rfind(prefix, 0) == 0) out.push_back(id);
    }
    return out;
  }
  bool has_edge(int from, int to) const {
    for (const auto& [a, b, attrs] : edges) {
      if (a == from && b == to) return true;
    }
    return false;
  }
};

TEST(GraphExport, StaleSavedTensorsAreRedWithTheirWrite) {
  Tensor a = leaf({3}, 4);
  Tensor h = a * 2.0;
  Tensor s = h.sigmoid();
  Tensor loss = (h * h).sum() + s.sum();
  const int line = __LINE__ + 1;
  h.add_(1.0);
  const std::string dot = autograd::to_dot(loss);
  EXPECT_EQ(dot, autograd::to_dot(loss));  // stable
  const DotGraph g = DotGraph::parse(dot);
  // Nodes: Add, Sum x2, MulBackward0 (h * h), Sigmoid, MulBackward1 (a * 2), AccumulateGrad.
  ASSERT_EQ(g.find("MulBackward0").size(), 1u) << dot;
  ASSERT_EQ(g.find("MulBackward1").size(), 1u) << dot;
  ASSERT_EQ(g.find("SigmoidBackward0").size(), 1u) << dot;
  int stale = 0, fresh = 0;
  for (const auto& [id, v] : g.vertices) {
    const bool is_red = contains(v.attrs, "fillcolor=red");
    if (contains(v.label, "saved version")) {
      // Each saved tensor has one dashed edge to the node that holds it.
      int holders = 0;
      for (const auto& [from, to, attrs] : g.edges) {
        if (from == id) {
          ++holders;
          EXPECT_TRUE(contains(attrs, "style=dashed")) << attrs;
        }
      }
      EXPECT_EQ(holders, 1) << v.label;
    }
    if (contains(v.label, "STALE")) {
      ++stale;
      EXPECT_TRUE(is_red) << v.label;
      EXPECT_TRUE(contains(v.label, "saved version 0, now 1\\nSTALE: add_ at "));
      EXPECT_TRUE(contains(v.label, "graph_export_test.cc:" + std::to_string(line))) << v.label;
    } else if (contains(v.label, "saved version")) {
      ++fresh;
      EXPECT_FALSE(is_red) << v.label;
      EXPECT_TRUE(contains(v.attrs, "fillcolor=orange")) << v.attrs;
    }
  }
  EXPECT_EQ(stale, 2) << dot;  // MulBackward0's self and other (h)
  EXPECT_EQ(fresh, 1) << dot;  // SigmoidBackward0's result
  // The stale tensors hang off the MulBackward0 that multiplies h by itself.
  const std::vector<int> stale_ids = g.find("self\\n[3] float64\\nsaved version 0, now 1");
  ASSERT_EQ(stale_ids.size(), 1u) << dot;
  bool held_by_mul = false;
  for (int mul : g.find("MulBackward0")) held_by_mul = held_by_mul || g.has_edge(stale_ids[0], mul);
  EXPECT_TRUE(held_by_mul) << dot;

  // saved_tensors lists what the boxes show, as data (func::capture's stale saved tensors).
  const std::vector<autograd::SavedTensorInfo> saved = autograd::saved_tensors({loss});
  ASSERT_EQ(saved.size(), 3u);
  int listed_stale = 0;
  for (const autograd::SavedTensorInfo& info : saved) {
    SCOPED_TRACE(std::string(info.node->name()) + "." + info.name);
    ASSERT_NE(info.counter, nullptr);
    EXPECT_EQ(info.saved_version, 0u);
    EXPECT_FALSE(info.released);
    if (info.stale()) {
      ++listed_stale;
      EXPECT_STREQ(info.node->name(), "MulBackward0");
      EXPECT_TRUE(info.counter->is_same(h.version_counter()));
      EXPECT_EQ(info.version_now, 1u);
      ASSERT_TRUE(info.stale_by.has_value());
      EXPECT_STREQ(info.stale_by->op, "add_");
      EXPECT_EQ(info.stale_by->line, line);
      EXPECT_TRUE(info.data.is_alias_of(h)) << "h's elements";
    } else {
      EXPECT_STREQ(info.node->name(), "SigmoidBackward0");
      EXPECT_EQ(info.name, "result");
      EXPECT_FALSE(info.stale_by.has_value());
    }
  }
  EXPECT_EQ(listed_stale, 2);
}

TEST(GraphExport, LeavesShowTheirGradAndViewsTheirBase) {
  Tensor a = leaf({2, 3}, 5);
  Tensor h = a * 1.0;
  Tensor v = h.select(0, 1);
  DotGraph g = DotGraph::parse(autograd::to_dot(v));
  ASSERT_EQ(g.find("AccumulateGrad\\n[2, 3] float64\\ngrad none").size(), 1u);
  const std::vector<int> roots = g.find("tensor\\n[3] float64");
  const std::vector<int> bases = g.find("base\\n[2, 3] float64\\nMulBackward1");
  ASSERT_EQ(roots.size(), 1u);
  ASSERT_EQ(bases.size(), 1u);
  EXPECT_TRUE(g.has_edge(roots[0], bases[0]));
  EXPECT_TRUE(g.has_edge(bases[0], g.find("MulBackward1")[0]));
  v.sum().backward();
  g = DotGraph::parse(autograd::to_dot(v));
  EXPECT_EQ(g.find("AccumulateGrad\\n[2, 3] float64\\ngrad [2, 3] float64").size(), 1u);
}

}  // namespace
}  // namespace mutagrad
