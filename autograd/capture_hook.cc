#include "autograd/capture_hook.h"

#include "autograd/mutation_log.h"

namespace mutagrad::autograd::capture {

Tracer* set_tracer(Tracer* tracer) {
  Tracer* previous = detail::t_tracer;
  detail::t_tracer = tracer;
  // Unrecorded writes reach the tracer through the pre-write observer (Note [Capture hook]).
  if (tracer != nullptr) g_pre_write_hook.store(&autograd::detail::observe_write);
  return previous;
}

}  // namespace mutagrad::autograd::capture
