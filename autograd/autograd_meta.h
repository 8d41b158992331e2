// AutogradMeta: the autograd state of one tensor, attached through TensorImpl's slot.
//
// A tensor without metadata neither requires grad nor has history. A leaf that requires grad
// has requires_grad_ set (and lazily a grad accumulator); a non-leaf has grad_fn_ and
// output_nr_. A differentiable view additionally carries ViewInfo: its creation mode and the
// version at which its grad_fn was last computed (see Note [View + in-place] in
// autograd/history.h).
//
//   AutogradMeta* meta = get_autograd_meta(t);          // null: no autograd state
//   AutogradMeta& m = materialize_autograd_meta(t);     // created on demand
//   if (m.view_) { ... m.view_->creation_meta ... }
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "autograd/node.h"
#include "tensor/tensor.h"

namespace mutagrad::autograd {

// How a differentiable view was created; anything but kDefault forbids in-place on it.
enum class CreationMeta : int8_t {
  kDefault,           // in grad mode, by a single-output view op
  kNoGradMode,        // in no_grad mode
  kMultiOutputNode,   // one of several outputs of unbind / split / chunk
  kInCustomFunction,  // an output of a custom Function that is a view (or an input returned as is)
};
const char* creation_meta_name(CreationMeta meta);

// Replays a view on (a tensor shaped like) its base. Null in ViewInfo means: replay with
// as_strided using the view's own geometry, which every strided backend supports.
class ViewFn {
 public:
  virtual ~ViewFn() = default;
  virtual Tensor operator()(const Tensor& base) const = 0;
};

// A tensor's tangents by forward-AD level (autograd/forward_ad.cc).
struct ForwardGrad;

struct ViewInfo {
  MUTAGRAD_POOLED_NEW_DELETE;  // Note [Small-object pool]

  // The differentiable base: the view's root base (never itself a view).
  Tensor base;
  // How to replay the view on the base; null: as_strided with the view's geometry.
  std::shared_ptr<const ViewFn> view_fn;
  CreationMeta creation_meta = CreationMeta::kDefault;
  // The version for which grad_fn_ is valid; a different current version means the base or
  // another view was written in place and grad_fn_ must be regenerated.
  uint32_t attr_version = 0;
};

class AutogradMeta final : public AutogradMetaInterface {
 public:
  AutogradMeta() = default;
  ~AutogradMeta() override;
  MUTAGRAD_POOLED_NEW_DELETE;  // Note [Small-object pool]

  bool requires_grad() const override;
  std::string grad_fn_name() const override;

  // Guarded by grad_mutex_ where threads may share the tensor (accumulate_grad, grad(),
  // set_grad()); see Note [Concurrent backward] in autograd/accumulate_grad.h.
  Tensor grad_;
  std::shared_ptr<Node> grad_fn_;
  // The AccumulateGrad of a leaf, created on first use; weak so the leaf does not own it.
  // Guarded by accumulator_mutex_ (grad_accumulator()).
  std::weak_ptr<Node> grad_accumulator_;
  uint32_t output_nr_ = 0;
  bool requires_grad_ = false;  // only ever set on leaves
  bool retains_grad_ = false;
  // Set for differentiable views only.
  std::unique_ptr<ViewInfo> view_;
  // A leaf's tensor hooks (autograd/hooks.h), shared with its AccumulateGrad; null if none.
  std::shared_ptr<NodeHooks> hooks_;
  // Tangents by forward-AD level; null if never dual (Note [Where tangents live] in
  // autograd/forward_ad.h).
  std::shared_ptr<ForwardGrad> fw_grad_;

  // Two locks, so that accumulating into grad_ in grad mode (which records the graph and may
  // ask for this leaf's accumulator) cannot deadlock. As PyTorch's AutogradMeta::mutex_ and
  // AccumulateGrad's mutex_.
  std::mutex accumulator_mutex_;
  std::mutex grad_mutex_;
};

// The metadata of `t`, or null when it has none.
inline AutogradMeta* get_autograd_meta(const Tensor& t) {
  return t.defined() ? static_cast<AutogradMeta*>(t.unsafe_impl()->autograd_meta()) : nullptr;
}
// The metadata of `t`, created (empty) if missing. `t` must be defined.
AutogradMeta& materialize_autograd_meta(const Tensor& t);

// The view info of `t` if it is a differentiable view, else null.
inline ViewInfo* get_view_info(const Tensor& t) {
  AutogradMeta* meta = get_autograd_meta(t);
  return meta != nullptr ? meta->view_.get() : nullptr;
}

}  // namespace mutagrad::autograd
