#include "func/capture.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "autograd/graph_export.h"
#include "autograd/node.h"
#include "autograd/stack_trace.h"

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

// The op a backward node's name comes from: "UnfoldBackward0" -> "unfold", "AsStridedBackward0"
// -> "as_strided"; another name as it is.
std::string op_of(const std::string& backward) {
  const size_t at = backward.rfind("Backward");
  if (at == std::string::npos || at == 0) return backward;
  std::string op;
  for (size_t i = 0; i < at; ++i) {
    const char c = backward[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i != 0) op += '_';
      op += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      op += c;
    }
  }
  return op;
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
    counter_values_.emplace(t.version_counter().id(), id);
    if (key != nullptr) {
      storages_[key] = id;
      varying_.insert(key);
    }
  }

  // The value of `t`; a new constant when no recorded op made it.
  int64_t id_of(const Tensor& t, const std::string& op) {
    auto it = ids_.find(t.unsafe_impl());
    if (it != ids_.end()) return it->second;
    const void* key = storage_key(t);
    if (key != nullptr && storages_.count(key) != 0) {
      // A view op reads no data: it reported itself (Note [Naming an uncovered op]).
      const std::string view_op = uncovered_view_op(t);
      throw CaptureError(
          view_op.empty() ? std::string("a view op not covered") : view_op,
          str("capture(): an argument of ", op, " is a view of %", storages_.at(key), " made by ",
              view_op.empty() ? std::string("a view op") : "the view op " + view_op,
              " that func::capture does not cover yet; use the covered view ops (select, slice, "
              "narrow, view, reshape, transpose, permute, t, expand, unsqueeze, squeeze, alias, "
              "diagonal, as_strided, unbind, split, chunk)",
              view_op == "detach" || view_op == "variable_data"
                  ? "; a detached alias has no place in a captured graph: detach outside the "
                    "program and pass the result in as an input"
                  : ""));
    }
    if (!t.is_view()) {
      if (const auto& fn = t.grad_fn()) {
        throw CaptureError(
            op_of(fn->name()),
            str("capture(): an argument of ", op, " was computed (", fn->name(),
                ") outside the captured program or by an op that func::capture does not cover; "
                "it would be baked into the graph as a constant, cut from its history. Pass it "
                "in as an input"));
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
    bool varying = false;  // whether an argument's values vary from replay to replay
    auto varies = [&](const Tensor& t) {
      const void* key = storage_key(t);
      varying = varying || (key != nullptr && varying_.count(key) != 0);
    };
    for (const Arg& arg : args) {
      if (const auto* t = std::get_if<Tensor>(&arg)) {
        if (!t->defined()) {
          node.args.emplace_back(std::monostate{});
          continue;
        }
        if (self == nullptr) self = t;
        node.args.emplace_back(ValueRef{id_of(*t, name)});
        varies(*t);
      } else if (const auto* list = std::get_if<std::vector<Tensor>>(&arg)) {
        ValueList ids;
        for (const Tensor& e : *list) {
          ids.ids.push_back(e.defined() ? id_of(e, name) : -1);
          if (e.defined()) varies(e);
        }
        node.args.emplace_back(std::move(ids));
      } else if (const auto* s = std::get_if<Scalar>(&arg)) {
        node.args.emplace_back(*s);
      } else if (const auto* l = std::get_if<std::vector<int64_t>>(&arg)) {
        node.args.emplace_back(*l);
      } else if (const auto* dt = std::get_if<ScalarType>(&arg)) {
        node.args.emplace_back(*dt);
      } else if (const auto* text = std::get_if<std::string>(&arg)) {
        node.args.emplace_back(*text);
      } else {
        node.args.emplace_back(std::monostate{});
      }
    }
    if (self != nullptr && result.is_same(*self) && kind != OpKind::kInPlace) return;  // identity
    if (kind == OpKind::kAuto) {
      kind = self != nullptr && result.is_alias_of(*self) ? OpKind::kView : OpKind::kFunctional;
    }
    if (name == "as_strided") check_as_strided(*self, result);
    // Note [Reads of traced values]: a written storage varies (a replay writes it again).
    const void* varying_key = kind == OpKind::kInPlace ? storage_key(*self) : storage_key(result);
    if ((varying || kind == OpKind::kInPlace) && varying_key != nullptr) {
      varying_.insert(varying_key);
    }
    node.kind = kind;
    if (kind == OpKind::kInPlace) {
      node.site = write_site(*self);
      write_counters_[static_cast<int64_t>(graph.nodes.size())] = self->version_counter().id();
    }
    // Note [Stale saved tensors]: the node whose op made result's grad_fn (kept alive).
    auto made = [&](const std::shared_ptr<autograd::Node>& fn) {
      if (!fn) return;
      node_of_fn_[fn.get()] = static_cast<int64_t>(graph.nodes.size());
      keep_fns_.push_back(fn);
    };
    made(result.grad_fn());
    // A write through a view: its base's CopySlices holds the saved tensors of the write's op.
    if (kind == OpKind::kInPlace && result.is_view()) made(result.base().grad_fn());
    node.output = graph.add_value(info_of(result));
    if (kind != OpKind::kInPlace) {
      remember(result, node.output);
      const void* key = storage_key(result);
      if (kind == OpKind::kFunctional && key != nullptr) storages_[key] = node.output;
    }
    graph.nodes.push_back(std::move(node));
  }

  // Note [Naming an uncovered op]
  // An uncovered view op reads no data: it reports its result (Note [Capture hook] in
  // autograd/capture_hook.h) and the refusal of a program that uses the view names that op,
  // with or without autograd history, for integer views too. Failing that (a view no op
  // reported), its grad_fn names it.
  void unrecorded_view(const char* op, const Tensor& view) override {
    view_ops_[view.unsafe_impl()] = {op, view.impl_ptr()};
  }

  // requires_grad_() on a traced tensor (Note [Capture hook]): a graph holds no flags.
  void requires_grad_changed(const TensorImpl& impl) override {
    const void* key = impl.storage().data();
    if (key == nullptr || varying_.count(key) == 0 || storages_.count(key) == 0) return;
    auto exact = ids_.find(&impl);
    throw CaptureError(
        "requires_grad_",
        str("capture(): requires_grad_() changes whether %",
            exact != ids_.end() ? exact->second : storages_.at(key),
            " (computed from the program's inputs) requires grad; a captured graph records no "
            "such flag (a replay would follow its inputs' flags). Call requires_grad_() on the "
            "inputs before capturing"));
  }

  // A custom Function (Note [Capture hook]): the graph would hold its forward's ops, and a
  // replay would differentiate those instead of its backward. Refused when an argument varies
  // from replay to replay or requires grad (a closed-over parameter); named by the Function.
  void custom_function(const std::string& name, const std::vector<Tensor>& args) override {
    for (size_t i = 0; i < args.size(); ++i) {
      const Tensor& t = args[i];
      if (!t.defined()) continue;
      const void* key = storage_key(t);
      const bool varies = key != nullptr && varying_.count(key) != 0;
      if (!varies && !t.requires_grad()) continue;
      const size_t at = name.rfind("Backward");
      const std::string fn = at != std::string::npos && at > 0 ? name.substr(0, at) : name;
      throw CaptureError(
          fn,
          str("capture(): the custom Function ", fn, " is applied to ",
              varies ? "a value computed from the program's inputs" : "a tensor that requires grad",
              " (tensor argument ", i,
              "); func::capture does not cover custom Functions: "
              "it would record the ops of its forward, and the graph's gradients would be "
              "those ops' instead of its backward's. Apply the Function outside the "
              "captured program, or write it with the covered ops"));
    }
  }

  // Without a dispatcher, the kernel's read is all the hook sees. The refusal names the op from
  // the C++ stack (autograd::StackTrace::public_op: the outermost mutagrad::NAME or
  // mutagrad::Tensor::NAME frame below the program's own code, from the binary's symbols); only
  // when that is unnamed (inlined away, a stripped binary) does it fall back to "an op". It is
  // paid on the refusal only.
  //
  // Note [Reads of traced values]
  // A read outside every covered op of a value that varies from replay to replay is refused:
  // an input, a value a recorded op computed from one, a storage a recorded op wrote. A
  // kernel's read is an op capture does not cover, whose result would be baked into the graph
  // as a constant; a host read (item(), bool(), tolist()) is data-dependent control flow, which
  // a straight-line graph cannot represent. Constants (closed-over tensors, factories' results)
  // and what covered ops compute from them alone read the same on every replay.
  void unrecorded_read(const TensorImpl& impl, const char* what, bool host_read) override {
    const void* key = impl.storage().data();
    if (key == nullptr || varying_.count(key) == 0) return;
    auto it = storages_.find(key);
    if (it == storages_.end()) return;
    const ValueInfo info = info_of_impl(impl);
    std::ostringstream value;
    auto exact = ids_.find(&impl);
    value << "%" << (exact != ids_.end() ? exact->second : it->second) << " ("
          << dtype_name(info.dtype) << IntArrayRef(info.shape)
          << ", computed from the program's inputs)";
    if (host_read) {
      throw CaptureError(
          what, str("capture(): ", what, "() reads the value of ", value.str(),
                    " on the host: data-dependent control flow, which a captured graph cannot "
                    "represent (it would replay the path these example inputs took for every "
                    "input). Compute with tensors instead (where(), masked_fill(), clamp()), or "
                    "read the value outside the captured program"));
    }
    // No dispatcher names the running op: the stack does (Note [Naming an uncovered op]).
    const std::string op = autograd::StackTrace::capture().public_op();
    const std::string named = op.empty() ? std::string("an op") : "the op " + op;
    throw CaptureError(
        op.empty() ? std::string("an op not covered") : op,
        str("capture(): ", named, ", which func::capture does not cover, read ", value.str(),
            "; its result would be baked into the graph as a constant. Use the covered ops "
            "(docs/functionalization.md lists them), or compute that value outside the "
            "captured program and pass it in as an input"));
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

  // Note [Stale saved tensors]: the tensors the backward graph of `outputs` saved, each with
  // the captured write that made it stale (the write on its storage from its saved version).
  void list_saved(const std::vector<Tensor>& outputs) {
    for (const autograd::SavedTensorInfo& info : autograd::saved_tensors(outputs)) {
      if (info.released) continue;
      SavedTensor s;
      s.backward = info.node->name();
      s.name = info.name;
      auto node = node_of_fn_.find(info.node);
      if (node != node_of_fn_.end()) s.node = node->second;
      if (info.data.defined()) s.value = value_of(info.data);
      s.version = info.saved_version;
      s.version_now = info.counter != nullptr ? info.version_now : info.saved_version;
      if (info.counter != nullptr) {
        auto c = counter_values_.find(info.counter->id());
        if (c != counter_values_.end()) s.storage = c->second;
        for (const auto& [index, counter] : write_counters_) {
          const std::optional<WriteSite>& site = graph.nodes[index].site;
          if (counter == info.counter->id() && site && site->version == s.version) {
            s.stale_by = index;
          }
        }
      }
      if (s.storage < 0 && s.value >= 0) s.storage = s.value;
      graph.saved.push_back(std::move(s));
    }
  }

 private:
  // The value `t` is, or (a saved leaf or output is kept as an alias without autograd metadata)
  // the latest value of the same storage, offset, shape, strides and dtype; -1 for none.
  int64_t value_of(const Tensor& t) const {
    auto it = ids_.find(t.unsafe_impl());
    if (it != ids_.end()) return it->second;
    int64_t found = -1;
    for (const Tensor& k : keep_) {
      if (storage_key(k) == storage_key(t) && k.storage_offset() == t.storage_offset() &&
          k.dtype() == t.dtype() && k.sizes().equals(t.sizes()) &&
          k.strides().equals(t.strides())) {
        found = std::max(found, ids_.at(k.unsafe_impl()));
      }
    }
    return found;
  }

  void remember(const Tensor& t, int64_t id) {
    counter_values_.emplace(t.version_counter().id(), id);
    ids_[t.unsafe_impl()] = id;
    keep_.push_back(t);  // keeps the TensorImpl (and the storage) alive: the keys stay unique
  }

  // Note [Write sites] (func/graph.cc): the write that just moved `written`'s version; none for
  // an inference tensor (its writes are not counted).
  static std::optional<WriteSite> write_site(const Tensor& written) {
    const VersionCounter& counter = written.version_counter();
    if (counter.is_inference() || counter.current() == 0) return std::nullopt;
    WriteSite site;
    site.version = static_cast<int64_t>(counter.current()) - 1;
    if (const std::optional<MutationSite> s = counter.site_of_bump(counter.current() - 1)) {
      if (s->op != nullptr) site.op = s->op;
      if (s->file != nullptr) site.file = s->file;
      site.line = s->line;
    }
    return site;
  }

  // The uncovered view op that made `t` (Note [Naming an uncovered op]); "" when unknown.
  std::string uncovered_view_op(const Tensor& t) const {
    auto it = view_ops_.find(t.unsafe_impl());
    if (it != view_ops_.end() && it->second.second.lock().get() == t.unsafe_impl()) {
      return it->second.first;
    }
    return t.grad_fn() ? op_of(t.grad_fn()->name()) : std::string();
  }

  static ValueInfo info_of_impl(const TensorImpl& impl) {
    ValueInfo info;
    info.shape.assign(impl.sizes().begin(), impl.sizes().end());
    info.dtype = impl.dtype();
    info.device = impl.device();
    return info;
  }

  // as_strided addresses the storage: replayed on another layout it would address other
  // elements, so capture takes it on a contiguous tensor at storage offset 0 whose elements hold
  // every one the view reaches (where storage offsets are the tensor's own).
  static void check_as_strided(const Tensor& self, const Tensor& result) {
    int64_t last = result.storage_offset();
    for (int64_t d = 0; d < result.dim(); ++d) {
      if (result.size(d) == 0) return;  // no element reached
      last += (result.size(d) - 1) * result.stride(d);
    }
    if (self.is_contiguous() && self.storage_offset() == 0 && last < self.numel()) return;
    throw CaptureError(
        "as_strided", str("capture(): as_strided on a tensor of shape ", self.sizes(), ", strides ",
                          self.strides(), " and storage offset ", self.storage_offset(),
                          " reaching storage element ", last,
                          " is not supported: capture takes as_strided on a contiguous tensor "
                          "at offset 0 within its elements; call .contiguous() first or use "
                          "the view ops (narrow, diagonal, view, transpose, ...)"));
  }

  std::unordered_map<const TensorImpl*, int64_t> ids_;
  std::unordered_map<const void*, int64_t> storages_;
  std::unordered_set<const void*> varying_;  // Note [Reads of traced values]
  std::vector<Tensor> keep_;
  // Note [Naming an uncovered op]: view -> the op that made it (weak: a view the program drops
  // is not kept; a reused address is told apart by the weak pointer).
  std::unordered_map<const TensorImpl*, std::pair<const char*, std::weak_ptr<TensorImpl>>>
      view_ops_;
  // Note [Stale saved tensors]
  std::map<int64_t, const void*> write_counters_;                  // in-place node -> its counter
  std::unordered_map<const void*, int64_t> counter_values_;        // counter -> its first value
  std::unordered_map<const autograd::Node*, int64_t> node_of_fn_;  // grad_fn -> its node
  std::vector<std::shared_ptr<autograd::Node>> keep_fns_;
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
  tracer.list_saved(outputs);
  return std::move(tracer.graph);
}

}  // namespace mutagrad::func
