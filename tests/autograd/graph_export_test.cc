// to_dot: the backward graph as Graphviz DOT via Boost.Graph.
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
