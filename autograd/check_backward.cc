#include "autograd/check_backward.h"

#include <sstream>

#include "autograd/copy_slices.h"
#include "autograd/engine.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/saved_variable.h"

namespace mutagrad::autograd {
namespace {

class ProblemCollector final : public SavedVisitor {
 public:
  ProblemCollector(const Node& node, int64_t order, BackwardCheck& check)
      : node_(node), order_(order), check_(check) {}

  void visit(const char* name, SavedVariable& saved) override {
    if (!saved.was_saved()) return;
    ++check_.saved_checked;
    BackwardProblem p;
    const auto* slices = dynamic_cast<const CopySlices*>(&node_);
    const Node& owner = slices != nullptr ? *slices->fn() : node_;
    p.node = owner.name();
    p.sequence_nr = owner.sequence_nr();
    if (slices != nullptr) p.wrapper = node_.name();
    p.order = order_;
    p.field = name;
    p.saved_version = saved.saved_version();
    p.packed = saved.is_packed() && !saved.packed_may_alias();  // else backward checks it
    if (saved.is_released()) {
      p.kind = BackwardProblem::Kind::kReleased;
      check_.problems.push_back(std::move(p));
      return;
    }
    const VersionCounter* counter = saved.checked_counter();
    if (counter == nullptr) return;
    p.current_version = counter->current();
    if (p.current_version == p.saved_version) return;
    const Tensor& data = saved.data_unchecked();
    if (data.defined()) {
      p.shape = DimVector(data.sizes());
      p.dtype = data.dtype();
    }
    p.write = counter->site_of_bump(p.saved_version);
    check_.problems.push_back(std::move(p));
  }

 private:
  const Node& node_;
  int64_t order_;
  BackwardCheck& check_;
};

}  // namespace

std::string BackwardProblem::message() const {
  std::ostringstream os;
  if (kind == Kind::kView) {
    os << "a root " << IntArrayRef(shape) << " " << dtype_name(dtype)
       << " is a view whose grad_fn backward cannot rebuild; backward would raise: " << view_error;
    return os.str();
  }
  os << node;
  if (!wrapper.empty()) os << " (in " << wrapper << ")";
  if (kind == Kind::kReleased) {
    os << " (#" << order << " in backward's order): saved tensor '" << field
       << "' was freed by an earlier backward; backward would raise \"Trying to backward through "
          "the graph a second time\" (pass retain_graph=true to the first backward)";
    return os.str();
  }
  os << " (#" << order << " in backward's order): saved tensor '" << field << "' "
     << IntArrayRef(shape) << " " << dtype_name(dtype) << " was saved at version " << saved_version
     << " and is now at version " << current_version << "; ";
  if (write && write->op != nullptr) {
    os << "the first in-place write after the save is " << write->op;
    if (write->file != nullptr) os << " at " << write->file << ":" << write->line;
  } else {
    os << "the first in-place write after the save is too old to be remembered (only the last "
       << VersionCounter::kSiteHistory << " writes are)";
  }
  if (packed) os << " (kept by saved-tensor hooks: checked only if unpack returns an alias)";
  return os.str();
}

BackwardCheck check_backward(TensorList roots) {
  std::vector<Edge> edges;
  edges.reserve(roots.size());
  BackwardCheck check;
  for (const Tensor& root : roots) {
    if (!root.defined()) continue;
    // Note [Observers change nothing]: read the graph as it is; backward's first step, the
    // regeneration of a stale view's grad_fn, is predicted, not taken.
    std::string view_error = observed_view_error(root);
    if (!view_error.empty()) {
      BackwardProblem p;
      p.kind = BackwardProblem::Kind::kView;
      p.order = -1;  // before any node runs
      p.shape = DimVector(root.sizes());
      p.dtype = root.dtype();
      p.current_version = root.version();
      p.view_error = std::move(view_error);
      check.problems.push_back(std::move(p));
    }
    Edge edge = observed_gradient_edge(root);
    if (edge.is_valid()) edges.push_back(std::move(edge));
  }
  const std::vector<Node*> order = execution_order(edges);
  check.nodes_checked = static_cast<int64_t>(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    ProblemCollector collector(*order[i], static_cast<int64_t>(i), check);
    order[i]->visit_saved(collector);
  }
  return check;
}

std::ostream& operator<<(std::ostream& os, const BackwardCheck& check) {
  if (check.ok()) {
    return os << "backward would succeed (" << check.nodes_checked << " nodes, "
              << check.saved_checked << " saved tensors checked)";
  }
  os << "backward would fail: " << check.problems.size() << " of " << check.saved_checked
     << " saved tensors cannot be used";
  for (const BackwardProblem& p : check.problems) os << "\n  " << p.message();
  return os;
}

std::string to_string(const BackwardCheck& check) {
  std::ostringstream os;
  os << check;
  return os.str();
}

}  // namespace mutagrad::autograd
