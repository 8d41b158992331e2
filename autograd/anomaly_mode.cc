#include "autograd/anomaly_mode.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "autograd/node.h"
#include "autograd/stack_trace.h"

namespace mutagrad::autograd {
namespace {

std::atomic<bool> g_enabled{false};
std::atomic<ForwardSiteProvider> g_provider{nullptr};

struct Forward {
  std::optional<CallSite> site;  // a provider's or an in-place write's
  StackTrace stack;              // without a provider
};

struct Sites {
  std::mutex mu;
  std::unordered_map<uint64_t, Forward> by_sequence_nr;
};

Sites& sites() {
  static Sites* s = new Sites();  // never destroyed (nodes may die during static exit)
  return *s;
}

}  // namespace

void set_detect_anomaly(bool enabled) {
  g_enabled.store(enabled, std::memory_order_relaxed);
  if (!enabled) {
    std::lock_guard<std::mutex> lock(sites().mu);
    sites().by_sequence_nr.clear();
  }
}

bool is_anomaly_enabled() { return g_enabled.load(std::memory_order_relaxed); }

void set_forward_site_provider(ForwardSiteProvider provider) {
  g_provider.store(provider, std::memory_order_relaxed);
}

namespace detail {

void record_forward_site(const Node& node) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  Forward forward;
  if (ForwardSiteProvider provider = g_provider.load(std::memory_order_relaxed)) {
    const CallSite site = provider();
    if (site.file == nullptr) return;
    forward.site = site;
  } else {
    forward.stack = StackTrace::capture();
  }
  std::lock_guard<std::mutex> lock(sites().mu);
  sites().by_sequence_nr.emplace(node.sequence_nr(), forward);
}

void record_forward_site(const Node& node, CallSite site) {
  if (!g_enabled.load(std::memory_order_relaxed) || site.file == nullptr) return;
  Forward forward;
  forward.site = site;
  std::lock_guard<std::mutex> lock(sites().mu);
  sites().by_sequence_nr.insert_or_assign(node.sequence_nr(), forward);
}

}  // namespace detail

std::optional<CallSite> forward_site(const Node& node) {
  std::lock_guard<std::mutex> lock(sites().mu);
  auto it = sites().by_sequence_nr.find(node.sequence_nr());
  if (it == sites().by_sequence_nr.end()) return std::nullopt;
  return it->second.site;
}

std::optional<std::string> describe_forward(const Node& node) {
  Forward forward;
  {
    std::lock_guard<std::mutex> lock(sites().mu);
    auto it = sites().by_sequence_nr.find(node.sequence_nr());
    if (it == sites().by_sequence_nr.end()) return std::nullopt;
    forward = it->second;
  }
  if (forward.site) {
    return "at " + std::string(forward.site->file) + ":" + std::to_string(forward.site->line);
  }
  const std::string frame = forward.stack.user_frame();  // reads ELF files: outside the lock
  if (frame.empty()) return std::nullopt;
  return "in " + frame;
}

}  // namespace mutagrad::autograd
