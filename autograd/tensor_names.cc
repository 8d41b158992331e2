// The registry of Note [Tensor names] (autograd/tensor_names.h).
#include "autograd/tensor_names.h"

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace mutagrad::autograd {
namespace {

struct Entry {
  std::weak_ptr<TensorImpl> tensor;
  std::string name;
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, Entry> names;  // version counter id -> entry
  size_t live_after_sweep = 0;
};

// Never destroyed: tensors may die during static destruction.
Registry& registry() {
  static auto* r = new Registry();
  return *r;
}

}  // namespace

void set_tensor_name(const Tensor& t, const std::string& name) {
  if (!t.defined()) return;
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  // Drop entries whose tensor died once the table doubled since the last sweep (amortised
  // O(1) per naming; the table stays within twice the live named tensors, plus a few).
  if (r.names.size() >= 2 * r.live_after_sweep + 16) {
    for (auto it = r.names.begin(); it != r.names.end();) {
      it = it->second.tensor.expired() ? r.names.erase(it) : std::next(it);
    }
    r.live_after_sweep = r.names.size();
  }
  if (name.empty()) {
    r.names.erase(t.version_counter().id());
    return;
  }
  r.names[t.version_counter().id()] = Entry{t.impl_ptr(), name};
}

std::optional<std::string> tensor_name_of(const Tensor& t) {
  if (!t.defined()) return std::nullopt;
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.names.find(t.version_counter().id());
  if (it == r.names.end()) return std::nullopt;
  const std::shared_ptr<TensorImpl> named = it->second.tensor.lock();
  if (!named || !named->version_counter().is_same(t.version_counter())) return std::nullopt;
  // The tensor itself, or an alias with its geometry (detach(), what a saved leaf holds).
  const Tensor n(named);
  if (named.get() == t.unsafe_impl() || (n.sizes() == t.sizes() && n.strides() == t.strides() &&
                                         n.storage_offset() == t.storage_offset())) {
    return it->second.name;
  }
  return "a view of " + it->second.name;
}

}  // namespace mutagrad::autograd
