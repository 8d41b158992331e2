// Pictures of captured graphs (func/graph.h): a program and its functional form side by side,
// as DOT text or drawn by Graphviz's library (autograd/render.h).
//
//   func::Graph g = func::capture(f, {x});
//   func::Graph pure = func::functionalize(g);
//   std::string dot = func::side_by_side_dot(g, pure);
//   func::render_side_by_side(g, pure, "step.svg");  // or .png, .pdf
#pragma once

#include <string>
#include <vector>

#include "func/graph.h"

namespace mutagrad::func {

// Note [Graph pictures]
// One box a value: `%3 = mul_` with its dtype and shape; inputs and constants are ellipses and
// the return a box of its own. The values of one storage (a root and its views, Note
// [Functionalization]) are drawn inside one shaded frame "storage of %1": one tensor, however
// many names. Highlights:
// - a write (in-place node) is red, with a bold red edge labelled "writes" from the value it
//   writes, and an input that a write reaches is red ("mutated");
// - a view is reached by a dashed edge labelled with its view op from its parent;
// - a view that functionalize replays after a write to its storage (AliasReport::regenerated)
//   is blue in the program, "regenerated";
// - in the functional form, each <view>_scatter (a write scattered back into its base) is
//   orange, and the final copy_ into an input red;
// - each saved tensor of the captured run's backward graph (Note [Stale saved tensors]) is a
//   note `<p>s<i>` on a dashed "saves" edge from the node that saved it: orange when current,
//   red when stale, with a bold red "makes stale" edge from the write that made it stale.
// DOT node names are `<prefix>v<id>` (value %id), `<prefix>return` for the return.

// Each node as Graph::code prints its call ("%3 = mul_(%2, 2.0)"), in node order.
std::vector<std::string> node_lines(const Graph& graph);

// The DOT text of one graph.
std::string to_dot(const Graph& graph, const std::string& title = "");

// The DOT text of `program` (left, node names p...) and `functional` (right, f...) in one
// picture. `functional` is usually func::functionalize(program).
std::string side_by_side_dot(const Graph& program, const Graph& functional);

// Draws side_by_side_dot to `path` in the format its extension names (".svg", ".png", ...).
// Throws ValueError for a path without an extension or that cannot be written.
void render_side_by_side(const Graph& program, const Graph& functional, const std::string& path);

}  // namespace mutagrad::func
