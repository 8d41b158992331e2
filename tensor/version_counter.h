// VersionCounter: how many in-place writes a storage has seen, shared by all its aliases.
//
// See Note [Version Counter Sharing] in docs/notes/version-counter.md. A tensor, its views and
// detach() share one counter; variable_data() gets a fresh one. Every in-place op bumps it
// exactly once, with the op's name and call site, so that a stale saved tensor can be traced
// back to the write that made it stale.
//
//   VersionCounter vc;
//   vc.bump({"add_", __FILE__, __LINE__});     // vc.current() == 1
//   const MutationSite* s = vc.site_of_bump(0);  // the add_ above
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace mutagrad {

// Where an in-place write happened. The strings must outlive the process (literals, or
// strings interned by the caller). Capture it with CallSite::current() as a default argument.
struct MutationSite {
  const char* op = nullptr;    // "add_", "set_item_", ...
  const char* file = nullptr;  // the caller's source file (C++ or Python)
  int line = 0;
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

// Called before every bump while set (autograd's MutationPolicy::kSnapshot installs it to copy
// saved values out of the way of the write). Null otherwise: the bump then costs one load.
using PreWriteHook = void (*)(const VersionCounter& counter);
inline std::atomic<PreWriteHook> g_pre_write_hook{nullptr};

class VersionCounter {
 public:
  // How many past bumps keep their site; older ones are reported as unknown.
  static constexpr uint32_t kSiteHistory = 8;

  VersionCounter() : impl_(std::make_shared<Impl>()) {}

  uint32_t current() const { return impl_->version.load(std::memory_order_relaxed); }

  // One in-place write: version += 1, and remember where it came from.
  void bump(const MutationSite& site) {
    if (PreWriteHook hook = g_pre_write_hook.load(std::memory_order_relaxed)) hook(*this);
    uint32_t from = impl_->version.fetch_add(1, std::memory_order_relaxed);
    impl_->sites[from % kSiteHistory] = site;
  }

  // The site of the bump that moved the version from `from` to `from + 1`, or nullptr when it
  // has not happened or is too old to be remembered.
  const MutationSite* site_of_bump(uint32_t from) const {
    uint32_t now = current();
    if (from >= now || now - from > kSiteHistory) return nullptr;
    return &impl_->sites[from % kSiteHistory];
  }

  bool is_same(const VersionCounter& other) const { return impl_ == other.impl_; }
  // Identity of the shared counter (one per storage family); stable while any alias lives.
  const void* id() const { return impl_.get(); }

 private:
  struct Impl {
    std::atomic<uint32_t> version{0};
    MutationSite sites[kSiteHistory];
  };
  std::shared_ptr<Impl> impl_;
};

}  // namespace mutagrad
