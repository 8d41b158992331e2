// MutationPolicy: what an in-place write does to a value a live graph saved for backward.
//
// kError (the default, PyTorch's behaviour): the write goes through and backward raises the
// "modified by an inplace operation" error. kSnapshot: tensors saved while the policy is in
// effect are copied (clone) just before the first write that would make them stale, so
// backward uses the value they had when saved while the write still reaches every alias.
//
//   {
//     MutationPolicyGuard guard(MutationPolicy::kSnapshot);
//     Tensor y = a * b;      // MulBackward0 saves a and b (registered for snapshots)
//     a.add_(1.0);           // snapshots the saved a first, then writes a (and its views)
//     y.sum().backward();    // b.grad() == a's value before add_
//   }
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

enum class MutationPolicy { kError, kSnapshot };

// The calling thread's policy (kError unless a MutationPolicyGuard says otherwise). It is
// read when a tensor is saved: a saved tensor registered under kSnapshot stays protected by
// any later write, on any thread, until its node is freed.
// A tensor saved under saved-tensor hooks is not registered: the node keeps only what the pack
// hook returned (Note [Saved-tensor hooks] in autograd/saved_tensor_hooks.h).
class MutationPolicyState {
 public:
  static MutationPolicy current() { return policy_; }
  static void set(MutationPolicy policy) { policy_ = policy; }

 private:
  static inline thread_local MutationPolicy policy_ = MutationPolicy::kError;
};

// Sets the policy for a scope and restores the previous one on exit.
class MutationPolicyGuard {
 public:
  explicit MutationPolicyGuard(MutationPolicy policy) : prev_(MutationPolicyState::current()) {
    MutationPolicyState::set(policy);
  }
  ~MutationPolicyGuard() { MutationPolicyState::set(prev_); }
  MutationPolicyGuard(const MutationPolicyGuard&) = delete;
  MutationPolicyGuard& operator=(const MutationPolicyGuard&) = delete;

 private:
  MutationPolicy prev_;
};

// Note [Snapshot scopes]
// torch 2's allow_mutation_on_saved_tensors refuses a backward that runs after its block
// closed. A SnapshotScope is such a block: set as the thread's scope, every snapshot slot made
// while it is set keeps it, and unpacking the slot once the scope is closed raises
// kClosedSnapshotScopeMessage (SavedVariable::unpack). Without a scope (MutationPolicyGuard
// alone) slots stay valid for the graph's life.
class SnapshotScope {
 public:
  bool is_open() const { return open_.load(std::memory_order_acquire); }
  void close() { open_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> open_{true};
};
inline constexpr const char* kClosedSnapshotScopeMessage =
    "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context in which the "
    "graph was originally recorded.";
// The calling thread's scope (null: none).
const std::shared_ptr<SnapshotScope>& current_snapshot_scope();
void set_snapshot_scope(std::shared_ptr<SnapshotScope> scope);

// A saved value that kSnapshot protects: registered under its version counter's id until it
// is snapshotted (then private to the graph) or destroyed. Owned by SavedVariable.
class SnapshotSlot {
 public:
  SnapshotSlot(Tensor data, uint32_t saved_version);
  ~SnapshotSlot();
  SnapshotSlot(const SnapshotSlot&) = delete;
  SnapshotSlot& operator=(const SnapshotSlot&) = delete;

  // Read under the registry's lock: another thread's write may swap in a snapshot at any time
  // (Note [Snapshot slots and threads] in mutation_policy.cc).
  Tensor data() const;
  uint32_t saved_version() const;
  bool snapshotted() const;
  // The value and the version it is checked against, read together (unpack).
  Tensor load(uint32_t* saved_version) const;
  // Drops the value (backward ran without retain_graph).
  void release();
  // Whether the SnapshotScope the slot was made in has closed (Note [Snapshot scopes]).
  bool scope_closed() const { return scope_ != nullptr && !scope_->is_open(); }

 private:
  friend int64_t snapshot_before_write(const VersionCounter& counter);
  Tensor data_;
  uint32_t saved_version_;
  const void* counter_id_;  // null once unregistered
  bool snapshotted_ = false;
  std::shared_ptr<const SnapshotScope> scope_ = current_snapshot_scope();
};

// Registers `data` (saved at `saved_version`) for snapshots; installs the pre-write hook.
std::shared_ptr<SnapshotSlot> make_snapshot_slot(const Tensor& data, uint32_t saved_version);

// Before a write (the pre-write hook, autograd/mutation_log.cc: detail::observe_write): clones
// every still-current registered value of `counter`'s storage; returns the bytes copied.
int64_t snapshot_before_write(const VersionCounter& counter);

// How many saved values are registered for snapshots now (tests, diagnostics).
int64_t num_snapshot_slots();

}  // namespace mutagrad::autograd

namespace mutagrad {
using autograd::MutationPolicy;
using autograd::MutationPolicyGuard;
}  // namespace mutagrad
