// render: pictures of backward graphs, laid out and drawn in process by Graphviz's library
// (cgraph + gvc; Debian's libgraphviz-dev, which ./bazelw installs).
//
//   Tensor loss = (h * h).sum();
//   h.add_(1.0);                                    // makes MulBackward0's saved h stale
//   autograd::render({loss}, "graph.svg");          // red: the stale tensor and its write
//   std::string svg = autograd::render_dot(autograd::to_dot(loss), "svg");
//
// The picture is autograd::to_dot's graph (autograd/graph_export.h), laid out with "dot".
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

// DOT text rendered to `format` ("svg", "png", "pdf", ... any format of the installed Graphviz
// plugins). Throws ValueError for a format Graphviz cannot write or text it cannot parse.
std::string render_dot(const std::string& dot, const std::string& format);

// Writes the picture of the graphs of `roots` to `path`, in the format its extension names
// (".svg", ".png", ...). Throws ValueError for a path without an extension or that cannot be
// written.
void render(TensorList roots, const std::string& path);

}  // namespace mutagrad::autograd
