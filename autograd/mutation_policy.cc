#include "autograd/mutation_policy.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autograd/autograd_meta.h"
#include "autograd/history.h"
#include "autograd/mutation_log.h"
#include "tensor/native/copy.h"
#include "tensor/native/views.h"

namespace mutagrad::autograd {
namespace {

// Live registered slots by version-counter id. Consulted only from the pre-write hook, which
// is installed the first time a slot is made (a program that never uses kSnapshot pays one
// null-pointer load per bump).
struct Registry {
  std::mutex mu;
  std::unordered_multimap<const void*, SnapshotSlot*> slots;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: slots may die during static exit
  return *r;
}

std::atomic<int64_t> g_live_slots{0};

// A copy of `saved` that owns its memory and keeps its gradient edge (double backward).
Tensor snapshot_of(const Tensor& saved) {
  Tensor copy = native::clone(native::detach(saved));
  if (get_autograd_meta(saved) == nullptr) return copy;
  Edge edge = gradient_edge(saved);
  if (!edge.function || !saved.grad_fn()) return copy;  // leaves are kept by SavedVariable
  auto meta = std::make_unique<AutogradMeta>();
  meta->grad_fn_ = edge.function;
  meta->output_nr_ = edge.input_nr;
  copy.unsafe_impl()->set_autograd_meta(std::move(meta));
  return copy;
}

// Whether two saved values are one tensor for snapshots: the same bytes seen through the same
// geometry and dtype, with the same gradient edge (the copy keeps that edge).
bool same_saved_value(const Tensor& a, const Tensor& b) {
  if (a.unsafe_impl() == b.unsafe_impl()) return true;
  if (!a.storage().is_same(b.storage()) || a.storage_offset() != b.storage_offset() ||
      a.dtype() != b.dtype() || a.sizes().vec() != b.sizes().vec() ||
      a.strides().vec() != b.strides().vec()) {
    return false;
  }
  const AutogradMeta* ma = get_autograd_meta(a);
  const AutogradMeta* mb = get_autograd_meta(b);
  const Node* fa = ma != nullptr ? ma->grad_fn_.get() : nullptr;
  const Node* fb = mb != nullptr ? mb->grad_fn_.get() : nullptr;
  return fa == fb && (fa == nullptr || ma->output_nr_ == mb->output_nr_);
}

void unregister(SnapshotSlot* slot, const void* id) {
  auto range = registry().slots.equal_range(id);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second == slot) {
      registry().slots.erase(it);
      g_live_slots.fetch_sub(1, std::memory_order_release);
      return;
    }
  }
}

}  // namespace

// Note [Snapshot slots and threads]
// A slot's value and version change when any thread writes the saved storage (the pre-write
// hook swaps in a copy) or backward releases it, so every read of them takes the registry's lock
// too: unpack() gets the value and its version from one load() (a torn pair would be a false
// stale error, or a handle read while another thread replaces it, a use-after-free). The lock is
// taken once per saved tensor per backward, and only for tensors saved under kSnapshot.
// g_live_slots is decremented with release and read with acquire: a writer that finds no slot
// and skips the lock still comes after the last copy another writer made of its bytes.
// What stays racy by nature: a write that runs while the forward op that saves the tensor is
// still running (its hook can run before the slot is registered and its bump after the version
// was read) is not snapshotted, and backward then raises the stale error. A write made after
// the op returned is always snapshotted. docs/thread-safety.md.

Tensor SnapshotSlot::data() const {
  std::lock_guard<std::mutex> lock(registry().mu);
  return data_;
}

uint32_t SnapshotSlot::saved_version() const {
  std::lock_guard<std::mutex> lock(registry().mu);
  return saved_version_;
}

bool SnapshotSlot::snapshotted() const {
  std::lock_guard<std::mutex> lock(registry().mu);
  return snapshotted_;
}

Tensor SnapshotSlot::load(uint32_t* saved_version) const {
  std::lock_guard<std::mutex> lock(registry().mu);
  *saved_version = saved_version_;
  return data_;
}

SnapshotSlot::SnapshotSlot(Tensor data, uint32_t saved_version)
    : data_(std::move(data)),
      saved_version_(saved_version),
      counter_id_(data_.version_counter().id()) {}

SnapshotSlot::~SnapshotSlot() {
  std::lock_guard<std::mutex> lock(registry().mu);
  if (counter_id_ != nullptr) unregister(this, counter_id_);
}

void SnapshotSlot::release() {
  Tensor old;
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    if (counter_id_ != nullptr) unregister(this, counter_id_);
    counter_id_ = nullptr;
    old = std::move(data_);
    data_ = Tensor();
  }
}  // `old` dies outside the lock: it may free nodes that own other slots

namespace {
thread_local std::shared_ptr<SnapshotScope> t_snapshot_scope;
}  // namespace

const std::shared_ptr<SnapshotScope>& current_snapshot_scope() { return t_snapshot_scope; }
void set_snapshot_scope(std::shared_ptr<SnapshotScope> scope) {
  t_snapshot_scope = std::move(scope);
}

std::shared_ptr<SnapshotSlot> make_snapshot_slot(const Tensor& data, uint32_t saved_version) {
  auto slot = std::make_shared<SnapshotSlot>(data, saved_version);
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    registry().slots.emplace(data.version_counter().id(), slot.get());
    g_live_slots.fetch_add(1, std::memory_order_relaxed);
  }
  g_pre_write_hook.store(&detail::observe_write, std::memory_order_relaxed);
  return slot;
}

int64_t snapshot_before_write(const VersionCounter& counter) {
  if (g_live_slots.load(std::memory_order_acquire) == 0) return 0;
  int64_t bytes = 0;
  std::vector<Tensor> old;  // released after unlocking (see release())
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    auto range = registry().slots.equal_range(counter.id());
    if (range.first == range.second) return 0;
    // One copy per saved tensor: a node that saved the same tensor twice (h * h) shares it,
    // whether it holds the tensor twice or two aliases of it (Note [Saved inputs do not own
    // their history] in autograd/saved_variable.h).
    std::vector<std::pair<Tensor, Tensor>> copies;  // (saved value, its copy)
    for (auto it = range.first; it != range.second;) {
      SnapshotSlot* slot = it->second;
      // A value already stale (written under kError before) stays stale: backward reports it.
      if (slot->data_.defined() && slot->data_.version() == slot->saved_version_) {
        const Tensor& saved = slot->data_;
        auto found = std::find_if(copies.begin(), copies.end(),
                                  [&](const auto& c) { return same_saved_value(c.first, saved); });
        if (found == copies.end()) {
          copies.emplace_back(saved, snapshot_of(saved));
          bytes += copies.back().second.numel() *
                   static_cast<int64_t>(element_size(copies.back().second.dtype()));
          found = copies.end() - 1;
        }
        Tensor copy = found->second;
        old.push_back(std::move(slot->data_));
        slot->saved_version_ = copy.version();
        slot->data_ = std::move(copy);
        slot->snapshotted_ = true;
      }
      slot->counter_id_ = nullptr;
      it = registry().slots.erase(it);
      g_live_slots.fetch_sub(1, std::memory_order_release);
    }
  }
  return bytes;
}

int64_t num_snapshot_slots() { return g_live_slots.load(std::memory_order_relaxed); }

}  // namespace mutagrad::autograd
