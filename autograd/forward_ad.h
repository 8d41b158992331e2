// Forward-mode AD: dual tensors (a primal with a tangent per dual level), as torch.autograd.
// forward_ad. Each differentiable op that has a tangent formula ("jvp rule") gives its result
// the tangent J(inputs) · tangents, at every active level. See docs/forward-ad.md.
//
//   forward_ad::dual_level level;                         // enter; exits at scope end
//   Tensor x = forward_ad::make_dual(primal, direction);  // a view of primal, with a tangent
//   Tensor y = (x * x).sum();
//   forward_ad::unpack_dual(y).tangent;                   // 2 · Σ primal · direction
//
// Note [Where tangents live]
// A tensor's tangents are stored on its AutogradMeta (fw_grad_), one per level. A tangent has
// its primal's sizes and strides. A differentiable view's tangent is the same view of its
// base's tangent (made eagerly when the view is made of a dual, lazily when its base gets a
// tangent later), so a write into any of them is seen by all: the mutation rules of
// Note [Tangents under mutation] follow from this one invariant. Exiting a level erases its
// tangents from every tensor that still holds one (torch's behaviour).
//
// Note [Tangents under mutation]
// - An in-place op on a dual writes its new tangent into the existing tangent (copy_), so the
//   tangents of its base and of every other view of that base change too.
// - Writing a dual value into a tensor without a tangent (copy_, add_, x[idx] = dual,
//   index_put_, masked_fill_, scatter_, index_add_) first gives it a tangent of zeros; when it
//   is a view, the zeros are its root base's tangent, and the view's tangent a view of them.
// - The tangent write goes through the same op as the primal write (index_put_ with the same
//   indices and accumulate flag, scatter_add_ with the same index, ...), so the deterministic
//   kernels order both the same way.
// - A tangent saved for backward (forward-over-reverse) is version checked like its primal.
//
// Note [Composite tangents]
// Some ops compute their forward with differentiable ops under NoGradGuard and attach their own
// backward node (the nn activations, the losses and normalizations written as FormulaNodes).
// Grad mode does not stop forward AD, so those inner ops already give the result its tangent:
// such an op asks compute_requires_grad_has_jvp and says so beside its node. Every other op
// without a formula asks compute_requires_grad, which refuses a dual input, naming the op.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "autograd/errors.h"
#include "tensor/tensor.h"

namespace mutagrad {
namespace forward_ad {

// Misuse of forward AD (no level, exiting a level out of order); RuntimeError in Python.
class ForwardADError : public autograd::AutogradError {
  using AutogradError::AutogradError;
};
// An op without a tangent formula was given a dual input (torch's NotImplementedError).
class ForwardADNotImplementedError : public ForwardADError {
  using ForwardADError::ForwardADError;
};

// Enters a new, innermost level and returns its index (0 for the outermost).
int64_t enter_dual_level();
// Exits `level`, which must be the innermost; its tangents are erased from every tensor.
void exit_dual_level(int64_t level);
// The innermost level, or nullopt outside every dual_level.
std::optional<int64_t> current_level();

// RAII: enter_dual_level() on construction, exit_dual_level() at scope end. Nestable.
class dual_level {
 public:
  dual_level() : level_(enter_dual_level()) {}
  // A destructor must not throw: a level exited out of order (another thread's, or by hand)
  // stays for its owner to exit, and the error is reported on stderr.
  ~dual_level();
  dual_level(const dual_level&) = delete;
  dual_level& operator=(const dual_level&) = delete;
  int64_t level() const { return level_; }

 private:
  int64_t level_;
};

// A view of `primal` whose tangent at `level` (default: the innermost) is `tangent` (copied
// into primal's strides when they differ). Throws ShapeError/DTypeError/DeviceError when the
// tangent does not match the primal, ForwardADError outside every level.
Tensor make_dual(const Tensor& primal, const Tensor& tangent,
                 std::optional<int64_t> level = std::nullopt);

struct UnpackedDual {
  Tensor primal;   // a view of t without the tangent at that level
  Tensor tangent;  // undefined when t has none
};
// t's primal and its tangent at `level` (default: the innermost; outside every level both
// fields but primal=t are empty).
UnpackedDual unpack_dual(const Tensor& t, std::optional<int64_t> level = std::nullopt);

}  // namespace forward_ad

namespace autograd {
struct ForwardGrad;  // a tensor's tangents (autograd/forward_ad.cc)
}  // namespace autograd

namespace autograd::fwd {

// ---- For ops (internal) -------------------------------------------------------------------------
namespace detail {
// Levels entered and not exited: a relaxed atomic read is the whole cost of forward AD for
// an op when no level is active.
extern std::atomic<int> g_active_levels;
}  // namespace detail
// Whether any level is active: ops skip all tangent work when not.
inline bool enabled() { return detail::g_active_levels.load(std::memory_order_relaxed) > 0; }

// The active levels, outermost first. Levels form a stack whose indices are their positions
// (enter pushes index n, exit pops only the innermost), so they are exactly 0 .. n-1: a range
// read from the counter, with no lock and no allocation (each op asks on the hot path).
class LevelRange {
 public:
  class iterator {
   public:
    explicit iterator(int64_t level) : level_(level) {}
    int64_t operator*() const { return level_; }
    iterator& operator++() {
      ++level_;
      return *this;
    }
    bool operator!=(const iterator& other) const { return level_ != other.level_; }

   private:
    int64_t level_;
  };
  explicit LevelRange(int64_t n) : n_(n) {}
  iterator begin() const { return iterator(0); }
  iterator end() const { return iterator(n_); }
  int64_t size() const { return n_; }

 private:
  int64_t n_;
};
inline LevelRange active_levels() {
  return LevelRange(detail::g_active_levels.load(std::memory_order_relaxed));
}

// Whether `level` is suspended on this thread (a formula of that level is running).
bool is_suspended(int64_t level);

// t's tangent at `level` (a view of its base's when t is a view), or undefined. Suspended
// levels (while a formula of that level runs) read as undefined.
Tensor tangent(const Tensor& t, int64_t level);
// Whether any defined tensor among `ts` has a tangent at some active, unsuspended level.
bool has_tangent(TensorList ts);

// Sets `result`'s (an op's fresh output) tangent at `level` to `value` (undefined: none).
// Checks the shape, and copies into result's strides when they differ.
void set_tangent(const Tensor& result, int64_t level, const Tensor& value, const char* op);

// While alive, tangent(·, level) reads undefined: a formula of `level` sees its inputs'
// primals (their tangents at other levels still propagate, which gives nested derivatives).
class SuspendLevel {
 public:
  explicit SuspendLevel(int64_t level);
  ~SuspendLevel();
  SuspendLevel(const SuspendLevel&) = delete;
  SuspendLevel& operator=(const SuspendLevel&) = delete;

 private:
  int64_t level_;
};

// While alive, every active level reads as suspended (a custom Function's forward sees its
// arguments' primals; its jvp gives the outputs' tangents). Inactive when `active` is false.
class SuspendAllLevels {
 public:
  explicit SuspendAllLevels(bool active = true);
  ~SuspendAllLevels();
  SuspendAllLevels(const SuspendAllLevels&) = delete;
  SuspendAllLevels& operator=(const SuspendAllLevels&) = delete;

 private:
  std::vector<int64_t> levels_;
};

// For each active level at which some input has a tangent: `formula(tangents)` (one per
// input, undefined where it has none) with that level suspended, set as result's tangent.
template <typename F>
void propagate(const char* op, const Tensor& result, TensorList inputs, F&& formula) {
  if (!enabled()) return;
  for (int64_t level : active_levels()) {
    // The ops inside a formula of `level` see it suspended: nothing to look up there.
    if (is_suspended(level)) continue;
    std::vector<Tensor> ts;
    ts.reserve(inputs.size());
    bool any = false;
    for (const Tensor& in : inputs) {
      ts.push_back(in.defined() ? tangent(in, level) : Tensor());
      any = any || ts.back().defined();
    }
    if (!any) continue;
    Tensor value;
    {
      SuspendLevel suspend(level);
      value = formula(ts);
      // A formula may return an input's tangent itself (x + 1, a 0-dim cumsum): the result
      // gets its own copy, so a later in-place write into one tangent leaves the other alone.
      for (const Tensor& t : ts) {
        if (value.defined() && t.defined() && value.is_alias_of(t)) {
          value = value.clone();
          break;
        }
      }
    }
    set_tangent(result, level, value, op);
  }
}

// The new tangent of `self` after an in-place op whose tangent formula, given the operands'
// tangents before the write, is `formula` (computed before the write, so a failing formula
// changes nothing); returns the per-level values to pass to write_tangents after the write.
struct PendingTangents {
  std::vector<std::pair<int64_t, Tensor>> values;  // (level, new tangent of self)
};
template <typename F>
PendingTangents inplace_tangents(const Tensor& self, TensorList operands, F&& formula) {
  PendingTangents pending;
  if (!enabled()) return pending;
  for (int64_t level : active_levels()) {
    if (is_suspended(level)) continue;  // the formula's own ops (see propagate)
    std::vector<Tensor> ts;
    ts.reserve(operands.size() + 1);
    ts.push_back(tangent(self, level));
    bool any = ts.back().defined();
    for (const Tensor& in : operands) {
      ts.push_back(in.defined() ? tangent(in, level) : Tensor());
      any = any || ts.back().defined();
    }
    if (!any) continue;
    SuspendLevel suspend(level);
    pending.values.emplace_back(level, formula(ts));
  }
  return pending;
}
// After the primal write: each pending value is copied into self's tangent (created as zeros,
// through the root base for a view, when self has none). `op` names the op in errors.
void write_tangents(const Tensor& self, PendingTangents&& pending, const char* op);

// make_dual's checks, then `fresh` itself (a tensor no one else holds yet, such as a new
// detach()) gets `tangent` at `level`: make_dual without the view (jvp's inputs).
void make_dual_in_place(const Tensor& fresh, const Tensor& tangent, int64_t level);

// Marks `t` (a view) as having no tangent at `level` even though its base may have one
// (unpack_dual's primal).
void mark_no_tangent(const Tensor& t, int64_t level);
// Drops t's tangents at every level (detach_()).
void clear_tangents(const Tensor& t);

// The tangent of a bilinear op f(a, b) (mm, mv, bmm, dot, matmul): f(ta, b) + f(a, tb), either
// term absent when its tangent is undefined.
template <typename F>
Tensor bilinear_tangent(F&& f, const Tensor& a, const Tensor& b, const Tensor& ta,
                        const Tensor& tb) {
  Tensor out;
  if (ta.defined()) out = f(ta, b);
  if (tb.defined()) out = out.defined() ? out.add(f(a, tb)) : f(a, tb);
  return out;
}

// Raises ForwardADNotImplementedError naming `op` when any of `inputs` is a dual.
void check_no_tangent(const char* op, TensorList inputs);

// The tangent, or zeros shaped like `like` when undefined.
Tensor tangent_or_zeros(const Tensor& tangent, const Tensor& like);

// Called by set_view_history: a view of a dual gets the same view of its base's tangent.
void on_view_created(const Tensor& base, const Tensor& view);

// Note [Saved tangents hold no cycle]
// A node saves the tangents of what it saves (forward-over-reverse). On primals that require
// grad a tangent has a reverse history, which must not lead back to the saving node:
// - A tangent is kept as alias_with_current_edge (its data with its grad_fn at save time, no
//   view metadata), as a saved primal (Note [Saved views do not own their base]): a later write
//   into its base, which rebases the views' tangents onto a CopySlices that may reach the
//   saving node, leaves the saved one alone. Such a write bumps the tangent's version, so
//   unpacking refuses it anyway: the history at save time is the only one ever used.
// - A tangent formula's node saves the op's result before the result gets its own node, and an
//   in-place op's formula saves the tangent it then writes: SavedVariable keeps an input without
//   history as a detached alias too (Note [Saved inputs do not own their history]), so the
//   history the tensor gets afterwards is not reached from that node.
// - The tangents sit in a ForwardGrad registered with their levels, as a tensor's own: exiting a
//   level drops them from every node still alive (torch's behaviour), which would end any cycle
//   left.
// Test: saved_variable_test's SavedTangentsHoldNoCycle (every program shape, both devices).
//
// The tangents of `t` at the active levels, with their versions, to check and restore on
// unpack.
struct SavedTangents {
  std::shared_ptr<ForwardGrad> grad;  // by_level: the tangents (entries of exited levels go)
  std::vector<std::pair<int64_t, uint32_t>> versions;  // (level, the tangent's version)
  bool empty() const { return versions.empty(); }
};
SavedTangents save_tangents(const Tensor& t);
// Throws AutogradError when a saved tangent was changed in place since it was saved; gives
// `unpacked` the saved tangents when it has none (an output saved detached).
void restore_tangents(const SavedTangents& saved, const Tensor& unpacked, const char* node);

}  // namespace autograd::fwd
}  // namespace mutagrad
