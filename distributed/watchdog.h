// The wait of a transport that can fail asynchronously (NCCL): poll, never block, and turn a
// transport error or a silent peer into DistributedError after aborting the communicator.
//
//   struct NcclAllReduce : PolledOperation { ... };   // cudaEventQuery, ncclCommGetAsyncError
//   wait_or_abort(op, pg.timeout_seconds(), "all_reduce_", pg.rank());
//
// Note [NCCL failures raise]
// A blocking wait on NCCL work (cudaStreamSynchronize, cudaEventSynchronize) hangs forever when
// a peer dies or a network error stalls the collective: the kernel never completes and NCCL
// reports the failure only through ncclCommGetAsyncError. So the NCCL group never blocks: its
// communicator is non-blocking (config.blocking = 0), and every wait -- for an enqueue that
// returned ncclInProgress, for the stream after a synchronous collective, for a Work's event
// -- is wait_or_abort() over a PolledOperation: finished() (cudaEventQuery / the async error
// no longer ncclInProgress) and async_error() polled in turn, yielding and then sleeping
// between polls. An async error, or no completion within the group's timeout
// (MUTAGRAD_DISTRIBUTED_TIMEOUT, as the MPI group's exchange), aborts the communicator
// (ncclCommAbort ends every pending operation of it, so the peers' own polls see an error or
// time out too: every live rank raises) and raises DistributedError. The group is unusable
// afterwards, and says so on its next call. This loop is plain C++, tested with a fake on the
// host (tests/distributed/watchdog_test.cc); only the NCCL side is device-build code.
#pragma once

#include <string>

namespace mutagrad::distributed {

class PolledOperation {
 public:
  virtual ~PolledOperation() = default;
  // Whether the operation completed (never blocks).
  virtual bool finished() = 0;
  // "" while the communicator is healthy; else the transport's error, e.g. "ncclRemoteError:
  // remote process exited or there was a network error".
  virtual std::string async_error() = 0;
  // Aborts the communicator: its pending operations end on every rank. Called at most once.
  virtual void abort() = 0;
};

// Returns when op.finished(). DistributedError naming `what` and `rank` after op.abort() when
// op.async_error() is set, or when `timeout_seconds` pass first.
void wait_or_abort(PolledOperation& op, double timeout_seconds, const std::string& what, int rank);

}  // namespace mutagrad::distributed
