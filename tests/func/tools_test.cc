// func::verify, func::alias_report and the pictures (func/render.h), against hand-derived
// expectations; verify catches a deliberately broken functionalize
// (func::testing::drop_view_regeneration). On the CPU and (func_test_cuda) the CUDA device.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "func/func.h"
#include "mutagrad.h"
#include "tests/tensor/test_device.h"

namespace mutagrad {
namespace {

using func::Program;
using testing_device::on_test_device;

Tensor vec(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return on_test_device(from_vector<float>(std::move(v), {n}));
}

// Two overlapping views of an intermediate; a write through one; a read of the other (which
// functionalize must regenerate); a write to the input; a view of the input returned.
//   %1 = clone(%0)  %2 = slice(%1, 0, 0, 2)  %3 = slice(%1, 0, 1, 3)  %4 = mul_(%2, 2.0)
//   %5 = add(%3, 1.0)  %6 = add_(%0, 1.0)  %7 = t(%0)        return (%1, %3, %5, %7)
// The lines of its writes (Note [Write sites]: the report names them).
int g_mul_line = 0;
int g_add_line = 0;
std::vector<Tensor> two_views(const std::vector<Tensor>& in) {
  Tensor y = in[0].clone();
  Tensor a = y.slice(0, 0, 2);
  Tensor b = y.slice(0, 1, 3);
  g_mul_line = __LINE__ + 1;
  a.mul_(2.0);
  Tensor c = b + 1.0;
  Tensor x = in[0];
  g_add_line = __LINE__ + 1;
  x.add_(1.0);
  return {y, b, c, x.t()};
}

std::string at_line(int line) { return str(__FILE__, ":", line); }

TEST(AliasReportTest, TwoViewsOfAnIntermediate) {
  func::Graph g = func::capture(two_views, {vec({1, 2, 3, 4})});
  ASSERT_EQ(g.nodes.size(), 7u) << g.code();
  const func::AliasReport r = func::alias_report(g);
  EXPECT_EQ(r.mutated_inputs, std::vector<int64_t>{0});
  ASSERT_EQ(r.writes.size(), 2u);
  EXPECT_EQ(r.writes[0].node, 3);
  EXPECT_EQ(r.writes[0].op, "mul_");
  EXPECT_EQ(r.writes[0].value, 2);
  EXPECT_EQ(r.writes[0].storage, 1);
  EXPECT_EQ(r.writes[0].chain, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.writes[0].seen_by, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(r.writes[1].node, 5);
  EXPECT_EQ(r.writes[1].op, "add_");
  EXPECT_EQ(r.writes[1].chain, std::vector<int64_t>{0});
  EXPECT_TRUE(r.writes[1].seen_by.empty());
  ASSERT_EQ(r.outputs.size(), 4u);
  EXPECT_EQ(r.outputs[0].storage, 1);
  EXPECT_EQ(r.outputs[0].input, -1);
  EXPECT_EQ(r.outputs[0].other_outputs, std::vector<int64_t>{1});
  EXPECT_EQ(r.outputs[1].value, 3);
  EXPECT_EQ(r.outputs[1].other_outputs, std::vector<int64_t>{0});
  EXPECT_TRUE(r.outputs[2].other_outputs.empty());
  EXPECT_EQ(r.outputs[3].value, 7);
  EXPECT_EQ(r.outputs[3].input, 0);
  ASSERT_EQ(r.regenerated.size(), 1u);
  EXPECT_EQ(r.regenerated[0].value, 3);
  EXPECT_EQ(r.regenerated[0].node, 4);
  EXPECT_EQ(r.regenerated[0].write, 0);
  EXPECT_EQ(r.text(),
            "mutated inputs: 0\n"
            "write 0: node 3, mul_ writes %2 through %1 -> %2, in the storage of %1; seen by %1, "
            "%3; version 0 -> 1, mul_ at " +
                at_line(g_mul_line) +
                "\n"
                "write 1: node 5, add_ writes %0, in the storage of input 0; seen by no other "
                "value; version 0 -> 1, add_ at " +
                at_line(g_add_line) +
                "\n"
                "output 0: %1, in the storage of %1; aliases output 1\n"
                "output 1: %3, in the storage of %1; aliases output 0\n"
                "output 2: %5, in the storage of %5\n"
                "output 3: %7, in the storage of input 0\n"
                "regenerated %3 before node 4, after write 0\n");
}

TEST(AliasReportTest, WriteIntoAViewOfAnIntermediate) {
  static int line = 0;
  Program f = [](const std::vector<Tensor>& in) {
    Tensor y = in[0].clone();
    line = __LINE__ + 1;
    y.slice(0, 1, 3).mul_(2.0);
    return std::vector<Tensor>{y};
  };
  const func::AliasReport r = func::alias_report(func::capture(f, {vec({0, 1, 2, 3})}));
  EXPECT_EQ(r.text(),
            "mutated inputs: none\n"
            "write 0: node 2, mul_ writes %2 through %1 -> %2, in the storage of %1; seen by %1; "
            "version 0 -> 1, mul_ at " +
                at_line(line) +
                "\n"
                "output 0: %1, in the storage of %1\n"
                "regenerated views: none\n");
}

// A view of a view read after a write through a third view: both are regenerated, the parent
// first; a view made after the write is not.
TEST(AliasReportTest, StaleViewOfAViewRegeneratesItsParent) {
  Program f = [](const std::vector<Tensor>& in) {
    Tensor y = in[0].clone();         // %1
    Tensor a = y.slice(0, 0, 3);      // %2
    Tensor b = a.slice(0, 1, 3);      // %3
    y.select(0, 2).fill_(0.5);        // %4 = select, %5 = fill_
    Tensor later = y.slice(0, 2, 4);  // %6
    return std::vector<Tensor>{b, later};
  };
  const func::AliasReport r = func::alias_report(func::capture(f, {vec({1, 2, 3, 4})}));
  ASSERT_EQ(r.regenerated.size(), 2u) << r.text();
  EXPECT_EQ(r.regenerated[0].value, 2);
  EXPECT_EQ(r.regenerated[1].value, 3);
  EXPECT_EQ(r.regenerated[0].node, -1);  // at the return
  EXPECT_EQ(r.writes[0].seen_by, (std::vector<int64_t>{1, 2, 3})) << r.text();
  EXPECT_NE(r.text().find("regenerated %3 before the return, after write 0"), std::string::npos);
}

// Note [Write sites]: each write names the versions it moved, counted on from the versions the
// storages had before the capture, and its op and line; passes and hand-built graphs name none.
TEST(AliasReportTest, WritesNameTheirVersionsAndSites) {
  static int lines[3] = {0, 0, 0};
  Program f = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    lines[0] = __LINE__ + 1;
    x.select(0, 1).fill_(7.0);
    lines[1] = __LINE__ + 1;
    x.neg_();
    Tensor y = x * 2.0;
    lines[2] = __LINE__ + 1;
    y.slice(0, 0, 2).sub_(1.0);
    return std::vector<Tensor>{y};
  };
  Tensor x = vec({1, 2, 3, 4});
  x.add_(1.0);
  x.add_(1.0);  // the input enters the capture at version 2
  const func::Graph g = func::capture(f, {x});
  const func::AliasReport r = func::alias_report(g);
  ASSERT_EQ(r.writes.size(), 3u) << g.code();
  const int64_t versions[3] = {2, 3, 0};
  const char* ops[3] = {"fill_", "neg_", "sub_"};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(r.writes[i].site.has_value());
    EXPECT_EQ(r.writes[i].site->version, versions[i]);
    EXPECT_EQ(r.writes[i].site->op, ops[i]);
    EXPECT_EQ(r.writes[i].site->file, __FILE__);
    EXPECT_EQ(r.writes[i].site->line, lines[i]);
    EXPECT_EQ(g.nodes[r.writes[i].node].site->text(),
              str("version ", versions[i], " -> ", versions[i] + 1, ", ", ops[i], " at ",
                  at_line(lines[i])));
  }
  EXPECT_EQ(x.version(), 4u);
  for (const func::Node& node : func::functionalize(g).nodes) EXPECT_FALSE(node.site) << node.op;
  func::WriteSite old;
  old.version = 3;
  EXPECT_EQ(old.text(), "version 3 -> 4 (site too old to be remembered)");
}

// Note [Stale saved tensors]: sin saves y; mul_ then writes y (through the storage's root) and
// exp's result is written through a view: each saved tensor names the write that made it stale,
// each write the saved tensors it makes stale, the report's text and the picture show both.
TEST(AliasReportTest, WritesNameTheSavedTensorsTheyMakeStale) {
  Program f = [](const std::vector<Tensor>& in) {
    Tensor y = in[0] * 2.0;      // %1 = mul(%0, 2.0)
    Tensor s = y.sin();          // %2 = sin(%1): SinBackward0 saves self (%1), version 0
    y.mul_(3.0);                 // %3 = mul_(%1, 3.0): makes it stale
    Tensor c = y.cos();          // %4 = cos(%1): saved at version 1, current
    Tensor e = in[0].exp();      // %5 = exp(%0): ExpBackward0 saves its result
    e.slice(0, 0, 2).add_(1.0);  // %6 = slice(%5, ...)  %7 = add_(%6, 1.0)
    return std::vector<Tensor>{s, c, e};
  };
  Tensor x = vec({1, 2, 3, 4}).requires_grad_();
  const func::Graph g = func::capture(f, {x});
  ASSERT_EQ(g.nodes.size(), 7u) << g.code();
  auto find = [&](const std::string& backward, const std::string& name) -> int64_t {
    for (size_t i = 0; i < g.saved.size(); ++i) {
      if (g.saved[i].backward == backward && g.saved[i].name == name) return int64_t(i);
    }
    ADD_FAILURE() << "no saved " << backward << "." << name;
    return -1;
  };
  const int64_t sin_self = find("SinBackward0", "self");
  const int64_t cos_self = find("CosBackward0", "self");
  const int64_t exp_result = find("ExpBackward0", "result");
  ASSERT_GE(sin_self, 0);
  ASSERT_GE(cos_self, 0);
  ASSERT_GE(exp_result, 0);
  const func::SavedTensor& a = g.saved[sin_self];
  EXPECT_EQ(a.node, 1);
  EXPECT_EQ(a.value, 1);
  EXPECT_EQ(a.storage, 1);
  EXPECT_EQ(a.version, 0);
  EXPECT_EQ(a.version_now, 1);
  EXPECT_EQ(a.stale_by, 2);  // mul_
  const func::SavedTensor& b = g.saved[cos_self];
  EXPECT_EQ(b.node, 3);
  EXPECT_EQ(b.version, 1);
  EXPECT_FALSE(b.stale());
  EXPECT_EQ(b.stale_by, -1);
  const func::SavedTensor& e = g.saved[exp_result];
  EXPECT_EQ(e.node, 4);
  EXPECT_EQ(e.storage, 5);
  EXPECT_EQ(e.version, 0);
  EXPECT_EQ(e.stale_by, 6);  // add_ through the view

  const func::AliasReport r = func::alias_report(g);
  ASSERT_EQ(r.writes.size(), 2u);
  EXPECT_EQ(r.writes[0].invalidates, std::vector<int64_t>{sin_self});
  EXPECT_EQ(r.writes[1].invalidates, std::vector<int64_t>{exp_result});
  const std::string text = r.text();
  EXPECT_NE(text.find(str("write 0: node 2, mul_ writes %1, in the storage of %1; seen by no "
                          "other value; version 0 -> 1, mul_ at ")),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(str("; makes stale saved tensor ", sin_self, "\n")), std::string::npos)
      << text;
  EXPECT_NE(text.find(str(
                "saved ", sin_self,
                ": SinBackward0.self (%1) by %2 = sin(%1, None, None), in the storage of %1, saved "
                "at version 0, now 1: STALE, made stale by write 0 (node 2: %3 = "
                "mul_(%1, 3.0))\n")),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(str(
                "saved ", cos_self,
                ": CosBackward0.self (%1) by %4 = cos(%1, None, None), in the storage of %1, saved "
                "at version 1, current\n")),
            std::string::npos)
      << text;
  // Eager backward refuses the stale one, naming the same write.
  EXPECT_THROW(f({vec({1, 2, 3, 4}).requires_grad_()})[0].sum().backward(), Error);

  const std::string dot = func::to_dot(g);
  auto has = [&](const std::string& s) { return dot.find(s) != std::string::npos; };
  EXPECT_TRUE(has(str("ps", sin_self, " [shape=note, label=\"saved ", sin_self,
                      ": SinBackward0.self (%1)\\nsaved at version 0, now 1\\nSTALE: made "
                      "stale by write 0\\n%3 = mul_(%1, 3.0)\", style=filled, fillcolor=red")))
      << dot;
  EXPECT_TRUE(has(str("pv3 -> ps", sin_self,
                      " [color=red, fontcolor=red, penwidth=2, "
                      "label=\"makes stale\"];")))
      << dot;
  EXPECT_TRUE(has(str("pv2 -> ps", sin_self, " [style=dashed, arrowhead=none, label=\"saves\"];")));
  EXPECT_TRUE(has(str("ps", cos_self, " [shape=note, label=\"saved ", cos_self,
                      ": CosBackward0.self (%1)\\nsaved at version 1\", style=filled, "
                      "fillcolor=orange];")))
      << dot;
  EXPECT_TRUE(has(str("pv7 -> ps", exp_result, " [color=red")));
  // The functional form saves nothing stale: it writes nothing.
  EXPECT_TRUE(func::functionalize(g).saved.empty());
}

TEST(VerifyTest, AgreesOnCorrectPrograms) {
  const func::VerifyResult r = func::verify(two_views, {vec({1, 2, 3, 4})});
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.first_divergent_node, -1);
  EXPECT_NO_THROW(r.check());
  EXPECT_EQ(r.summary(), "verify: ok (eager, replayed and functionalized agree bit for bit)\n");
  Program setitem = [](const std::vector<Tensor>& in) {
    using namespace indexing;
    Tensor y = in[0].clone();
    y.set_item_({Slice(1, None)}, in[1].slice(0, 0, 3));
    Tensor idx = on_test_device(from_vector<int64_t>({0, 2, 0}, {3}));
    y.index_put_(std::vector<Tensor>{idx}, in[1].slice(0, 1, 4), /*accumulate=*/true);
    Tensor x = in[1];
    x.masked_fill_(y > 2.0, -1.0);
    return std::vector<Tensor>{y};
  };
  for (func::Remove remove : {func::Remove::kMutations, func::Remove::kMutationsAndViews}) {
    const func::VerifyResult s =
        func::verify(setitem, {vec({1, 2, 3, 4}), vec({5, 6, 7, 8})}, remove);
    EXPECT_TRUE(s.ok()) << s.summary();
  }
}

TEST(VerifyTest, CatchesADroppedViewRegeneration) {
  const func::VerifyResult r =
      func::verify(two_views, {vec({1, 2, 3, 4})}, &func::testing::drop_view_regeneration);
  ASSERT_FALSE(r.ok());
  // y = [2, 4, 3, 4]: b = y[1:3] is [4, 3], the stale b [2, 3]; c = b + 1 likewise.
  ASSERT_EQ(r.differences.size(), 2u) << r.summary();
  EXPECT_EQ(r.differences[0].run, "functionalized");
  EXPECT_EQ(r.differences[0].what, "output 1");
  EXPECT_EQ(r.differences[0].detail.rfind("element 0 (flat) is 2", 0), 0u) << r.summary();
  EXPECT_EQ(r.differences[1].what, "output 2");
  EXPECT_EQ(r.differences[1].detail.rfind("element 0 (flat) is 3", 0), 0u) << r.summary();
  // The prefix ending at the write returns the written view, regenerated after the write too.
  EXPECT_EQ(r.first_divergent_node, 3) << r.summary();
  EXPECT_EQ(r.first_divergent_code.rfind("%4 = mul_(%2, 2.0", 0), 0u) << r.summary();
  EXPECT_THROW(r.check(), func::VerifyError);
  try {
    r.check();
  } catch (const func::VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("first divergent node: 3"), std::string::npos);
  }
  // A program without a regenerated view is untouched by the broken pass: verify agrees.
  Program f = [](const std::vector<Tensor>& in) {
    Tensor y = in[0].clone();
    y.slice(0, 1, 3).mul_(2.0);
    return std::vector<Tensor>{y};
  };
  EXPECT_TRUE(func::verify(f, {vec({1, 2, 3, 4})}, &func::testing::drop_view_regeneration).ok());
}

TEST(VerifyTest, CatchesAPassThatDropsTheInputWrite) {
  // A pass that forgets the final copy_ into the input: the input differs and is not written.
  auto no_epilogue = [](const func::Graph& g) {
    func::Graph pure = func::functionalize(g);
    while (!pure.nodes.empty() && pure.nodes.back().op == "copy_") pure.nodes.pop_back();
    return pure;
  };
  const func::VerifyResult r = func::verify(two_views, {vec({1, 2, 3, 4})}, no_epilogue);
  ASSERT_EQ(r.differences.size(), 2u) << r.summary();
  EXPECT_EQ(r.differences[0].what, "input 0");
  EXPECT_EQ(r.differences[0].detail.rfind("element 0 (flat) is 1, eager 2", 0), 0u);
  EXPECT_EQ(r.differences[1].what, "input 0");
  EXPECT_EQ(r.differences[1].detail, "written by eager only");
  EXPECT_EQ(r.first_divergent_node, 5) << r.summary();  // add_ into the input
}

// verify compares the replay's versions and aliasing with eager's. A program whose Python-like
// control flow depends on state outside its tensors (here: a call count) replays the path the
// capture took, which verify reports: the replay writes the input eager does not, and returns an
// alias of the input where eager returns a copy.
TEST(VerifyTest, CatchesAReplayWhoseWritesAndAliasingDifferFromEager) {
  auto calls = std::make_shared<int>(0);
  Program f = [calls](const std::vector<Tensor>& in) {
    if ((*calls)++ == 0) {  // the capture's run
      Tensor x = in[0];
      x.mul_(1.0);  // the same values: only the version and the aliasing differ
      return std::vector<Tensor>{x.slice(0, 0, 2), in[1] * 1.0};
    }
    return std::vector<Tensor>{in[0].slice(0, 0, 2).clone(), in[1] * 1.0};
  };
  const func::VerifyResult r = func::verify(f, {vec({1, 2, 3, 4}), vec({5, 6})});
  ASSERT_FALSE(r.ok());
  auto find = [&](const std::string& run, const std::string& what, const std::string& detail) {
    for (const func::Difference& d : r.differences) {
      if (d.run == run && d.what == what && d.detail == detail) return true;
    }
    return false;
  };
  EXPECT_TRUE(find("replayed", "input 0", "version moved by 1, eager 0")) << r.summary();
  EXPECT_TRUE(find("replayed", "output 0", "aliases input 0 (eager's does the opposite)"))
      << r.summary();
  EXPECT_TRUE(find("functionalized", "input 0", "written by the functionalized run only"))
      << r.summary();
  for (const func::Difference& d : r.differences) {  // the values agree everywhere
    EXPECT_EQ(d.detail.find("element"), std::string::npos) << r.summary();
    EXPECT_NE(d.what, "input 1") << r.summary();
    EXPECT_NE(d.what, "output 1") << r.summary();
  }
  EXPECT_THROW(r.check(), func::VerifyError);
}

// Saved tensors that are one tensor (the same value at the same version) are one note of the
// picture, whichever slots and nodes saved it; the same value at another version is another.
TEST(PictureTest, OneTensorSavedInSeveralSlotsIsOneNote) {
  Program f = [](const std::vector<Tensor>& in) {
    Tensor y = in[0] * 2.0;  // %1
    Tensor z = y * y;        // %2 = mul(%1, %1): MulBackward0 saves self and other, both %1 v0
    Tensor s = y.sin();      // %3 = sin(%1): SinBackward0 saves self, %1 v0 again
    y.mul_(3.0);             // %4 = mul_(%1, 3.0): makes the three stale
    Tensor c = y.cos();      // %5 = cos(%1): %1 at version 1, another note
    return std::vector<Tensor>{z, s, c};
  };
  const func::Graph g = func::capture(f, {vec({1, 2, 3}).requires_grad_()});
  ASSERT_EQ(g.nodes.size(), 5u) << g.code();
  std::vector<size_t> v0;
  size_t v1 = 0;
  for (size_t i = 0; i < g.saved.size(); ++i) {
    ASSERT_EQ(g.saved[i].value, 1) << i;
    if (g.saved[i].version == 0) {
      v0.push_back(i);
    } else {
      v1 = i;
    }
  }
  ASSERT_EQ(v0.size(), 3u);
  ASSERT_EQ(g.saved.size(), 4u);
  const std::string dot = func::to_dot(g);
  size_t notes = 0;
  for (size_t at = dot.find("shape=note"); at != std::string::npos;
       at = dot.find("shape=note", at + 1)) {
    ++notes;
  }
  EXPECT_EQ(notes, 2u) << dot;
  std::string label;
  for (size_t k : v0) {
    const func::SavedTensor& s = g.saved[k];
    label += str(label.empty() ? "" : "\\n", "saved ", k, ": ", s.backward, ".", s.name, " (%1)");
  }
  const std::string note = str("ps", v0[0]);
  EXPECT_NE(dot.find(str(note, " [shape=note, label=\"", label,
                         "\\nsaved at version 0, now 1\\nSTALE: made stale by write 0\\n"
                         "%4 = mul_(%1, 3.0)\", style=filled, fillcolor=red")),
            std::string::npos)
      << dot;
  // One "saves" edge from each node that saved it, one "makes stale" edge.
  EXPECT_NE(dot.find(str("pv2 -> ", note, " [style=dashed, arrowhead=none, label=\"saves\"];")),
            std::string::npos);
  EXPECT_NE(dot.find(str("pv3 -> ", note, " [style=dashed, arrowhead=none, label=\"saves\"];")),
            std::string::npos);
  EXPECT_EQ(dot.find(str("pv2 -> ", note), dot.find(str("pv2 -> ", note)) + 1), std::string::npos);
  EXPECT_NE(dot.find(str("pv4 -> ", note, " [color=red")), std::string::npos);
  EXPECT_NE(dot.find(str("ps", v1, " [shape=note, label=\"saved ", v1,
                         ": CosBackward0.self (%1)\\nsaved at version 1\"")),
            std::string::npos)
      << dot;
}

TEST(PictureTest, SideBySideDotMarksStoragesWritesViewsAndRegenerations) {
  func::Graph g = func::capture(two_views, {vec({1, 2, 3, 4})});
  func::Graph pure = func::functionalize(g);
  const std::string dot = func::side_by_side_dot(g, pure);
  auto has = [&](const std::string& s) { return dot.find(s) != std::string::npos; };
  EXPECT_TRUE(has("subgraph cluster_program {")) << dot;
  EXPECT_TRUE(has("subgraph cluster_functional {"));
  // The storage of %1 (y, a, b) is one frame; the input's (x, x.t()) another.
  EXPECT_TRUE(has("subgraph cluster_ps1 {\n      label=\"storage of %1\""));
  EXPECT_TRUE(has("subgraph cluster_ps0 {\n      label=\"storage of %0 (input 0)\""));
  EXPECT_TRUE(has("pv0 [shape=ellipse, label=\"%0\\ninput 0 (mutated)\\nfloat32[4]\", color=red"));
  EXPECT_TRUE(has("pv1 -> pv2 [style=dashed, label=\"slice\"];"));
  EXPECT_TRUE(has("pv2 -> pv4 [color=red, penwidth=2, fontcolor=red, label=\"writes\"];"));
  EXPECT_TRUE(
      has("pv4 [shape=box, label=\"%4 = mul_(%2, 2.0)\\nfloat32[2]\\nwrite 0\\nversion 0 -> 1, "
          "mul_ at " +
          at_line(g_mul_line) + "\", color=red"))
      << dot;
  EXPECT_TRUE(
      has("pv3 [shape=box, label=\"%3 = slice(%1, 0, 1, 3, 1)\\nfloat32[2]\\nregenerated x1\", "
          "color=blue"));
  EXPECT_TRUE(has("pv3 -> pv5;"));
  EXPECT_TRUE(has("pv1 -> preturn [label=\"0\"];"));
  EXPECT_TRUE(has("pv7 -> preturn [label=\"3\"];"));
  // The functional form: the write scattered back (orange), the input written by copy_.
  EXPECT_TRUE(has("fv3 [shape=box, label=\"%3 = mul(%2, 2.0)\\nfloat32[2]\"];")) << dot;
  EXPECT_TRUE(
      has("fv4 [shape=box, label=\"%4 = slice_scatter(%1, %3, 0, 0, 2, 1)\\nfloat32[4]\", "
          "style=filled, fillcolor=\"#ffe0b2\""));
  EXPECT_TRUE(has("fv1 -> fv4;"));
  EXPECT_TRUE(has("fv3 -> fv4;"));
  EXPECT_EQ(dot.find("mul_", dot.find("cluster_functional")), std::string::npos);

  const std::string one = func::to_dot(g, "two views");
  EXPECT_EQ(one.rfind("digraph program {", 0), 0u);
  EXPECT_NE(one.find("label=\"two views\""), std::string::npos);

  const std::string path = ::testing::TempDir() + "/side_by_side.svg";
  func::render_side_by_side(g, pure, path);
  std::ifstream in(path);
  std::stringstream svg;
  svg << in.rdbuf();
  EXPECT_NE(svg.str().find("<svg"), std::string::npos);
  EXPECT_NE(svg.str().find("storage of %1"), std::string::npos);
  std::remove(path.c_str());
  EXPECT_THROW(func::render_side_by_side(g, pure, ::testing::TempDir() + "/noext"), ValueError);
}

}  // namespace
}  // namespace mutagrad
