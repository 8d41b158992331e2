#include "func/functionalize.h"

#include <utility>

#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"

namespace mutagrad::func {

namespace {

// Note [Functionalization]
class Functionalizer {
 public:
  Functionalizer(const Graph& g, Remove remove) : g_(g), remove_(remove) {
    const size_t n = g.values.size();
    canon_.resize(n);
    root_.resize(n, -1);
    made_by_.resize(n, -1);
    mat_.resize(n, {-1, -1});
    cur_.resize(n, -1);
    ver_.resize(n, 0);
    for (size_t i = 0; i < n; ++i) canon_[i] = static_cast<int64_t>(i);
  }

  Graph run() {
    for (int64_t id : g_.inputs) {
      const int64_t nid = out_.add_value(g_.values[id]);
      out_.inputs.push_back(nid);
      make_root(id, nid);
    }
    for (const auto& [id, t] : g_.constants) {
      const int64_t nid = out_.add_value(g_.values[id]);
      out_.constants[nid] = t;
      make_root(id, nid);
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i) visit(static_cast<int64_t>(i));
    for (int64_t id : g_.outputs) out_.outputs.push_back(sync(canon_[id]));
    // Writes to inputs and constants: one copy_ each, at the end.
    auto epilogue = [&](int64_t id, int64_t nid) {
      if (ver_[id] == 0) return;
      Node node;
      node.op = "copy_";
      node.kind = OpKind::kInPlace;
      node.args = {ValueRef{nid}, ValueRef{cur_[id]}};
      node.output = out_.add_value(g_.values[id]);
      out_.nodes.push_back(std::move(node));
    };
    for (size_t i = 0; i < g_.inputs.size(); ++i) epilogue(g_.inputs[i], out_.inputs[i]);
    auto it = out_.constants.begin();
    for (const auto& [id, t] : g_.constants) epilogue(id, (it++)->first);
    return compact(std::move(out_));
  }

  // Drops the view replays nothing reads (a view made where the program made it, then only
  // written through: the write reads its chain afresh) and numbers the values again in order.
  static Graph compact(Graph g) {
    std::vector<int64_t> uses(g.values.size(), 0);
    auto count = [&](const Node& node, int64_t delta) {
      for (const NodeArg& arg : node.args) {
        if (const auto* v = std::get_if<ValueRef>(&arg)) uses[v->id] += delta;
        if (const auto* list = std::get_if<ValueList>(&arg)) {
          for (int64_t e : list->ids) {
            if (e >= 0) uses[e] += delta;
          }
        }
      }
    };
    for (const Node& node : g.nodes) count(node, 1);
    for (int64_t id : g.outputs) ++uses[id];
    std::vector<bool> dead(g.nodes.size(), false);
    for (size_t i = g.nodes.size(); i-- > 0;) {  // readers come after what they read
      const Node& node = g.nodes[i];
      const bool replay =
          node.kind == OpKind::kView ||
          (node.op.size() > 5 && node.op.compare(node.op.size() - 5, 5, "_copy") == 0);
      if (replay && uses[node.output] == 0) {
        dead[i] = true;
        count(node, -1);
      }
    }
    std::vector<int64_t> id(g.values.size(), -1);
    Graph out;
    auto renumber = [&](int64_t old) {
      id[old] = out.add_value(g.values[old]);
      return id[old];
    };
    for (int64_t v : g.inputs) out.inputs.push_back(renumber(v));
    for (auto& [v, t] : g.constants) out.constants[renumber(v)] = t;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (dead[i]) continue;
      Node node = std::move(g.nodes[i]);
      for (NodeArg& arg : node.args) {
        if (auto* v = std::get_if<ValueRef>(&arg)) v->id = id[v->id];
        if (auto* list = std::get_if<ValueList>(&arg)) {
          for (int64_t& e : list->ids) {
            if (e >= 0) e = id[e];
          }
        }
      }
      node.output = renumber(node.output);
      out.nodes.push_back(std::move(node));
    }
    for (int64_t v : g.outputs) out.outputs.push_back(id[v]);
    return out;
  }

 private:
  void make_root(int64_t id, int64_t nid) {
    root_[id] = id;
    cur_[id] = nid;
    mat_[id] = {nid, 0};
  }

  int64_t emit(std::string op, OpKind kind, std::vector<NodeArg> args, const ValueInfo& info,
               bool write_path = false) {
    Node node;
    node.op = std::move(op);
    node.kind = kind;
    node.write_path = write_path;
    node.args = std::move(args);
    node.output = out_.add_value(info);
    out_.nodes.push_back(std::move(node));
    return out_.nodes.back().output;
  }

  // The new graph's value holding `id`'s current elements (regenerating a stale view).
  int64_t sync(int64_t id) {
    id = canon_[id];
    const int64_t r = root_[id];
    if (r == id) return cur_[r];
    if (mat_[id].second == ver_[r]) return mat_[id].first;
    const Node& view = g_.nodes[made_by_[id]];
    std::vector<NodeArg> args = view.args;
    args[0] = ValueRef{sync(std::get<ValueRef>(view.args[0]).id)};
    const bool copy = remove_ == Remove::kMutationsAndViews;
    const int64_t nid =
        emit(copy ? view.op + "_copy" : view.op, copy ? OpKind::kFunctional : OpKind::kView,
             std::move(args), g_.values[id]);
    mat_[id] = {nid, ver_[r]};
    return nid;
  }

  std::vector<NodeArg> synced_args(const Node& node) {
    std::vector<NodeArg> args = node.args;
    for (NodeArg& arg : args) {
      if (auto* v = std::get_if<ValueRef>(&arg)) {
        v->id = sync(v->id);
      } else if (auto* list = std::get_if<ValueList>(&arg)) {
        for (int64_t& e : list->ids) {
          if (e >= 0) e = sync(e);
        }
      }
    }
    return args;
  }

  // The dtype of the out-of-place form of an in-place node (the promoted type of a binary op).
  ScalarType functional_dtype(const Node& node, const std::string& op) const {
    const ValueInfo& self = g_.values[std::get<ValueRef>(node.args[0]).id];
    auto probe = [](const ValueInfo& info) {
      return empty(std::vector<int64_t>(info.shape.size(), 1), TensorOptions(info.dtype));
    };
    const Tensor a = probe(self);
    ScalarType t = self.dtype;
    if (op == "clamp") {  // tensor bounds promote (min(max(self, lo), hi)); numbers do not
      for (size_t i = 1; i < node.args.size() && i < 3; ++i) {
        if (const auto* v = std::get_if<ValueRef>(&node.args[i])) {
          t = promote_types(t, native::result_type(a, probe(g_.values[v->id])));
        }
      }
      return t;
    }
    if (op != "add" && op != "sub" && op != "mul" && op != "div" && op != "pow") return self.dtype;
    if (const auto* v = std::get_if<ValueRef>(&node.args[1])) {
      t = native::result_type(a, probe(g_.values[v->id]));
    } else if (const auto* s = std::get_if<Scalar>(&node.args[1])) {
      t = native::result_type(a, *s);
    }
    if (op == "div" && !is_floating_point(t)) t = default_dtype();
    return t;
  }

  void visit(int64_t index) {
    const Node& node = g_.nodes[index];
    const int64_t out = node.output;
    switch (node.kind) {
      case OpKind::kView: {
        const int64_t parent = canon_[std::get<ValueRef>(node.args[0]).id];
        root_[out] = root_[parent];
        made_by_[out] = index;
        sync(out);  // in the new graph where the program made it
        return;
      }
      case OpKind::kInPlace:
        write(node);
        canon_[out] = canon_[std::get<ValueRef>(node.args[0]).id];
        return;
      default: {
        const int64_t nid = emit(node.op, OpKind::kFunctional, synced_args(node), g_.values[out]);
        make_root(out, nid);
        return;
      }
    }
  }

  void write(const Node& node) {
    const int64_t self = canon_[std::get<ValueRef>(node.args[0]).id];
    const int64_t r = root_[self];
    const std::string op = node.op.substr(0, node.op.size() - 1);  // add_ -> add
    if (find_op(op) == nullptr) {
      throw CaptureError(node.op, str("functionalize(): the in-place op ", node.op,
                                      " has no functional form yet"));
    }
    // Note [Signed zeros of functionalized gradients]: the write reads its view chain afresh
    // from the root's current value (write_path reads: not the readers' views, whose backward
    // stays the standard one), and scatters back into those reads.
    std::vector<int64_t> chain{self};  // self, its parent, ..., below the root
    while (chain.back() != r) {
      chain.push_back(canon_[std::get<ValueRef>(g_.nodes[made_by_[chain.back()]].args[0]).id]);
    }
    std::vector<int64_t> read(chain.size(), -1);  // the new graph's value of each, fresh
    read.back() = cur_[r];
    const bool copy = remove_ == Remove::kMutationsAndViews;
    for (size_t i = chain.size() - 1; i-- > 0;) {
      const Node& view = g_.nodes[made_by_[chain[i]]];
      std::vector<NodeArg> args = view.args;
      args[0] = ValueRef{read[i + 1]};
      read[i] = emit(copy ? view.op + "_copy" : view.op, copy ? OpKind::kFunctional : OpKind::kView,
                     std::move(args), g_.values[chain[i]], /*write_path=*/true);
    }
    std::vector<NodeArg> op_args = node.args;
    op_args[0] = ValueRef{read[0]};
    for (size_t i = 1; i < op_args.size(); ++i) {
      if (auto* v = std::get_if<ValueRef>(&op_args[i])) {
        v->id = sync(v->id);
      } else if (auto* list = std::get_if<ValueList>(&op_args[i])) {
        for (int64_t& e : list->ids) {
          if (e >= 0) e = sync(e);
        }
      }
    }
    const ValueInfo& info = g_.values[self];
    ValueInfo result_info = info;
    result_info.dtype = functional_dtype(node, op);
    int64_t value = emit(op, OpKind::kFunctional, std::move(op_args), result_info);
    if (result_info.dtype != info.dtype) {
      value =
          emit("to", OpKind::kFunctional, {ValueRef{value}, info.dtype, str(info.device)}, info);
    }
    // Scatter back up the view chain, into the root. The innermost scatter of a write that
    // reads nothing of its view (copy_, fill_) keeps the standard +0.0 (eager zeroes it too).
    const bool reads_self = op != "copy" && op != "fill";
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      const Node& view = g_.nodes[made_by_[chain[i]]];
      std::vector<NodeArg> args{ValueRef{read[i + 1]}, ValueRef{value}};
      args.insert(args.end(), view.args.begin() + 1, view.args.end());
      value = emit(view.op + "_scatter", OpKind::kFunctional, std::move(args),
                   g_.values[chain[i + 1]], /*write_path=*/i > 0 || reads_self);
    }
    cur_[r] = value;
    ++ver_[r];
    // Every other value of the storage, the written view included, is regenerated from the new
    // root when read (as eager's reads after a write go through the base's new history).
    mat_[r] = {value, ver_[r]};
  }

  const Graph& g_;
  Remove remove_;
  Graph out_;
  std::vector<int64_t> canon_;                    // an in-place op's output -> the value it wrote
  std::vector<int64_t> root_;                     // value -> the root of its storage
  std::vector<int64_t> made_by_;                  // view -> index of the view node that made it
  std::vector<std::pair<int64_t, int64_t>> mat_;  // value -> (new value, root version)
  std::vector<int64_t> cur_;                      // root -> its current new value
  std::vector<int64_t> ver_;                      // root -> writes so far
};

// `t`'s elements in a new tensor, a leaf requiring grad when `t` is one, a non-leaf with
// history when `t` has history.
Tensor copy_for_capture(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor copy;
  {
    autograd::NoGradGuard no_grad;
    copy = t.detach().clone();
  }
  if (!t.requires_grad()) return copy;
  copy.requires_grad_();
  return t.is_leaf() ? copy : copy.clone();
}

}  // namespace

Graph functionalize(const Graph& graph, Remove remove) {
  return Functionalizer(graph, remove).run();
}

Program functionalize(Program f, Remove remove) {
  return [f = std::move(f), remove](const std::vector<Tensor>& inputs) {
    // Captured on copies: the program's writes reach the inputs once, through the graph. A
    // copy requires grad (and has history) when its input does, so that an op capture does
    // not cover, applied to it, is refused rather than baked in as a constant.
    std::vector<Tensor> copies;
    copies.reserve(inputs.size());
    for (const Tensor& t : inputs) copies.push_back(copy_for_capture(t));
    return functionalize(capture(f, copies), remove)(inputs);
  };
}

}  // namespace mutagrad::func
