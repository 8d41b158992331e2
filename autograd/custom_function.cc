// Note [Custom Function outputs]
// What apply() does after the user's forward returned (CustomFunctionNode::wrap_outputs):
// 1. mark_dirty: every dirty tensor must be an input and be returned. Each is checked as the
//    destination of a built-in in-place op (check_inplace) and bumped once, unless the forward
//    already bumped it by writing with an in-place op (then that write's bump is the one bump,
//    and a stale-tensor error names it; torch 1.13 bumps a second time here).
// 2. Outputs, in order: each gets one gradient slot (input metadata) on the node, so backward
//    receives one gradient per output. A dirty output's history is rebased onto the node
//    (CopySlices when it is a view: as for built-in in-place ops); an input returned without
//    mark_dirty is returned as a view of it (same memory and version counter) so that the
//    input's own history is not overwritten; other differentiable outputs get the node as
//    grad_fn. Outputs that are views cannot be written in place afterwards (kInCustomFunction,
//    or kMultiOutputNode among several differentiable outputs, as torch), and keep the node as
//    grad_fn even if forward wrote into them or their base (`v = x.clone()[:3]; v += 2`): their
//    version is taken as current (torch's set_gradient_edge). A dirty view's grad_fn is
//    rebuilt on the rebased base even if forward's code (mark_dirty after the write) already
//    regenerated it at the new version. Non-differentiable outputs (mark_non_differentiable,
//    integer dtypes) get no history.
// 3. save_for_backward's tensors become SavedVariables now, after the forward's writes: a
//    saved output is saved without owning the node (Note [Saved outputs do not own their
//    node]); a later in-place write to any of them makes backward raise.
#include "autograd/custom_function.h"

#include <boost/core/demangle.hpp>

#include "autograd/autograd_meta.h"
#include "autograd/capture_hook.h"
#include "autograd/errors.h"
#include "autograd/history.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"

namespace mutagrad::autograd {
namespace {

template <typename T>
const T& get_as(const std::variant<std::monostate, bool, int64_t, double, std::string,
                                   std::vector<int64_t>, Tensor>& v,
                const char* what) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw ValueError(str("saved_data value is not a ", what, " (it holds alternative ", v.index(),
                       " of none, bool, int, double, string, int list, Tensor); read it with "
                       "the accessor of the type it was stored as"));
}

bool same_impl(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.unsafe_impl() == b.unsafe_impl();
}

bool contains(const VariableList& list, const Tensor& t) {
  for (const Tensor& x : list) {
    if (same_impl(x, t)) return true;
  }
  return false;
}

}  // namespace

bool SavedValue::to_bool() const { return get_as<bool>(value_, "bool"); }
int64_t SavedValue::to_int() const { return get_as<int64_t>(value_, "int"); }
double SavedValue::to_double() const {
  if (const int64_t* i = std::get_if<int64_t>(&value_)) return static_cast<double>(*i);
  return get_as<double>(value_, "double");
}
const std::string& SavedValue::to_string() const { return get_as<std::string>(value_, "string"); }
const std::vector<int64_t>& SavedValue::to_int_list() const {
  return get_as<std::vector<int64_t>>(value_, "int list");
}
const Tensor& SavedValue::to_tensor() const { return get_as<Tensor>(value_, "Tensor"); }

// ---- AutogradContext ------------------------------------------------------------------------

void AutogradContext::save_for_backward(VariableList to_save) { to_save_ = std::move(to_save); }

VariableList AutogradContext::get_saved_variables() const {
  if (!node_->in_backward_ && saved_.empty() && !to_save_.empty()) {
    throw AutogradError(str(node_->name(),
                            ": get_saved_variables() is only available in backward; in forward "
                            "use the tensors themselves"));
  }
  VariableList out;
  out.reserve(saved_.size());
  for (const SavedVariable& s : saved_) out.push_back(s.unpack(node_));
  return out;
}

void AutogradContext::mark_dirty(const VariableList& inputs) {
  for (const Tensor& t : inputs) node_->check_dirty(t);
  dirty_ = inputs;
}

void AutogradContext::mark_non_differentiable(const VariableList& outputs) {
  non_differentiable_ = outputs;
}

bool AutogradContext::needs_input_grad(size_t tensor_index) const {
  return node_->needs_input_grad(tensor_index);
}

// ---- CustomFunctionNode ---------------------------------------------------------------------

bool CustomFunctionNode::needs_input_grad(size_t tensor_index) const {
  if (tensor_index >= num_outputs()) {
    throw IndexError(str(name(), ": needs_input_grad(", tensor_index, ") is out of range; the ",
                         "Function has ", num_outputs(), " tensor arguments"));
  }
  return in_backward_ ? should_compute_output(tensor_index) : next_edge(tensor_index).is_valid();
}

void CustomFunctionNode::check_dirty(const Tensor& t) const {
  bool is_input = false;
  for (const Tensor& in : inputs_) is_input = is_input || same_impl(in, t);
  if (!is_input) {
    throw ValueError(str(name(),
                         ": mark_dirty() was given a tensor that is not an argument of "
                         "forward; only inputs that forward writes in place can be "
                         "marked dirty"));
  }
  // Checked in the grad mode of the call, as a built-in in-place op on `t` would be.
  AutoGradMode mode(grad_mode_);
  check_inplace(t, recording_);
  if (recording_ && is_differentiable_view(t) && !same_impl(t, inputs_[0])) {
    throw ValueError(str(name(), ": a view marked dirty must be the first tensor argument ",
                         "and the only output of the Function (its history is rebased ",
                         "through CopySlices, which wraps a single-output node)"));
  }
}

void CustomFunctionNode::prepare(VariableList args, std::vector<bool> is_tensor) {
  capture::custom_function_applied(name(), args);  // before anything changes
  grad_mode_ = GradMode::is_enabled();
  recording_ = has_jvp() ? compute_requires_grad_list_has_jvp(args)
                         : compute_requires_grad_list(name(), args);
  if (has_jvp() && fwd::has_tangent(args)) {
    for (int64_t level : fwd::active_levels()) {
      VariableList tangents;
      bool any = false;
      for (const Tensor& t : args) {
        tangents.push_back(t.defined() ? fwd::tangent(t, level) : Tensor());
        any = any || tangents.back().defined();
      }
      if (!any) continue;
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].defined() && args[i].is_floating_point()) {
          tangents[i] = fwd::tangent_or_zeros(tangents[i], args[i]);
        }
      }
      pending_tangents_.emplace_back(level, std::move(tangents));
    }
  }
  is_tensor_arg_ = std::move(is_tensor);
  input_versions_.reserve(args.size());
  EdgeList edges;
  edges.reserve(args.size());
  for (const Tensor& t : args) {
    input_versions_.push_back(t.defined() ? t.version() : 0);
    edges.push_back(recording_ && t.defined() ? gradient_edge(t) : Edge());
  }
  set_next_edges(std::move(edges));
  inputs_ = std::move(args);
}

VariableList CustomFunctionNode::wrap_outputs(VariableList outputs) {
  std::shared_ptr<Node> self = shared_from_this();
  // 1. Dirty inputs: returned, checked, bumped once.
  for (const Tensor& t : ctx_.dirty_) {
    if (!contains(outputs, t)) {
      throw ValueError(str(name(),
                           ": some tensors marked dirty were not returned as outputs; "
                           "forward must return every tensor it marks dirty"));
    }
    check_dirty(t);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (same_impl(inputs_[i], t) && t.version() == input_versions_[i]) {
        bump_version(t, name(), CallSite{nullptr, 0});
      }
    }
  }
  // 2. Outputs. Views among several differentiable outputs are multi-output views (torch).
  size_t num_differentiable = 0;
  for (const Tensor& out : outputs) {
    num_differentiable += recording_ && out.defined() && out.is_floating_point() &&
                          !contains(ctx_.non_differentiable_, out);
  }
  const CreationMeta view_meta =
      num_differentiable > 1 ? CreationMeta::kMultiOutputNode : CreationMeta::kInCustomFunction;
  output_defined_.assign(outputs.size(), false);
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    if (!out.defined()) {
      if (recording_) add_input_metadata(IntArrayRef(), kFloat32, kCPU);
      continue;
    }
    output_defined_[i] = true;
    const bool dirty = contains(ctx_.dirty_, out);
    const bool differentiable =
        recording_ && out.is_floating_point() && !contains(ctx_.non_differentiable_, out);
    if (dirty && differentiable) {
      if (is_differentiable_view(out)) {
        if (outputs.size() != 1) {
          throw ValueError(str(name(), ": a view marked dirty must be the first tensor argument ",
                               "and the only output of the Function (its history is rebased ",
                               "through CopySlices, which wraps a single-output node)"));
        }
      }
      rebase_history(out, self);  // adds this output's input metadata
      continue;
    }
    if (contains(inputs_, out) && !dirty) {
      // An input returned as is: a view of it (torch's _view_as_self_with_no_grad).
      Tensor input = out;
      out = native::alias(input);
      if (differentiable) set_view_history(input, out, view_meta, nullptr);
    }
    if (differentiable) {
      // A view (made in forward, or of an input returned as is) cannot be written in place:
      // the view+in-place logic would bypass the custom backward (torch's IN_CUSTOM_FUNCTION,
      // or MULTI_OUTPUT_NODE among several differentiable outputs).
      ViewInfo* info = get_view_info(out);
      if (info != nullptr) info->creation_meta = view_meta;
      set_history(out, self);
      // This node is the view's grad_fn from now on: a write forward made into the view or its
      // base (`v = x.clone()[:3]; v += 2`) must not regenerate it (torch's set_gradient_edge).
      if (info != nullptr) info->attr_version = out.version();
    } else if (recording_) {
      add_input_metadata(out);
    }
  }
  // 3. Forward mode: the outputs' tangents from the user's jvp, before anything is saved (a
  // saved output keeps its tangents). A dirty input's tangent is written in place.
  std::vector<std::pair<int64_t, VariableList>> pending = std::move(pending_tangents_);
  pending_tangents_.clear();
  for (auto& [level, tangents] : pending) {
    VariableList out_tangents;
    {
      fwd::SuspendLevel suspend(level);
      out_tangents = call_jvp(std::move(tangents));
    }
    if (out_tangents.size() != outputs.size()) {
      throw ValueError(str(name(), ": jvp returned ", out_tangents.size(),
                           " tangents; expected one per output of forward (", outputs.size(),
                           "), undefined (None) for an output without one"));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& out = outputs[i];
      const Tensor& tangent = out_tangents[i];
      if (!out.defined() || !tangent.defined() || contains(ctx_.non_differentiable_, out)) continue;
      if (!tangent.sizes().equals(out.sizes())) {
        throw ShapeError(str(name(), ": jvp returned a tangent of shape ", tangent.sizes(),
                             " for output ", i, " of shape ", out.sizes(),
                             "; a tangent has its output's shape"));
      }
      if (contains(ctx_.dirty_, out)) {
        fwd::PendingTangents write;
        write.values.emplace_back(level, tangent);
        fwd::write_tangents(out, std::move(write), name());
      } else {
        fwd::set_tangent(out, level, tangent, name());
      }
    }
  }
  // 4. Saved tensors.
  ctx_.saved_.reserve(ctx_.to_save_.size());
  for (const Tensor& t : ctx_.to_save_) {
    const bool dirty_view = contains(ctx_.dirty_, t) && is_differentiable_view(t);
    const bool is_output =
        recording_ && contains(outputs, t) && (t.grad_fn().get() == this || dirty_view);
    const bool inplace_on_view = is_output && dirty_view;
    ctx_.saved_.emplace_back(t, is_output, inplace_on_view);
  }
  ctx_.to_save_.clear();
  ctx_.dirty_.clear();
  ctx_.non_differentiable_.clear();
  inputs_.clear();
  return outputs;
}

void CustomFunctionNode::visit_saved(SavedVisitor& visitor) {
  for (SavedVariable& s : ctx_.saved_) visitor.visit("saved_tensors", s);
}

VariableList CustomFunctionNode::apply(VariableList&& grads) {
  if (ctx_.materialize_grads_) {
    for (size_t i = 0; i < grads.size(); ++i) {
      if (grads[i].defined() || i >= output_defined_.size() || !output_defined_[i]) continue;
      const InputMetadata& meta = input_metadata(i);
      grads[i] = zeros(IntArrayRef(meta.shape), TensorOptions(meta.dtype).device(meta.device));
    }
  }
  struct InBackward {
    bool& flag;
    explicit InBackward(bool& f) : flag(f) { flag = true; }
    ~InBackward() { flag = false; }
  } in_backward(in_backward_);
  VariableList results;
  std::shared_ptr<DelayedError> error_node;
  if (once_differentiable_ && GradMode::is_enabled()) {
    // See the Function template: the results get a node that raises in a double backward.
    error_node = std::make_shared<DelayedError>(
        str("trying to differentiate twice the custom Function ", name(),
            ", whose backward is once_differentiable (not itself differentiable); compute "
            "second derivatives with a differentiable backward, written with differentiable "
            "ops"));
    EdgeList edges = collect_next_edges_list(grads);
    for (const Edge& e : next_edges()) edges.push_back(e);
    error_node->set_next_edges(std::move(edges));
    AutoGradMode no_grad(false);
    results = call_backward(std::move(grads));
  } else {
    results = call_backward(std::move(grads));
  }
  const size_t num_args = is_tensor_arg_.size();
  if (results.size() > num_args) {
    bool extra_defined = false;
    for (size_t i = num_args; i < results.size(); ++i) extra_defined |= results[i].defined();
    if (!extra_defined) results.resize(num_args);
  }
  if (results.size() != num_args) {
    throw AutogradError(str("function ", name(),
                            " returned an incorrect number of gradients (expected ", num_args,
                            ", got ", results.size(),
                            "); backward returns one gradient per argument of forward, an "
                            "undefined tensor for arguments that are not tensors"));
  }
  VariableList out;
  out.reserve(num_outputs());
  for (size_t i = 0; i < num_args; ++i) {
    if (!is_tensor_arg_[i]) {
      if (results[i].defined()) {
        throw AutogradError(str("function ", name(),
                                " returned a gradient different than an undefined tensor at "
                                "position ",
                                i,
                                ", but the corresponding forward input was not a Tensor; "
                                "return an undefined Tensor (None in Python) there"));
      }
      continue;
    }
    Tensor g = std::move(results[i]);
    if (error_node && g.defined() && error_node->num_outputs() > 0) {
      g = native::detach(g);
      set_history(g, error_node);
    }
    out.push_back(std::move(g));
  }
  return out;
}

VariableList DelayedError::apply(VariableList&& /*grads*/) { throw AutogradError(message_); }

namespace detail {
std::string custom_function_name(const char* mangled) {
  std::string name = boost::core::demangle(mangled);
  // Drop namespaces and enclosing classes, but not the `::` inside template arguments.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(start);
}
}  // namespace detail

}  // namespace mutagrad::autograd
