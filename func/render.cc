#include "func/render.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "autograd/render.h"
#include "func/report.h"

namespace mutagrad::func {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

std::string shape_text(const ValueInfo& info) {
  std::ostringstream os;
  os << dtype_name(info.dtype) << "[";
  for (size_t i = 0; i < info.shape.size(); ++i) os << (i == 0 ? "" : ", ") << info.shape[i];
  os << "]";
  return os.str();
}

const char* kStorageFills[] = {"#e8f0fe", "#e6f4ea", "#fef7e0", "#f3e8fd", "#e0f7fa", "#fce8e6"};

// Note [Graph pictures]
void write_body(std::ostream& os, const Graph& g, const std::string& p) {
  const AliasReport report = alias_report(g);
  const std::vector<int64_t> roots = storage_roots(g);
  const std::vector<std::string> lines = node_lines(g);
  std::set<int64_t> mutated;
  for (int64_t i : report.mutated_inputs) mutated.insert(g.inputs[i]);
  std::map<int64_t, int64_t> regenerated;  // value -> times
  for (const Regeneration& r : report.regenerated) ++regenerated[r.value];
  std::map<int64_t, int64_t> write_of;  // in-place node output -> write index
  for (size_t i = 0; i < report.writes.size(); ++i) {
    write_of[g.nodes[report.writes[i].node].output] = static_cast<int64_t>(i);
  }

  // The values of each storage, in id order; the declaration of each value.
  std::map<int64_t, std::vector<int64_t>> storages;
  std::map<int64_t, std::string> decl;
  auto name = [&](int64_t id) { return str(p, "v", id); };
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const int64_t id = g.inputs[i];
    const bool m = mutated.count(id) != 0;
    decl[id] = str(
        name(id), " [shape=ellipse, label=\"",
        escape(str("%", id, "\ninput ", i, m ? " (mutated)" : "", "\n", shape_text(g.values[id]))),
        "\"", m ? ", color=red, fontcolor=red, penwidth=2" : "", "];");
    storages[roots[id]].push_back(id);
  }
  for (const auto& [id, t] : g.constants) {
    decl[id] = str(name(id), " [shape=ellipse, style=filled, fillcolor=\"#eeeeee\", label=\"",
                   escape(str("%", id, "\nconstant\n", shape_text(g.values[id]))), "\"];");
    storages[roots[id]].push_back(id);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    const int64_t id = node.output;
    std::string label = str(lines.at(i), "\n", shape_text(g.values[id]));
    std::string attrs;
    if (node.kind == OpKind::kInPlace) {
      label += str("\nwrite ", write_of[id]);
      if (node.site) label += str("\n", node.site->text());
      attrs = ", color=red, fontcolor=red, penwidth=2";
    } else if (node.op.size() > 8 && node.op.compare(node.op.size() - 8, 8, "_scatter") == 0) {
      attrs = ", style=filled, fillcolor=\"#ffe0b2\", color=\"#e65100\"";
    } else if (regenerated.count(id) != 0) {
      label += str("\nregenerated x", regenerated[id]);
      attrs = ", color=blue, fontcolor=blue, penwidth=2";
    }
    decl[id] = str(name(id), " [shape=box, label=\"", escape(label), "\"", attrs, "];");
    storages[roots[id]].push_back(id);
  }

  // Storages with more than one value in a frame of their own.
  size_t color = 0;
  for (const auto& [root, ids] : storages) {
    if (ids.size() < 2) {
      os << "    " << decl[ids[0]] << "\n";
      continue;
    }
    const auto input = std::find(g.inputs.begin(), g.inputs.end(), root);
    const std::string owner = input != g.inputs.end()
                                  ? str(" (input ", input - g.inputs.begin(), ")")
                              : g.constants.count(root) != 0 ? std::string(" (constant)")
                                                             : std::string();
    os << "    subgraph cluster_" << p << "s" << root << " {\n"
       << "      label=\"storage of %" << root << owner << "\"; style=filled; color=\"#999999\"; "
       << "fillcolor=\"" << kStorageFills[color++ % 6] << "\";\n";
    for (int64_t id : ids) os << "      " << decl[id] << "\n";
    os << "    }\n";
  }

  // Edges: arguments to the node they feed.
  for (const Node& node : g.nodes) {
    for (size_t a = 0; a < node.args.size(); ++a) {
      std::vector<int64_t> from;
      if (const auto* v = std::get_if<ValueRef>(&node.args[a])) from.push_back(v->id);
      if (const auto* l = std::get_if<ValueList>(&node.args[a])) {
        for (int64_t e : l->ids) {
          if (e >= 0) from.push_back(e);
        }
      }
      for (int64_t src : from) {
        os << "    " << name(src) << " -> " << name(node.output);
        if (a == 0 && node.kind == OpKind::kView) {
          os << " [style=dashed, label=\"" << node.op << "\"]";
        } else if (a == 0 && node.kind == OpKind::kInPlace) {
          os << " [color=red, penwidth=2, fontcolor=red, label=\"writes\"]";
        }
        os << ";\n";
      }
    }
  }
  // Note [Stale saved tensors]: each saved tensor, beside the node whose op saved it; a stale
  // one red, with an edge from the write that made it stale. Saved tensors that are one tensor
  // (the same value at the same version: MulBackward0's self and other of y * y, or y saved by
  // two ops) are one note, listing each, with an edge from each node that saved it.
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> same;  // (value, version) -> saved
  std::vector<std::vector<size_t>> notes;
  for (size_t i = 0; i < report.saved.size(); ++i) {
    const SavedTensor& s = report.saved[i];
    if (s.value < 0) {
      notes.push_back({i});  // not a value of the program: nothing to tell it apart by
    } else {
      same[{s.value, s.version}].push_back(i);
    }
  }
  for (auto& [key, group] : same) notes.push_back(std::move(group));
  std::sort(notes.begin(), notes.end());  // by first saved index
  for (const std::vector<size_t>& note : notes) {
    const size_t i = note.front();
    const SavedTensor& s = report.saved[i];
    std::string label;
    for (size_t k : note) {
      const SavedTensor& t = report.saved[k];
      label += str(label.empty() ? "" : "\n", "saved ", k, ": ", t.backward, ".", t.name);
      if (t.value >= 0) label += str(" (%", t.value, ")");
    }
    label += str("\nsaved at version ", s.version);
    std::string attrs = ", style=filled, fillcolor=orange";
    if (s.stale()) {
      label += str(", now ", s.version_now, "\nSTALE: made stale by ");
      if (s.stale_by >= 0) {
        const auto w = write_of.find(g.nodes[s.stale_by].output);
        label += str("write ", w != write_of.end() ? w->second : -1, "\n", lines.at(s.stale_by));
      } else {
        label += "a write outside the program";
      }
      attrs = ", style=filled, fillcolor=red, fontcolor=white";
    }
    os << "    " << p << "s" << i << " [shape=note, label=\"" << escape(label) << "\"" << attrs
       << "];\n";
    std::set<int64_t> savers;
    for (size_t k : note) {
      const int64_t by = report.saved[k].node;
      if (by < 0 || !savers.insert(by).second) continue;
      os << "    " << name(g.nodes[by].output) << " -> " << p << "s" << i
         << " [style=dashed, arrowhead=none, label=\"saves\"];\n";
    }
    if (s.stale_by >= 0) {
      os << "    " << name(g.nodes[s.stale_by].output) << " -> " << p << "s" << i
         << " [color=red, fontcolor=red, penwidth=2, label=\"makes stale\"];\n";
    }
  }
  os << "    " << p << "return [shape=box, style=rounded, label=\"return\"];\n";
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    os << "    " << name(g.outputs[i]) << " -> " << p << "return [label=\"" << i << "\"];\n";
  }
}

}  // namespace

std::vector<std::string> node_lines(const Graph& g) {
  std::vector<std::string> lines;
  std::istringstream in(g.code());
  std::string line;
  size_t skip = 1 + g.constants.size();  // the header and the constants
  while (std::getline(in, line)) {
    if (skip > 0) {
      --skip;
      continue;
    }
    if (lines.size() == g.nodes.size()) break;
    line = line.substr(line.find('%'));
    const size_t comment = line.find("  # ");
    if (comment != std::string::npos) line.resize(comment);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::string to_dot(const Graph& graph, const std::string& title) {
  std::ostringstream os;
  os << "digraph program {\n  node [fontname=\"monospace\", fontsize=10];\n"
     << "  edge [fontname=\"monospace\", fontsize=9];\n";
  if (!title.empty()) os << "  label=\"" << escape(title) << "\"; labelloc=t;\n";
  write_body(os, graph, "p");
  os << "}\n";
  return os.str();
}

std::string side_by_side_dot(const Graph& program, const Graph& functional) {
  std::ostringstream os;
  os << "digraph side_by_side {\n  node [fontname=\"monospace\", fontsize=10];\n"
     << "  edge [fontname=\"monospace\", fontsize=9];\n"
     << "  subgraph cluster_program {\n    label=\"the program (in-place writes, views)\";\n";
  write_body(os, program, "p");
  os << "  }\n  subgraph cluster_functional {\n    label=\"its functional form\";\n";
  write_body(os, functional, "f");
  os << "  }\n}\n";
  return os.str();
}

void render_side_by_side(const Graph& program, const Graph& functional, const std::string& path) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot + 1 == path.size()) {
    throw ValueError(str("render_side_by_side: the path '", path,
                         "' has no extension to name the format; use e.g. step.svg or "
                         "step.png"));
  }
  const std::string data =
      autograd::render_dot(side_by_side_dot(program, functional), path.substr(dot + 1));
  std::ofstream f(path, std::ios::binary);
  if (f) f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) {
    throw ValueError(str("render_side_by_side: cannot write '", path,
                         "'; pass a path in an existing, writable directory"));
  }
}

}  // namespace mutagrad::func
