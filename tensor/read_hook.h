// Observing reads of tensor data, for func::capture (func/capture.h): a host read of a value
// (item(), tolist(), bool()) and any access of a tensor's memory by an op's kernel.
//
//   set_read_hook(&on_read);          // every TensorImpl::data() now reaches on_read
//   notify_host_read(impl, "item");   // item() says it reads a value on the host
//   set_read_hook(nullptr);
#pragma once

#include <atomic>

namespace mutagrad {

class TensorImpl;

// Note [Read hook]
// - One process-wide hook, null when nobody listens; func::capture's tracer installs it while
//   a capture runs (and decides from its thread-local state whether a read concerns it).
// - Host reads (item(), tolist(), numpy(), bool()) call notify_host_read with their name: one
//   relaxed load when no hook is set.
// - Kernel reads: TensorImpl::data() already takes a slow path while any pending mark is set
//   (tensor/pending.h); while a hook is set it counts as one such mark, and the slow path calls
//   the hook with host_read = false. So data() costs the one relaxed load it paid before.
using ReadHook = void (*)(const TensorImpl& impl, const char* what, bool host_read);

namespace detail {
inline std::atomic<ReadHook> g_read_hook{nullptr};
}  // namespace detail

// Installs `hook` (null: removes it); returns the previous one.
ReadHook set_read_hook(ReadHook hook);

// `what` ("item", "tolist") reads `impl`'s values on the host.
inline void notify_host_read(const TensorImpl& impl, const char* what) {
  if (ReadHook hook = detail::g_read_hook.load(std::memory_order_relaxed)) {
    hook(impl, what, /*host_read=*/true);
  }
}

}  // namespace mutagrad
