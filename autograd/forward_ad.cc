// Forward-mode AD: levels, tangent storage on AutogradMeta, make_dual / unpack_dual, and the
// helpers through which ops propagate and write tangents (Note [Where tangents live]).
#include "autograd/forward_ad.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>

#include "autograd/autograd_meta.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"

namespace mutagrad {
namespace autograd {

// The tangents of one tensor, by level index. Levels erase their entries on exit.
// `forward_bases`: for a view taken (directly or through other views) of a primal that has no
// tangent at a level (unpack_dual's), that primal: the view's tangent at the level is derived
// from the primal's, never from the root base's (Note [Primal views break the chain]).
struct ForwardGrad {
  std::mutex mutex;
  std::vector<std::pair<int64_t, Tensor>> by_level;
  std::vector<std::pair<int64_t, Tensor>> forward_bases;
};

namespace fwd {
namespace detail {
std::atomic<int> g_active_levels{0};
}

namespace {

struct Level {
  int64_t index;
  std::vector<std::weak_ptr<ForwardGrad>> grads;  // holders of a tangent at this level
  size_t prune_at = 64;                           // the size at which expired ones are dropped
};

std::mutex g_mutex;
std::vector<Level> g_levels;
thread_local std::vector<int64_t> t_suspended;

void register_with_level(const std::shared_ptr<ForwardGrad>& grad, int64_t level) {
  std::lock_guard<std::mutex> lock(g_mutex);
  MG_INTERNAL_ASSERT(level < static_cast<int64_t>(g_levels.size()), "inactive level ", level);
  std::vector<std::weak_ptr<ForwardGrad>>& grads = g_levels[level].grads;
  // A long-lived level sees many holders die (saved tangents, temporaries): drop the expired
  // ones whenever the list doubles, so it stays proportional to the holders alive.
  if (grads.size() >= g_levels[level].prune_at) {
    grads.erase(std::remove_if(grads.begin(), grads.end(),
                               [](const std::weak_ptr<ForwardGrad>& g) { return g.expired(); }),
                grads.end());
    g_levels[level].prune_at = std::max<size_t>(64, 2 * grads.size());
  }
  grads.push_back(grad);
}

// The tangent stored on t itself (not derived from a base), or undefined. `found`: whether t
// has an entry for the level (an undefined entry marks a primal view: no tangent, even when
// its base has one).
Tensor own_tangent(const Tensor& t, int64_t level, bool* found = nullptr) {
  if (found != nullptr) *found = false;
  AutogradMeta* meta = get_autograd_meta(t);
  if (meta == nullptr || !meta->fw_grad_) return Tensor();
  std::lock_guard<std::mutex> lock(meta->fw_grad_->mutex);
  for (const auto& [l, tangent] : meta->fw_grad_->by_level) {
    if (l == level) {
      if (found != nullptr) *found = true;
      return tangent;
    }
  }
  return Tensor();
}

void set_own_tangent(const Tensor& t, int64_t level, const Tensor& value) {
  AutogradMeta& meta = materialize_autograd_meta(t);
  if (!meta.fw_grad_) meta.fw_grad_ = std::make_shared<ForwardGrad>();
  bool added = false;
  {
    std::lock_guard<std::mutex> lock(meta.fw_grad_->mutex);
    auto& entries = meta.fw_grad_->by_level;
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const auto& e) { return e.first == level; });
    if (it != entries.end()) {
      it->second = value;
    } else {
      entries.emplace_back(level, value);
      added = true;
    }
  }
  if (added) register_with_level(meta.fw_grad_, level);
}

// Note [Primal views break the chain]
// unpack_dual(t).primal is a view of t marked as having no tangent at its level (an entry with
// an undefined tangent). Its views must not reach t's tangent through the root base, and a
// write of a dual into it (or into its views) must give it a tangent of its own, leaving t's
// alone -- torch's rule: the primal is the forward-mode base of its views. A view records that
// primal (the nearest one up its chain) at creation, and tangent() and write_tangents() use it
// in place of the root base.
Tensor forward_base(const Tensor& t, int64_t level) {
  AutogradMeta* meta = get_autograd_meta(t);
  if (meta == nullptr || !meta->fw_grad_) return Tensor();
  std::lock_guard<std::mutex> lock(meta->fw_grad_->mutex);
  for (const auto& [l, base] : meta->fw_grad_->forward_bases) {
    if (l == level) return base;
  }
  return Tensor();
}

void set_forward_base(const Tensor& view, int64_t level, const Tensor& base) {
  AutogradMeta& meta = materialize_autograd_meta(view);
  if (!meta.fw_grad_) meta.fw_grad_ = std::make_shared<ForwardGrad>();
  {
    std::lock_guard<std::mutex> lock(meta.fw_grad_->mutex);
    for (const auto& entry : meta.fw_grad_->forward_bases) {
      if (entry.first == level) return;  // views are made once; the first record stands
    }
    meta.fw_grad_->forward_bases.emplace_back(level, base);
  }
  register_with_level(meta.fw_grad_, level);
}

// `view`'s tangent when `source` (which `view` looks into) has tangent `st`: the same
// elements of st, as a differentiable view (writes into either are seen by both).
Tensor view_of_tangent(const Tensor& st, const Tensor& source, const Tensor& view) {
  return st.as_strided(view.sizes(), view.strides(),
                       st.storage_offset() + (view.storage_offset() - source.storage_offset()));
}

// A tensor of zeros with t's sizes and strides (the layout a tangent of t must have).
Tensor zeros_with_layout_of(const Tensor& t) {
  Tensor z = empty_strided(t.sizes(), t.strides(), TensorOptions(t.dtype()).device(t.device()));
  native::fill_(z, 0);
  return z;
}

}  // namespace

bool is_suspended(int64_t level) {
  return std::find(t_suspended.begin(), t_suspended.end(), level) != t_suspended.end();
}

Tensor tangent(const Tensor& t, int64_t level) {
  if (!t.defined() || is_suspended(level)) return Tensor();
  bool found = false;
  Tensor own = own_tangent(t, level, &found);
  if (found) return own;
  const ViewInfo* info = get_view_info(t);
  if (info == nullptr) return Tensor();
  Tensor base = forward_base(t, level);  // Note [Primal views break the chain]
  if (!base.defined()) base = info->base;
  Tensor base_tangent = own_tangent(base, level);
  if (!base_tangent.defined()) return Tensor();
  Tensor v = view_of_tangent(base_tangent, base, t);
  set_own_tangent(t, level, v);
  return v;
}

bool has_tangent(TensorList ts) {
  if (!enabled()) return false;
  for (int64_t level : active_levels()) {
    for (const Tensor& t : ts) {
      if (t.defined() && tangent(t, level).defined()) return true;
    }
  }
  return false;
}

SuspendLevel::SuspendLevel(int64_t level) : level_(level) { t_suspended.push_back(level); }
SuspendLevel::~SuspendLevel() {
  auto it = std::find(t_suspended.rbegin(), t_suspended.rend(), level_);
  if (it != t_suspended.rend()) t_suspended.erase(std::next(it).base());
}

SuspendAllLevels::SuspendAllLevels(bool active) {
  if (!active || !enabled()) return;
  for (int64_t level : active_levels()) {
    levels_.push_back(level);
    t_suspended.push_back(level);
  }
}
SuspendAllLevels::~SuspendAllLevels() {
  for (int64_t level : levels_) {
    auto it = std::find(t_suspended.rbegin(), t_suspended.rend(), level);
    if (it != t_suspended.rend()) t_suspended.erase(std::next(it).base());
  }
}

Tensor tangent_or_zeros(const Tensor& tangent, const Tensor& like) {
  if (tangent.defined()) return tangent;
  return zeros(like.sizes(), TensorOptions(like.dtype()).device(like.device()));
}

void set_tangent(const Tensor& result, int64_t level, const Tensor& value, const char* op) {
  if (!value.defined() || !result.defined()) return;
  if (!result.is_floating_point()) return;  // integer results carry no tangent
  Tensor v = value;
  if (!v.sizes().equals(result.sizes())) {
    // Formulas of broadcasting ops may return a smaller tangent; anything else is a bug.
    MG_INTERNAL_ASSERT(v.dim() <= result.dim(), op, ": tangent of shape ", v.sizes(),
                       " for a result of shape ", result.sizes());
    v = v.expand(result.sizes());
  }
  if (v.dtype() != result.dtype()) v = v.to(result.dtype());
  if (!v.strides().equals(result.strides()) || v.device() != result.device()) {
    Tensor laid_out = empty_strided(result.sizes(), result.strides(),
                                    TensorOptions(result.dtype()).device(result.device()));
    laid_out.copy_(v);
    v = laid_out;
  }
  set_own_tangent(result, level, v);
}

void write_tangents(const Tensor& self, PendingTangents&& pending, const char* op) {
  (void)op;
  if (!self.is_floating_point()) return;  // integer tensors carry no tangent (torch's rule)
  for (auto& [level, value] : pending.values) {
    Tensor current = tangent(self, level);
    if (!current.defined()) {
      // Note [Tangents under mutation]: zeros first, through the base for a view: the nearest
      // primal up its chain (Note [Primal views break the chain]), else the root base. A primal
      // itself gets tangent zeros of its own.
      bool marked_primal = false;
      (void)own_tangent(self, level, &marked_primal);
      const ViewInfo* info = marked_primal ? nullptr : get_view_info(self);
      if (info != nullptr) {
        Tensor base = forward_base(self, level);
        if (!base.defined()) base = info->base;
        Tensor base_tangent = own_tangent(base, level);
        if (!base_tangent.defined()) {
          base_tangent = zeros_with_layout_of(base);
          set_own_tangent(base, level, base_tangent);
        }
        set_own_tangent(self, level, view_of_tangent(base_tangent, base, self));
      } else {
        set_own_tangent(self, level, zeros_with_layout_of(self));
      }
      current = tangent(self, level);
    }
    if (!value.defined() || value.is_same(current)) continue;
    SuspendLevel suspend(level);
    current.copy_(value);
  }
}

void mark_no_tangent(const Tensor& t, int64_t level) { set_own_tangent(t, level, Tensor()); }

void check_no_tangent(const char* op, TensorList inputs) {
  if (!has_tangent(inputs)) return;
  throw forward_ad::ForwardADNotImplementedError(
      str(op != nullptr ? str(op, "()") : std::string("this op"),
          ": forward-mode AD is not implemented for this op (it has no tangent formula), "
          "and an input is a dual tensor; compute this part outside the dual_level, or with "
          "forward_ad::unpack_dual(x).primal, or use reverse mode (autograd::grad). "
          "docs/forward-ad.md lists the ops with tangent formulas."));
}

void on_view_created(const Tensor& base, const Tensor& view) {
  if (!view.is_floating_point()) return;
  for (int64_t level : active_levels()) {
    bool found = false;
    Tensor bt = own_tangent(base, level, &found);
    if (!found) bt = tangent(base, level);
    if (bt.defined()) {
      set_own_tangent(view, level, view_of_tangent(bt, base, view));
      continue;
    }
    // Note [Primal views break the chain]: base is a primal (found, no tangent) or a view of one.
    Tensor primal = found ? base : forward_base(base, level);
    if (primal.defined()) set_forward_base(view, level, primal);
  }
}

void clear_tangents(const Tensor& t) {
  AutogradMeta* meta = get_autograd_meta(t);
  if (meta == nullptr || !meta->fw_grad_) return;
  std::vector<std::pair<int64_t, Tensor>> dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(meta->fw_grad_->mutex);
  dropped.swap(meta->fw_grad_->by_level);
}

SavedTangents save_tangents(const Tensor& t) {
  SavedTangents saved;
  if (!enabled() || !t.defined()) return saved;
  for (int64_t level : active_levels()) {
    Tensor tg = tangent(t, level);
    if (!tg.defined()) continue;
    if (!saved.grad) saved.grad = std::make_shared<ForwardGrad>();
    saved.versions.emplace_back(level, tg.version());
    {
      std::lock_guard<std::mutex> lock(saved.grad->mutex);
      // Note [Saved tangents hold no cycle]: the history at save time, not the view's.
      saved.grad->by_level.emplace_back(level, alias_with_current_edge(tg));
    }
    register_with_level(saved.grad, level);
  }
  return saved;
}

void restore_tangents(const SavedTangents& saved, const Tensor& unpacked, const char* node) {
  for (const auto& [level, version] : saved.versions) {
    Tensor tg;
    {
      std::lock_guard<std::mutex> lock(saved.grad->mutex);
      for (const auto& [l, t] : saved.grad->by_level) {
        if (l == level) tg = t;
      }
    }
    if (!tg.defined()) continue;  // that level was exited
    if (tg.version() != version) {
      throw AutogradError(str(
          "one of the variables needed for gradient computation has been modified by an inplace "
          "operation: the tangent (forward-mode gradient at level ",
          level, ") of a tensor saved by ", node, " is at version ", tg.version(),
          "; expected version ", version,
          " instead. Tangents are version checked like primals (docs/forward-ad.md): clone the "
          "dual before writing into it, or its tangent, in place."));
    }
    if (!own_tangent(unpacked, level).defined() && !is_suspended(level)) {
      set_own_tangent(unpacked, level, tg);
    }
  }
}

}  // namespace fwd
}  // namespace autograd

namespace forward_ad {

using autograd::fwd::detail::g_active_levels;

int64_t enter_dual_level() {
  std::lock_guard<std::mutex> lock(autograd::fwd::g_mutex);
  const auto index = static_cast<int64_t>(autograd::fwd::g_levels.size());
  autograd::fwd::g_levels.push_back({index, {}, 64});
  ++g_active_levels;
  return index;
}

void exit_dual_level(int64_t level) {
  std::vector<std::weak_ptr<autograd::ForwardGrad>> grads;
  {
    std::lock_guard<std::mutex> lock(autograd::fwd::g_mutex);
    const auto innermost = static_cast<int64_t>(autograd::fwd::g_levels.size()) - 1;
    if (level != innermost) {
      throw ForwardADError(
          str("exit_dual_level(", level, "): only the innermost level can be exited, and that is ",
              innermost < 0 ? std::string("none (no level is active)") : str("level ", innermost),
              "; exit levels in the reverse order of entering them (dual_level "
              "does this at scope end)"));
    }
    grads = std::move(autograd::fwd::g_levels.back().grads);
    autograd::fwd::g_levels.pop_back();
    --g_active_levels;
  }
  // The level's tangents die with it, on every tensor still alive (torch's behaviour).
  for (const auto& weak : grads) {
    if (auto grad = weak.lock()) {
      std::vector<Tensor> dropped;  // destroyed outside the lock
      std::lock_guard<std::mutex> lock(grad->mutex);
      for (auto* entries : {&grad->by_level, &grad->forward_bases}) {
        for (auto it = entries->begin(); it != entries->end();) {
          if (it->first == level) {
            dropped.push_back(std::move(it->second));
            it = entries->erase(it);
          } else {
            ++it;
          }
        }
      }
    }
  }
}

dual_level::~dual_level() {
  try {
    exit_dual_level(level_);
  } catch (const ForwardADError& e) {
    std::fprintf(stderr, "mutagrad: ~dual_level(): %s\n", e.what());
  }
}

std::optional<int64_t> current_level() {
  std::lock_guard<std::mutex> lock(autograd::fwd::g_mutex);
  if (autograd::fwd::g_levels.empty()) return std::nullopt;
  return static_cast<int64_t>(autograd::fwd::g_levels.size()) - 1;
}

namespace {
int64_t resolve_level(std::optional<int64_t> level, const char* fn) {
  std::optional<int64_t> current = current_level();
  if (!current) {
    throw ForwardADError(str(fn,
                             "(): no forward AD level is active; enter one first ("
                             "forward_ad::dual_level level; in C++, `with "
                             "forward_ad.dual_level():` in Python)"));
  }
  if (!level) return *current;
  if (*level < 0 || *level > *current) {
    throw ValueError(
        str(fn, "(): level ", *level, " is not active; the active levels are 0..", *current));
  }
  return *level;
}

// make_dual's argument checks.
void check_dual(const Tensor& primal, const Tensor& tangent) {
  if (!primal.defined() || !tangent.defined()) {
    throw ValueError("make_dual(): primal and tangent must both be defined tensors");
  }
  if (!primal.is_floating_point()) {
    throw DTypeError(str("make_dual(): expected a floating-point primal, got ",
                         dtype_name(primal.dtype()),
                         "; only floating-point tensors have tangents: convert it first "
                         "(primal.to(kFloat64))"));
  }
  if (!tangent.sizes().equals(primal.sizes())) {
    throw ShapeError(str("make_dual(): the tangent's shape ", tangent.sizes(),
                         " differs from the primal's ", primal.sizes(),
                         "; a tangent has exactly its primal's shape (expand or reshape it)"));
  }
  if (tangent.dtype() != primal.dtype()) {
    throw DTypeError(str("make_dual(): the tangent's dtype ", dtype_name(tangent.dtype()),
                         " differs from the primal's ", dtype_name(primal.dtype()),
                         "; convert it first (tangent.to(primal.dtype()))"));
  }
  if (tangent.device() != primal.device()) {
    throw DeviceError(str("make_dual(): the tangent is on ", tangent.device(),
                          " but the primal is on ", primal.device(),
                          "; move it first (tangent.to(primal.device()))"));
  }
}
}  // namespace

Tensor make_dual(const Tensor& primal, const Tensor& tangent, std::optional<int64_t> level) {
  const int64_t l = resolve_level(level, "make_dual");
  check_dual(primal, tangent);
  Tensor dual = primal.alias();
  // alias() gave it primal's tangent at l (if any); this one replaces it.
  autograd::fwd::set_tangent(dual, l, tangent, "make_dual");
  return dual;
}

UnpackedDual unpack_dual(const Tensor& t, std::optional<int64_t> level) {
  std::optional<int64_t> current = current_level();
  if (!current || !t.defined()) return {t, Tensor()};
  const int64_t l = resolve_level(level, "unpack_dual");
  Tensor tangent = autograd::fwd::tangent(t, l);
  if (!tangent.defined()) return {t, Tensor()};
  Tensor primal;
  {
    autograd::fwd::SuspendLevel suspend(l);  // the primal view gets no tangent at l
    primal = t.alias();
  }
  autograd::fwd::mark_no_tangent(primal, l);
  return {primal, tangent};
}

}  // namespace forward_ad

namespace autograd::fwd {
void make_dual_in_place(const Tensor& fresh, const Tensor& tangent, int64_t level) {
  forward_ad::check_dual(fresh, tangent);
  set_tangent(fresh, level, tangent, "make_dual");
}
}  // namespace autograd::fwd
}  // namespace mutagrad
