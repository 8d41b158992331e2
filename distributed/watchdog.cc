// wait_or_abort: Note [NCCL failures raise] in watchdog.h.
#include "distributed/watchdog.h"

#include <chrono>
#include <thread>

#include "distributed/process_group.h"

namespace mutagrad::distributed {

void wait_or_abort(PolledOperation& op, double timeout_seconds, const std::string& what, int rank) {
  const auto start = std::chrono::steady_clock::now();
  const auto limit = std::chrono::duration<double>(timeout_seconds);
  for (int polls = 0;; ++polls) {
    // The error first: a failed collective may never finish, or "finish" with garbage.
    std::string error = op.async_error();
    if (error.empty() && op.finished()) return;
    if (!error.empty()) {
      op.abort();
      throw DistributedError(str(what, " (rank ", rank, "): the transport failed: ", error,
                                 ". The communicator was aborted and this process group is "
                                 "unusable now; every rank raises. Check NCCL_DEBUG=INFO output "
                                 "and restart the job (docs/distributed.md)"));
    }
    if (std::chrono::steady_clock::now() - start > limit) {
      op.abort();
      throw DistributedError(
          str(what, " (rank ", rank, "): waited ", timeout_seconds,
              " s for the collective to finish. A rank skipped it, died, or the network stalled. "
              "The communicator was aborted and this process group is unusable now; raise the "
              "timeout with set_timeout_seconds() or MUTAGRAD_DISTRIBUTED_TIMEOUT if the ranks are "
              "merely slow"));
    }
    if (polls < 64) continue;  // a collective usually finishes within microseconds
    if (polls < 1024) {
      std::this_thread::yield();  // other ranks may share our cores
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace mutagrad::distributed
