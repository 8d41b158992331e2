// VersionCounter::throw_pending_access: see Note [Pending collective] in
// docs/notes/version-counter.md.
#include "tensor/error.h"
#include "tensor/version_counter.h"

namespace mutagrad {

void VersionCounter::throw_pending_access(const char* access) const {
  const char* op = impl_->pending_op.load(std::memory_order_acquire);
  const char* file = impl_->pending_file.load(std::memory_order_relaxed);
  const int line = impl_->pending_line.load(std::memory_order_relaxed);
  throw PendingWriteError(str(access, ": the tensor is still being written by ",
                              op != nullptr ? op : "an asynchronous op", " started at ",
                              file != nullptr ? file : "?", ":", line,
                              ", which has not finished (its data would be torn); call wait() on "
                              "the Work that ",
                              op != nullptr ? op : "it", " returned before using the tensor"));
}

}  // namespace mutagrad
