#include "autograd/anomaly_mode.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "autograd/node.h"

namespace mutagrad::autograd {
namespace {

std::atomic<bool> g_enabled{false};
std::atomic<ForwardSiteProvider> g_provider{nullptr};

struct Sites {
  std::mutex mu;
  std::unordered_map<uint64_t, CallSite> by_sequence_nr;
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
  ForwardSiteProvider provider = g_provider.load(std::memory_order_relaxed);
  if (provider == nullptr) return;
  const CallSite site = provider();
  if (site.file == nullptr) return;
  std::lock_guard<std::mutex> lock(sites().mu);
  sites().by_sequence_nr.emplace(node.sequence_nr(), site);
}

}  // namespace detail

std::optional<CallSite> forward_site(const Node& node) {
  std::lock_guard<std::mutex> lock(sites().mu);
  auto it = sites().by_sequence_nr.find(node.sequence_nr());
  if (it == sites().by_sequence_nr.end()) return std::nullopt;
  return it->second;
}

}  // namespace mutagrad::autograd
