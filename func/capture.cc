#include "func/capture.h"

#include <unordered_map>

namespace mutagrad::func {

namespace {

using autograd::capture::Arg;
using autograd::capture::Args;

ValueInfo info_of(const Tensor& t) {
  ValueInfo info;
  info.shape.assign(t.sizes().begin(), t.sizes().end());
  info.dtype = t.dtype();
  info.device = t.device();
  return info;
}

// The storage a tensor's memory belongs to (null for a storage without memory).
const void* storage_key(const Tensor& t) { return t.storage().data(); }

// Note [What capture records]
class GraphTracer final : public autograd::capture::Tracer {
 public:
  Graph graph;

  void add_input(const Tensor& t, size_t i) {
    if (!t.defined()) {
      throw ValueError(str("capture(): example input ", i, " is an undefined tensor"));
    }
    const void* key = storage_key(t);
    if (key != nullptr && storages_.count(key) != 0) {
      throw CaptureError("capture", str("capture(): example inputs ", storages_.at(key), " and ", i,
                                        " share a storage; capture cannot yet keep "
                                        "aliased inputs in sync: pass independent tensors "
                                        "(e.g. .clone() one of them)"));
    }
    const int64_t id = graph.add_value(info_of(t));
    graph.inputs.push_back(id);
    remember(t, id);
    if (key != nullptr) storages_[key] = id;
  }

  // The value of `t`; a new constant when no recorded op made it.
  int64_t id_of(const Tensor& t, const std::string& op) {
    auto it = ids_.find(t.unsafe_impl());
    if (it != ids_.end()) return it->second;
    const void* key = storage_key(t);
    if (key != nullptr && storages_.count(key) != 0) {
      throw CaptureError(op,
                         str("capture(): an argument of ", op, " is a view of %", storages_.at(key),
                             " made by an op that func::capture does not cover yet; use "
                             "the covered view ops (select, slice, narrow, view, reshape, "
                             "transpose, permute, t, expand, unsqueeze, squeeze, alias)"));
    }
    if (!t.is_view()) {
      if (const auto& fn = t.grad_fn()) {
        throw CaptureError(fn->name(),
                           str("capture(): an argument of ", op, " was computed (", fn->name(),
                               ") by an op that func::capture does not cover yet; it would be "
                               "baked into the graph as a constant"));
      }
    }
    const int64_t id = graph.add_value(info_of(t));
    graph.constants[id] = t;
    remember(t, id);
    if (key != nullptr) storages_[key] = id;
    return id;
  }

  void record(const char* op, OpKind kind, Args args, const Tensor& result) override {
    const std::string name = kind == OpKind::kInPlace ? std::string(op) + "_" : std::string(op);
    if (find_op(name) == nullptr) {
      throw CaptureError(name, str("capture(): the op ", name,
                                   " is not supported by func::capture yet (no interpreter "
                                   "entry and no functional form)"));
    }
    Node node;
    node.op = name;
    const Tensor* self = nullptr;
    for (const Arg& arg : args) {
      if (const auto* t = std::get_if<Tensor>(&arg)) {
        if (!t->defined()) {
          node.args.emplace_back(std::monostate{});
          continue;
        }
        if (self == nullptr) self = t;
        node.args.emplace_back(ValueRef{id_of(*t, name)});
      } else if (const auto* list = std::get_if<std::vector<Tensor>>(&arg)) {
        ValueList ids;
        for (const Tensor& e : *list) ids.ids.push_back(e.defined() ? id_of(e, name) : -1);
        node.args.emplace_back(std::move(ids));
      } else if (const auto* s = std::get_if<Scalar>(&arg)) {
        node.args.emplace_back(*s);
      } else if (const auto* l = std::get_if<std::vector<int64_t>>(&arg)) {
        node.args.emplace_back(*l);
      } else if (const auto* dt = std::get_if<ScalarType>(&arg)) {
        node.args.emplace_back(*dt);
      } else {
        node.args.emplace_back(std::monostate{});
      }
    }
    if (self != nullptr && result.is_same(*self) && kind != OpKind::kInPlace) return;  // identity
    if (kind == OpKind::kAuto) {
      kind = self != nullptr && result.is_alias_of(*self) ? OpKind::kView : OpKind::kFunctional;
    }
    node.kind = kind;
    node.output = graph.add_value(info_of(result));
    if (kind != OpKind::kInPlace) {
      remember(result, node.output);
      const void* key = storage_key(result);
      if (kind == OpKind::kFunctional && key != nullptr) storages_[key] = node.output;
    }
    graph.nodes.push_back(std::move(node));
  }

  void unrecorded_write(const MutationSite& site, const TensorImpl* written) override {
    if (written == nullptr) return;
    const void* key = written->storage().data();
    if (key == nullptr || storages_.count(key) == 0) return;  // a temporary of an op
    const std::string op = site.op != nullptr ? site.op : "an in-place op";
    throw CaptureError(
        op, str("capture(): the in-place op ", op,
                site.file != nullptr ? str(" (", site.file, ":", site.line, ")") : std::string(),
                " writes %", storages_.at(key),
                " but is not supported by func::capture yet; use the covered "
                "in-place ops (copy_, fill_, add_, sub_, mul_, div_, "
                "masked_fill_, index_put_, x[i] = v, unary ops such as neg_)"));
  }

 private:
  void remember(const Tensor& t, int64_t id) {
    ids_[t.unsafe_impl()] = id;
    keep_.push_back(t);  // keeps the TensorImpl (and the storage) alive: the keys stay unique
  }

  std::unordered_map<const TensorImpl*, int64_t> ids_;
  std::unordered_map<const void*, int64_t> storages_;
  std::vector<Tensor> keep_;
};

// Installs a tracer for a scope; restores the previous one on the way out (also on a throw).
class TracerScope {
 public:
  explicit TracerScope(autograd::capture::Tracer* tracer)
      : previous_(autograd::capture::set_tracer(tracer)) {}
  ~TracerScope() { autograd::capture::set_tracer(previous_); }
  TracerScope(const TracerScope&) = delete;
  TracerScope& operator=(const TracerScope&) = delete;

 private:
  autograd::capture::Tracer* previous_;
};

}  // namespace

Graph capture(const Program& f, const std::vector<Tensor>& example_inputs) {
  GraphTracer tracer;
  for (size_t i = 0; i < example_inputs.size(); ++i) tracer.add_input(example_inputs[i], i);
  std::vector<Tensor> outputs;
  {
    TracerScope scope(&tracer);
    outputs = f(example_inputs);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined()) {
      throw ValueError(str("capture(): output ", i, " of the program is an undefined tensor"));
    }
    tracer.graph.outputs.push_back(tracer.id_of(outputs[i], "return"));
  }
  return std::move(tracer.graph);
}

}  // namespace mutagrad::func
