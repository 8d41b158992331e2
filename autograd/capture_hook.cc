#include "autograd/capture_hook.h"

#include <mutex>

#include "autograd/mutation_log.h"
#include "tensor/read_hook.h"

namespace mutagrad::autograd::capture {

namespace {

// Note [Read hook]: installed while any thread captures; reads reach this thread's tracer.
void on_read(const TensorImpl& impl, const char* what, bool host_read) {
  if (capturing()) current_tracer()->unrecorded_read(impl, what, host_read);
}

std::mutex g_mu;
int g_capturing_threads = 0;  // guarded by g_mu

}  // namespace

Tracer* set_tracer(Tracer* tracer) {
  Tracer* previous = detail::t_tracer;
  detail::t_tracer = tracer;
  // Unrecorded writes reach the tracer through the pre-write observer (Note [Capture hook]).
  if (tracer != nullptr) g_pre_write_hook.store(&autograd::detail::observe_write);
  if ((previous == nullptr) != (tracer == nullptr)) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_capturing_threads += tracer != nullptr ? 1 : -1;
    set_read_hook(g_capturing_threads > 0 ? &on_read : nullptr);
  }
  return previous;
}

}  // namespace mutagrad::autograd::capture
