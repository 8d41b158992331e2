#include "func/report.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "func/render.h"

namespace mutagrad::func {

namespace {

int64_t self_of(const Node& node) { return std::get<ValueRef>(node.args.at(0)).id; }

std::string value_list(const std::vector<int64_t>& ids, const std::string& sep) {
  std::ostringstream os;
  for (size_t i = 0; i < ids.size(); ++i) os << (i == 0 ? "" : sep) << "%" << ids[i];
  return os.str();
}

// Note [Alias report]
// The report walks the captured graph as functionalize does (Note [Functionalization]), with
// the same bookkeeping (each root's version, the version each view was last made at) but
// without building a graph: a view read after a write to its storage is a regeneration, the
// written view included (the write reads its chain afresh and scatters into the root only:
// Note [Signed zeros of functionalized gradients]); a stale view's stale parents are too.
class Walker {
 public:
  explicit Walker(const Graph& g) : g_(g) {
    const size_t n = g.values.size();
    canon_.resize(n);
    for (size_t i = 0; i < n; ++i) canon_[i] = static_cast<int64_t>(i);
    root_.assign(n, -1);
    made_by_.assign(n, -1);
    made_at_.assign(n, -1);
    ver_.assign(n, 0);
    last_write_.assign(n, -1);
    born_.assign(n, false);
  }

  AliasReport run() {
    AliasReport r;
    r.input_values = g_.inputs;
    for (const auto& [id, t] : g_.constants) r.constant_values.push_back(id);
    for (int64_t id : g_.inputs) make_root(id);
    for (const auto& [id, t] : g_.constants) make_root(id);
    for (size_t i = 0; i < g_.nodes.size(); ++i) visit(static_cast<int64_t>(i), r);
    current_node_ = -1;
    for (int64_t id : g_.outputs) sync(id, r);
    for (size_t i = 0; i < g_.inputs.size(); ++i) {
      if (ver_[g_.inputs[i]] != 0) r.mutated_inputs.push_back(static_cast<int64_t>(i));
    }
    // Note [Stale saved tensors]
    r.saved = g_.saved;
    for (size_t i = 0; i < r.saved.size(); ++i) {
      for (WriteReport& w : r.writes) {
        if (w.node == r.saved[i].stale_by) w.invalidates.push_back(static_cast<int64_t>(i));
      }
    }
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      OutputReport out;
      out.value = canon_[g_.outputs[i]];
      out.storage = root_[out.value];
      const auto in = std::find(g_.inputs.begin(), g_.inputs.end(), out.storage);
      if (in != g_.inputs.end()) out.input = in - g_.inputs.begin();
      out.constant = g_.constants.count(out.storage) != 0;
      for (size_t j = 0; j < g_.outputs.size(); ++j) {
        if (j != i && root_[canon_[g_.outputs[j]]] == out.storage) {
          out.other_outputs.push_back(static_cast<int64_t>(j));
        }
      }
      r.outputs.push_back(std::move(out));
    }
    return r;
  }

  std::vector<int64_t> roots() {
    for (int64_t id : g_.inputs) make_root(id);
    for (const auto& [id, t] : g_.constants) make_root(id);
    for (const Node& node : g_.nodes) {
      if (node.kind == OpKind::kView || node.kind == OpKind::kInPlace) {
        root_[node.output] = root_[canon_[self_of(node)]];
        if (node.kind == OpKind::kInPlace) canon_[node.output] = canon_[self_of(node)];
      } else {
        root_[node.output] = node.output;
      }
    }
    return root_;
  }

 private:
  void make_root(int64_t id) {
    root_[id] = id;
    made_at_[id] = 0;
    born_[id] = true;
  }

  void sync(int64_t id, AliasReport& r) {
    id = canon_[id];
    const int64_t root = root_[id];
    if (root == id || made_at_[id] == ver_[root]) return;
    sync(self_of(g_.nodes[made_by_[id]]), r);
    if (born_[id]) r.regenerated.push_back({id, current_node_, last_write_[root]});
    born_[id] = true;
    made_at_[id] = ver_[root];
  }

  void sync_args(const Node& node, AliasReport& r) {
    for (const NodeArg& arg : node.args) {
      if (const auto* v = std::get_if<ValueRef>(&arg)) {
        sync(v->id, r);
      } else if (const auto* list = std::get_if<ValueList>(&arg)) {
        for (int64_t e : list->ids) {
          if (e >= 0) sync(e, r);
        }
      }
    }
  }

  void visit(int64_t index, AliasReport& r) {
    current_node_ = index;
    const Node& node = g_.nodes[index];
    const int64_t out = node.output;
    if (node.kind == OpKind::kView) {
      const int64_t parent = canon_[self_of(node)];
      root_[out] = root_[parent];
      made_by_[out] = index;
      members_[root_[out]].push_back(out);
      sync(out, r);
      return;
    }
    sync_args(node, r);
    if (node.kind != OpKind::kInPlace) {
      make_root(out);
      return;
    }
    const int64_t self = canon_[self_of(node)];
    canon_[out] = self;
    const int64_t root = root_[self];
    WriteReport w;
    w.node = index;
    w.op = node.op;
    w.site = node.site;
    w.value = self;
    w.storage = root;
    for (int64_t v = self; v != root; v = canon_[self_of(g_.nodes[made_by_[v]])]) {
      w.chain.push_back(v);
    }
    w.chain.push_back(root);
    std::reverse(w.chain.begin(), w.chain.end());
    w.seen_by = members_[root];
    w.seen_by.push_back(root);
    std::sort(w.seen_by.begin(), w.seen_by.end());
    w.seen_by.erase(std::unique(w.seen_by.begin(), w.seen_by.end()), w.seen_by.end());
    w.seen_by.erase(std::remove(w.seen_by.begin(), w.seen_by.end(), self), w.seen_by.end());
    ++ver_[root];
    last_write_[root] = static_cast<int64_t>(r.writes.size());
    made_at_[root] = ver_[root];
    r.writes.push_back(std::move(w));
  }

  const Graph& g_;
  std::vector<int64_t> canon_;       // an in-place op's output -> the value it wrote
  std::vector<int64_t> root_;        // value -> the root of its storage
  std::vector<int64_t> made_by_;     // view -> the index of the node that made it
  std::vector<int64_t> made_at_;     // value -> its root's version when it was last made
  std::vector<int64_t> ver_;         // root -> writes so far
  std::vector<int64_t> last_write_;  // root -> the index (in writes) of its last write
  std::vector<bool> born_;           // made at least once
  std::map<int64_t, std::vector<int64_t>> members_;  // root -> its values, in program order
  int64_t current_node_ = -1;
};

}  // namespace

std::vector<int64_t> storage_roots(const Graph& graph) { return Walker(graph).roots(); }

AliasReport alias_report(const Graph& graph) {
  AliasReport r = Walker(graph).run();
  r.node_code = node_lines(graph);
  return r;
}

std::string AliasReport::text() const {
  auto storage = [&](int64_t root) {
    const auto in = std::find(input_values.begin(), input_values.end(), root);
    if (in != input_values.end()) return str("input ", in - input_values.begin());
    if (std::count(constant_values.begin(), constant_values.end(), root) != 0) {
      return str("constant %", root);
    }
    return str("%", root);
  };
  std::ostringstream os;
  os << "mutated inputs: ";
  if (mutated_inputs.empty()) os << "none";
  for (size_t i = 0; i < mutated_inputs.size(); ++i)
    os << (i == 0 ? "" : ", ") << mutated_inputs[i];
  os << "\n";
  for (size_t i = 0; i < writes.size(); ++i) {
    const WriteReport& w = writes[i];
    os << "write " << i << ": node " << w.node << ", " << w.op << " writes %" << w.value;
    if (w.chain.size() > 1) os << " through " << value_list(w.chain, " -> ");
    os << ", in the storage of " << storage(w.storage) << "; seen by "
       << (w.seen_by.empty() ? std::string("no other value") : value_list(w.seen_by, ", "));
    if (w.site) os << "; " << w.site->text();
    if (!w.invalidates.empty()) {
      os << "; makes stale saved tensor" << (w.invalidates.size() > 1 ? "s " : " ");
      for (size_t j = 0; j < w.invalidates.size(); ++j) {
        os << (j == 0 ? "" : ", ") << w.invalidates[j];
      }
    }
    os << "\n";
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputReport& o = outputs[i];
    os << "output " << i << ": %" << o.value << ", in the storage of " << storage(o.storage);
    for (size_t j = 0; j < o.other_outputs.size(); ++j) {
      os << (j == 0 ? "; aliases output " : ", ") << o.other_outputs[j];
    }
    os << "\n";
  }
  if (regenerated.empty()) os << "regenerated views: none\n";
  for (const Regeneration& g : regenerated) {
    os << "regenerated %" << g.value << " before "
       << (g.node < 0 ? std::string("the return") : str("node ", g.node)) << ", after write "
       << g.write << "\n";
  }
  for (size_t i = 0; i < saved.size(); ++i) {
    const SavedTensor& s = saved[i];
    os << "saved " << i << ": " << s.backward << "." << s.name;
    if (s.value >= 0) os << " (%" << s.value << ")";
    if (s.node >= 0 && static_cast<size_t>(s.node) < node_code.size()) {
      os << " by " << node_code[static_cast<size_t>(s.node)];
    }
    if (s.storage >= 0) os << ", in the storage of " << storage(s.storage);
    os << ", saved at version " << s.version;
    if (!s.stale()) {
      os << ", current\n";
      continue;
    }
    os << ", now " << s.version_now << ": STALE, made stale by ";
    if (s.stale_by < 0) {
      os << "a write outside the program\n";
      continue;
    }
    const auto w = std::find_if(writes.begin(), writes.end(),
                                [&](const WriteReport& x) { return x.node == s.stale_by; });
    os << "write " << (w - writes.begin()) << " (node " << s.stale_by;
    if (static_cast<size_t>(s.stale_by) < node_code.size()) {
      os << ": " << node_code[static_cast<size_t>(s.stale_by)];
    }
    os << ")\n";
  }
  return os.str();
}

}  // namespace mutagrad::func
