// VersionCounter: how many in-place writes a storage has seen, shared by all its aliases.
//
// See Note [Version Counter Sharing] in docs/notes/version-counter.md. A tensor, its views and
// detach() share one counter; variable_data() gets a fresh one. Every in-place op bumps it
// exactly once, with the op's name and call site, so that a stale saved tensor can be traced
// back to the write that made it stale.
//
//   VersionCounter vc;
//   vc.bump({"add_", __FILE__, __LINE__});                // vc.current() == 1
//   std::optional<MutationSite> s = vc.site_of_bump(0);   // the add_ above
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "tensor/inference_mode.h"
#include "tensor/pending.h"
#include "tensor/small_object_pool.h"

namespace mutagrad {

class TensorImpl;

// How `x[idx] = v` or `x.index_put_(idx, v)` addressed its elements, for a write's observers
// (autograd::MutationLog). Formatted only when an observer asks; lives for the write's call.
struct IndexExpression {
  const TensorImpl* indexed = nullptr;  // x
  std::string (*format)(const void* indices) = nullptr;
  const void* indices = nullptr;  // what `format` reads
  std::string str() const { return format(indices); }
};

// Where an in-place write happened. The strings must outlive the process (literals, or
// strings interned by the caller). Capture it with CallSite::current() as a default argument.
struct MutationSite {
  const char* op = nullptr;    // "add_", "set_item_", ...
  const char* file = nullptr;  // the caller's source file (C++ or Python)
  int line = 0;
  // For an indexed write: the index expression, shown by a MutationLog. Not remembered by the
  // counter (site_of_bump returns op, file and line).
  const IndexExpression* index = nullptr;
};

// The caller's file:line, taken at the call through default arguments:
//   Tensor& add_(const Tensor& other, CallSite site = CallSite::current());
struct CallSite {
  const char* file;
  int line;
  static constexpr CallSite current(const char* file = __builtin_FILE(),
                                    int line = __builtin_LINE()) {
    return CallSite{file, line};
  }
};

class VersionCounter;

// Called before every bump, with the write's site and the tensor written (null when the caller
// did not say), while set (autograd installs it for MutationPolicy::kSnapshot, to copy saved
// values out of the way of the write, and for a MutationLog). Null otherwise: the bump then
// costs one load.
using PreWriteHook = void (*)(const VersionCounter& counter, const MutationSite& site,
                              const TensorImpl* written);
inline std::atomic<PreWriteHook> g_pre_write_hook{nullptr};

class VersionCounter {
 public:
  // How many past bumps keep their site; older ones are reported as unknown.
  static constexpr uint32_t kSiteHistory = 8;

  // Marked as an inference tensor's when made in inference mode (tensor/inference_mode.h).
  VersionCounter() : impl_(make_pooled<Impl>()) { impl_->inference = InferenceMode::is_enabled(); }

  // Whether the tensors sharing this counter are inference tensors (their writes are not counted).
  bool is_inference() const { return impl_->inference; }

  uint32_t current() const { return impl_->version.load(std::memory_order_relaxed); }

  // One in-place write: version += 1, and remember where it came from. Safe to call from several
  // threads at once: each call moves the version by exactly one (see Note [Concurrent bumps]).
  // `written`: the tensor the write goes through, for the pre-write hook's observers (its shape
  // appears in a MutationLog); every in-place op of the library passes it.
  void bump(const MutationSite& site, const TensorImpl* written = nullptr) {
    if (__builtin_expect(impl_->inference, 0)) {
      if (!InferenceMode::is_enabled()) detail::throw_inference_tensor_write();
      return;  // inference tensors track no version (nothing saved them)
    }
    // Note [Pending collective]: the write is refused, before anything changes, while an
    // unfinished op reads or writes the memory of `written`'s storage.
    if (__builtin_expect(any_pending_marks(), 0) && written != nullptr) {
      detail::check_pending_slow(*written, PendingAccess::kWrite,
                                 site.op != nullptr ? site.op : "an in-place write");
    }
    if (PreWriteHook hook = g_pre_write_hook.load(std::memory_order_relaxed)) {
      hook(*this, site, written);
    }
    const uint32_t from = impl_->version.fetch_add(1, std::memory_order_relaxed);
    impl_->sites[from % kSiteHistory].publish(from, site);
  }

  // The site of the bump that moved the version from `from` to `from + 1`, or nullopt when it
  // has not happened, is too old to be remembered, or is still being recorded by another thread.
  std::optional<MutationSite> site_of_bump(uint32_t from) const {
    const uint32_t now = current();
    if (from >= now || now - from > kSiteHistory) return std::nullopt;
    return impl_->sites[from % kSiteHistory].read(from);
  }

  bool is_same(const VersionCounter& other) const { return impl_ == other.impl_; }
  // Identity of the shared counter (one per storage family); stable while any alias lives.
  const void* id() const { return impl_.get(); }

 private:
  // Note [Concurrent bumps]
  // The version is one fetch_add, so concurrent bumps each count exactly once. The site of the
  // bump from version v goes to slot v % kSiteHistory, guarded by a per-slot state word that
  // holds v, a "complete" bit and a "being written" bit (0: never written). A writer claims the
  // slot with one CAS from the complete state of an older bump; it waits (yields) only while the
  // bump kSiteHistory versions before it is still writing the same slot, and gives up if a newer
  // bump already took it (its site is then too old to be reported anyway). A reader (a seqlock)
  // accepts the fields only if the state read "v, complete" both before and after it read them,
  // so it never returns a torn site. The fields are atomics (no data race); uncontended, a bump
  // costs one fetch_add, one load, one CAS and four stores (plain moves on x86).
  class SiteSlot {
   public:
    void publish(uint32_t from, const MutationSite& site) {
      uint64_t s = state_.load(std::memory_order_relaxed);
      for (;;) {
        if (s & kWriting) {  // the bump kSiteHistory versions earlier still writes this slot
          std::this_thread::yield();
          s = state_.load(std::memory_order_relaxed);
          continue;
        }
        // Versions compare modulo 2^32, as the counter wraps.
        if (s != 0 && static_cast<int32_t>(from - version_of(s)) <= 0) return;  // a newer owner
        // Acquire: the previous owner's field stores come before ours.
        if (state_.compare_exchange_weak(s, complete(from) | kWriting, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          break;
        }
      }
      // Release stores: a reader that sees one of these values also sees the claim above.
      op_.store(site.op, std::memory_order_release);
      file_.store(site.file, std::memory_order_release);
      line_.store(site.line, std::memory_order_release);
      state_.store(complete(from), std::memory_order_release);
    }

    std::optional<MutationSite> read(uint32_t from) const {
      const uint64_t expected = complete(from);
      if (state_.load(std::memory_order_acquire) != expected) return std::nullopt;
      // Acquire loads: the re-check below cannot move before them.
      MutationSite site{op_.load(std::memory_order_acquire), file_.load(std::memory_order_acquire),
                        line_.load(std::memory_order_acquire)};
      if (state_.load(std::memory_order_relaxed) != expected) return std::nullopt;
      return site;
    }

   private:
    static constexpr uint64_t kWriting = 1;
    static constexpr uint64_t kComplete = 2;
    static uint64_t complete(uint32_t from) { return uint64_t{from} << 2 | kComplete; }
    static uint32_t version_of(uint64_t state) { return static_cast<uint32_t>(state >> 2); }

    // The fields start indeterminate (C++17's std::atomic default constructor): read() takes
    // them only once state_ says a publish() wrote them.
    std::atomic<uint64_t> state_{0};
    std::atomic<const char*> op_;
    std::atomic<const char*> file_;
    std::atomic<int> line_;
  };

  struct Impl {
    // User-provided, so that allocate_shared's value-initialization runs only the initializers
    // below: an implicit constructor would zero all 272 bytes first (a `rep stos`, 3 % of a
    // tiny op's time), where the slots need only their state words.
    Impl() {}  // NOLINT(modernize-use-equals-default): `= default` would bring the zeroing back
    std::atomic<uint32_t> version{0};
    SiteSlot sites[kSiteHistory];
    bool inference = false;  // set once, at creation
  };
  std::shared_ptr<Impl> impl_;
};

// Note [Allocate before the bump]
// An in-place write bumps its version once every check passed and every temporary it needs
// exists (a staging copy, a clone of an operand that overlaps the destination, a result in
// another dtype, a kernel's sort or winner buffers), right before the first element changes.
// So an out-of-memory error, the one failure left after validation, leaves values and version
// as they were (the strong guarantee), and no saved tensor looks stale because of a write that
// did not happen. A write whose temporaries are allocated inside a Backend kernel
// (index_put's) hands its bump down as a PendingBump: the kernel fires it after its
// allocations, before it writes; the caller fires it after the kernel returns (a kernel that
// wrote nothing, e.g. of zero elements, did not), and a later fire() does nothing, so a
// write in several passes bumps once, at the first. tests/cuda/memory_limits_test.cc runs every
// write of the family on a full device.
//
//   const PendingBump bump(self.version_counter(), site, self.unsafe_impl());
//   native::index_put_validated(self, adv, values, accumulate, &bump);  // fires it
class PendingBump {
 public:
  PendingBump(VersionCounter& counter, const MutationSite& site, const TensorImpl* written)
      : counter_(&counter), site_(&site), written_(written) {}
  PendingBump(const PendingBump&) = delete;
  PendingBump& operator=(const PendingBump&) = delete;

  // The bump, the first time; nothing on later calls.
  void fire() const {
    if (fired_) return;
    counter_->bump(*site_, written_);  // may refuse the write (Note [Pending collective])
    fired_ = true;
  }
  bool fired() const { return fired_; }

 private:
  VersionCounter* counter_;
  const MutationSite* site_;
  const TensorImpl* written_;
  mutable bool fired_ = false;
};

}  // namespace mutagrad
