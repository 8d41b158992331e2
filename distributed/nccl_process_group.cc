// NcclProcessGroup: see nccl_process_group.h. Compiled only in the device build.
#include "distributed/nccl_process_group.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>
#include <utility>

#include "cuda/cuda.h"
#include "cuda/runtime.h"
#include "distributed/watchdog.h"

namespace mutagrad::distributed {
namespace {

void check_nccl(ncclResult_t r, const char* call) {
  if (r == ncclSuccess) return;
  throw DistributedError(str(call, " failed: ", ncclGetErrorString(r),
                             "; check NCCL_DEBUG=INFO output, and that every rank has its own GPU "
                             "(docs/distributed.md)"));
}

void check_cuda(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  throw DistributedError(str(call, " failed: ", cudaGetErrorString(e)));
}

ncclDataType_t nccl_type(ScalarType dtype) {
  switch (dtype) {
    case kBool:
    case ScalarType::UInt8:
      return ncclUint8;
    case ScalarType::Int8:
      return ncclInt8;
    case ScalarType::Int32:
      return ncclInt32;
    case ScalarType::Int64:
      return ncclInt64;
    case ScalarType::Float16:
      return ncclFloat16;
    case ScalarType::BFloat16:
      return ncclBfloat16;
    case ScalarType::Float32:
      return ncclFloat32;
    case ScalarType::Float64:
      return ncclFloat64;
    default:
      throw DTypeError(str("nccl: NCCL has no ", dtype_name(dtype),
                           " type; convert the tensor (e.g. .to(kInt32)) or use the mpi group"));
  }
}

ncclRedOp_t nccl_op(ScalarType dtype, ReduceOp op) {
  if (dtype == kBool) {  // as bytes 0/1: or = max, and = min
    return (op == ReduceOp::kSum || op == ReduceOp::kMax) ? ncclMax : ncclMin;
  }
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kProduct:
      return ncclProd;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
  }
  return ncclSum;
}

// The communicator's async error as text ("" while it is healthy or still working).
std::string async_error_of(ncclComm_t comm) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
  if (r != ncclSuccess) return str("ncclCommGetAsyncError failed: ", ncclGetErrorString(r));
  if (state == ncclSuccess || state == ncclInProgress) return "";
  return ncclGetErrorString(state);
}

// Note [NCCL failures raise] in distributed/watchdog.h: the NCCL side of the poll loop.
class NcclPoll : public PolledOperation {
 public:
  // `event` null: waits for a non-blocking NCCL call to leave ncclInProgress.
  NcclPoll(ncclComm_t comm, cudaEvent_t event, bool* aborted)
      : comm_(comm), event_(event), aborted_(aborted) {}
  bool finished() override {
    if (event_ == nullptr) {
      ncclResult_t state = ncclSuccess;
      return ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state != ncclInProgress;
    }
    const cudaError_t e = cudaEventQuery(event_);
    if (e == cudaErrorNotReady) return false;
    check_cuda(e, "cudaEventQuery");
    return true;
  }
  std::string async_error() override { return async_error_of(comm_); }
  void abort() override {
    if (!*aborted_) (void)ncclCommAbort(comm_);
    *aborted_ = true;
  }

 private:
  ncclComm_t comm_;
  cudaEvent_t event_;
  bool* aborted_;
};

class NcclProcessGroup;

// An event recorded on the stream after the NCCL call: wait() polls it (never blocks), test()
// queries it; both raise when the communicator failed.
class NcclRequest final : public Work::Request {
 public:
  NcclRequest(NcclProcessGroup* group, cudaStream_t stream, const char* call);
  ~NcclRequest() override { cudaEventDestroy(event_); }
  void wait() override;
  bool test() override;

 private:
  NcclProcessGroup* group_;
  const char* call_;
  cudaEvent_t event_ = nullptr;
};

class NcclProcessGroup final : public MpiProcessGroup {
 public:
  explicit NcclProcessGroup(MPI_Comm comm) : MpiProcessGroup(comm) {
    if (!cuda::is_available()) {
      throw DeviceError(str("init_process_group(\"nccl\"): no CUDA device (",
                            cuda::unavailable_reason(), "); use \"mpi\" on this host"));
    }
    // The process's device (Note [One device per process] in cuda/runtime.h): fixed and made
    // current here, so NCCL, the stream and every tensor share it.
    (void)cuda::runtime().stream();
    check_cuda(cudaStreamCreateWithFlags(&nccl_stream_, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags(NCCL stream)");
    check_cuda(cudaEventCreateWithFlags(&inputs_ready_, cudaEventDisableTiming), "cudaEventCreate");
    ncclUniqueId id;
    if (rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, this->comm()), "MPI_Bcast(ncclUniqueId)");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // Note [NCCL failures raise]
    enqueued(ncclCommInitRankConfig(&nccl_, size(), id, rank(), &config), "ncclCommInitRank");
  }
  ~NcclProcessGroup() override {
    if (nccl_ != nullptr && !aborted_) ncclCommDestroy(nccl_);  // ncclCommAbort freed it
    if (inputs_ready_ != nullptr) cudaEventDestroy(inputs_ready_);
    if (nccl_stream_ != nullptr) cudaStreamDestroy(nccl_stream_);
  }

  const char* backend_name() const override { return "nccl"; }
  bool accepts(Device device) const override { return device.is_cuda(); }

  std::unique_ptr<Work::Request> raw_all_reduce(Buffer buf, ReduceOp op, bool async) override {
    enqueued(ncclAllReduce(buf.data, buf.data, static_cast<size_t>(buf.numel), nccl_type(buf.dtype),
                           nccl_op(buf.dtype, op), nccl_, nccl_stream()),
             "ncclAllReduce");
    return finish(async, "ncclAllReduce");
  }
  std::unique_ptr<Work::Request> raw_broadcast(Buffer buf, int root, bool async) override {
    enqueued(ncclBroadcast(buf.data, buf.data, static_cast<size_t>(buf.numel), nccl_type(buf.dtype),
                           root, nccl_, nccl_stream()),
             "ncclBroadcast");
    return finish(async, "ncclBroadcast");
  }
  std::unique_ptr<Work::Request> raw_all_gather(Buffer send, Buffer recv, bool async) override {
    enqueued(ncclAllGather(send.data, recv.data, static_cast<size_t>(send.numel),
                           nccl_type(send.dtype), nccl_, nccl_stream()),
             "ncclAllGather");
    return finish(async, "ncclAllGather");
  }
  std::unique_ptr<Work::Request> raw_reduce_scatter(Buffer send, Buffer recv, ReduceOp op,
                                                    bool async) override {
    enqueued(
        ncclReduceScatter(send.data, recv.data, static_cast<size_t>(recv.numel),
                          nccl_type(send.dtype), nccl_op(send.dtype, op), nccl_, nccl_stream()),
        "ncclReduceScatter");
    return finish(async, "ncclReduceScatter");
  }

  // Polls `event` until it completed (Note [NCCL failures raise]).
  void wait_event(cudaEvent_t event, const char* what) {
    refuse_if_aborted(what);
    NcclPoll poll(nccl_, event, &aborted_);
    wait_or_abort(poll, timeout_seconds(), what, rank());
    consume(event);
  }
  // Whether `event` completed; DistributedError (after the abort) when the communicator failed.
  bool query_event(cudaEvent_t event, const char* what) {
    refuse_if_aborted(what);
    NcclPoll poll(nccl_, event, &aborted_);
    const std::string error = poll.async_error();
    if (error.empty()) {
      if (!poll.finished()) return false;
      consume(event);
      return true;
    }
    wait_or_abort(poll, timeout_seconds(), what, rank());  // raises at once
    return true;
  }

 protected:
  // A group whose communicator was aborted refuses every later collective before any rank
  // bumps a version.
  void exchange_metadata(const void* mine, void* all, size_t bytes,
                         const char* collective) override {
    refuse_if_aborted(collective);
    MpiProcessGroup::exchange_metadata(mine, all, bytes, collective);
  }

 private:
  // Note [NCCL on its own stream]
  // Collectives run on a stream of their own, so that DataParallel's all-reduce of one bucket
  // overlaps the backward kernels that produce the next buckets' gradients on the library's
  // stream (cuda/runtime.h). Order is kept by events, as in torch: before each collective the
  // compute stream records `inputs_ready_` and the NCCL stream waits on it (the kernels that
  // wrote the inputs run first); after it, the request's event is recorded on the NCCL stream,
  // and once wait()/test() saw it complete the compute stream waits on it too (consume), so
  // the kernels that read the result are queued after the collective even if a later change
  // stops waiting on the host. Memory: a Work holds its tensors and staging buffers until
  // wait() returned (process_group.cc), so the caching allocator (which knows one stream)
  // never hands a block the NCCL stream may still use to the compute stream.
  static cudaStream_t compute_stream() {
    return static_cast<cudaStream_t>(cuda::runtime().stream());
  }
  cudaStream_t nccl_stream() {
    check_cuda(cudaEventRecord(inputs_ready_, compute_stream()), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(nccl_stream_, inputs_ready_, 0), "cudaStreamWaitEvent");
    return nccl_stream_;
  }
  void consume(cudaEvent_t event) {
    check_cuda(cudaStreamWaitEvent(compute_stream(), event, 0), "cudaStreamWaitEvent");
  }

  // ncclCommAbort freed the communicator: nothing may hand `nccl_` to NCCL again, neither a
  // later collective nor the wait of another Work still pending when the first one failed (its
  // destructor waits). Every such call raises here instead.
  void refuse_if_aborted(const char* what) const {
    if (!aborted_) return;
    throw DistributedError(str(what,
                               ": this nccl process group stopped working after an earlier "
                               "collective failed or timed out (its communicator was "
                               "aborted); restart the job"));
  }

  // A non-blocking call's result: ncclInProgress is polled until it settles.
  void enqueued(ncclResult_t r, const char* call) {
    if (r == ncclInProgress) {
      NcclPoll poll(nccl_, nullptr, &aborted_);
      wait_or_abort(poll, timeout_seconds(), call, rank());
      return;
    }
    check_nccl(r, call);
  }

  std::unique_ptr<Work::Request> finish(bool async, const char* call) {
    auto request = std::make_unique<NcclRequest>(this, nccl_stream_, call);
    if (async) return request;
    request->wait();
    return nullptr;
  }

  ncclComm_t nccl_ = nullptr;
  bool aborted_ = false;
  cudaStream_t nccl_stream_ = nullptr;  // Note [NCCL on its own stream]
  cudaEvent_t inputs_ready_ = nullptr;
};

NcclRequest::NcclRequest(NcclProcessGroup* group, cudaStream_t stream, const char* call)
    : group_(group), call_(call) {
  check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord");
}

void NcclRequest::wait() { group_->wait_event(event_, call_); }

bool NcclRequest::test() { return group_->query_event(event_, call_); }

std::unique_ptr<ProcessGroup> make_nccl_process_group(MPI_Comm comm) {
  return std::make_unique<NcclProcessGroup>(comm);
}

// Note [The NCCL group registers itself] in nccl_process_group.h.
[[maybe_unused]] const bool registered = (nccl_group_factory() = &make_nccl_process_group, true);

}  // namespace

}  // namespace mutagrad::distributed
