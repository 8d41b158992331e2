// render: Graphviz lays out and draws to_dot's graph in process; the SVG is well formed and
// names the nodes, the stale tensor and its write.
#include <fstream>
#include <regex>
#include <sstream>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::leaf;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

int count(const std::string& s, const std::string& part) {
  int n = 0;
  for (size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

TEST(Render, SvgNamesTheNodesAndTheStaleWrite) {
  Tensor a = leaf({3}, 1);
  Tensor h = a * 2.0;
  Tensor loss = (h * h).sum();
  const int line = __LINE__ + 1;
  h.add_(1.0);
  const std::string svg = autograd::render_dot(autograd::to_dot(loss), "svg");
  ASSERT_TRUE(contains(svg, "<svg")) << svg.substr(0, 400);
  EXPECT_TRUE(contains(svg, "</svg>"));
  // Well formed at the level that matters here: every <g> group is closed.
  EXPECT_EQ(count(svg, "<g "), count(svg, "</g>"));
  for (const char* name : {"SumBackward0", "MulBackward0", "MulBackward1", "AccumulateGrad"}) {
    EXPECT_TRUE(contains(svg, std::string(">") + name + "</text>")) << name;
  }
  EXPECT_EQ(count(svg, "STALE: add_ at "), 2);
  EXPECT_TRUE(contains(svg, "render_test.cc:" + std::to_string(line)));
  EXPECT_TRUE(contains(svg, "fill=\"red\""));  // the stale tensors' boxes
  // One <g class="node"> per vertex of the DOT: 1 root + 4 nodes + 2 saved tensors.
  EXPECT_EQ(count(svg, "class=\"node\""), 7);
}

TEST(Render, WritesFilesInTheFormatOfTheExtension) {
  Tensor a = leaf({2}, 2);
  Tensor loss = (a.sigmoid() * a).sum();
  const std::string dir = ::testing::TempDir();
  autograd::render({loss}, dir + "/graph.svg");
  autograd::render({loss}, dir + "/graph.png");
  std::ifstream svg(dir + "/graph.svg"), png(dir + "/graph.png", std::ios::binary);
  std::stringstream s, p;
  s << svg.rdbuf();
  p << png.rdbuf();
  EXPECT_TRUE(contains(s.str(), "SigmoidBackward0"));
  EXPECT_EQ(p.str().substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

TEST(Render, ErrorsNameTheProblem) {
  Tensor a = leaf({2}, 3);
  Tensor loss = (a * a).sum();
  try {
    autograd::render({loss}, ::testing::TempDir() + "/graph");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(e.what(), "has no extension")) << e.what();
  }
  try {
    autograd::render_dot(autograd::to_dot(loss), "no-such-format");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(e.what(), "cannot write format 'no-such-format'")) << e.what();
  }
  EXPECT_THROW(autograd::render({loss}, "/nonexistent-dir/graph.svg"), ValueError);
  EXPECT_THROW(autograd::render_dot("digraph G { 0 -> ", "svg"), ValueError);
}

}  // namespace
}  // namespace mutagrad
