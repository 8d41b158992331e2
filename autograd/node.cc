#include "autograd/node.h"

#include <vector>

#include "autograd/hooks.h"
#include "autograd/saved_variable.h"

namespace mutagrad::autograd {

namespace detail {
OutputMask& current_output_mask() {
  static thread_local OutputMask mask;
  return mask;
}
}  // namespace detail

namespace {

// Nodes whose last reference was dropped while another node was being destroyed: destroyed
// by the outermost release_node() loop instead of recursively.
struct PendingRelease {
  std::vector<std::shared_ptr<Node>> nodes;
  bool draining = false;
};
PendingRelease& pending_release() {
  static thread_local PendingRelease pending;
  return pending;
}

class ResetVisitor final : public SavedVisitor {
 public:
  void visit(const char*, SavedVariable& saved) override { saved.reset_data(); }
};

}  // namespace

void release_node(std::shared_ptr<Node>& node) {
  if (!node) return;
  if (node.use_count() > 1) {
    node.reset();
    return;
  }
  PendingRelease& pending = pending_release();
  pending.nodes.push_back(std::move(node));
  if (pending.draining) return;
  pending.draining = true;
  while (!pending.nodes.empty()) {
    std::shared_ptr<Node> last = std::move(pending.nodes.back());
    pending.nodes.pop_back();
    last.reset();  // ~Node pushes its own next edges instead of recursing
  }
  pending.draining = false;
}

Node::~Node() {
  for (Edge& edge : next_edges_) release_node(edge.function);
}

uint64_t Node::next_sequence_nr() {
  static thread_local uint64_t counter = 0;  // per thread: no atomic on the recording path
  return counter++;
}

void Node::release_variables() {
  ResetVisitor visitor;
  visit_saved(visitor);
}

bool Node::should_compute_output(size_t i) const {
  if (i >= next_edges_.size() || !next_edges_[i].is_valid()) return false;
  const bool* needed = detail::current_output_mask().needed;
  return needed == nullptr || needed[i];
}

bool Node::should_compute_any_output() const {
  for (size_t i = 0; i < next_edges_.size(); ++i) {
    if (should_compute_output(i)) return true;
  }
  return false;
}

uint32_t Node::add_input_metadata(const Tensor& output) {
  return add_input_metadata(output.sizes(), output.dtype(), output.device());
}

uint32_t Node::add_input_metadata(IntArrayRef shape, ScalarType dtype, Device device) {
  input_metadata_.push_back(InputMetadata{DimVector(shape), dtype, device});
  return static_cast<uint32_t>(input_metadata_.size() - 1);
}

void Node::add_retained_grad(uint32_t input_nr, const std::shared_ptr<TensorImpl>& tensor) {
  retained_grads_.push_back(RetainedGrad{input_nr, tensor});
  if (hooks_) detail::note_retained_grad(*hooks_, input_nr);  // Note [Hook order]
}

void Node::remove_retained_grad(const TensorImpl* tensor) {
  for (size_t i = 0; i < retained_grads_.size(); ++i) {
    std::shared_ptr<TensorImpl> locked = retained_grads_[i].tensor.lock();
    if (locked.get() == tensor) {
      retained_grads_.erase(retained_grads_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }
}

}  // namespace mutagrad::autograd
