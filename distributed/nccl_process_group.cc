// NcclProcessGroup: see nccl_process_group.h. Compiled only in the device build.
#include "distributed/nccl_process_group.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <utility>

#include "cuda/runtime.h"

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

// An event recorded on the stream after the NCCL call: wait() blocks on it, test() polls.
class NcclRequest final : public Work::Request {
 public:
  explicit NcclRequest(cudaStream_t stream) {
    check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord");
  }
  ~NcclRequest() override { cudaEventDestroy(event_); }
  void wait() override { check_cuda(cudaEventSynchronize(event_), "cudaEventSynchronize"); }
  bool test() override {
    const cudaError_t e = cudaEventQuery(event_);
    if (e == cudaErrorNotReady) return false;
    check_cuda(e, "cudaEventQuery");
    return true;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

class NcclProcessGroup final : public MpiProcessGroup {
 public:
  explicit NcclProcessGroup(MPI_Comm comm) : MpiProcessGroup(comm) {
    int devices = 0;
    check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    if (devices == 0) {
      throw DeviceError("init_process_group(\"nccl\"): no CUDA device; use \"mpi\" on this host");
    }
    check_cuda(cudaSetDevice(rank() % devices), "cudaSetDevice");
    ncclUniqueId id;
    if (rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, this->comm()), "MPI_Bcast(ncclUniqueId)");
    check_nccl(ncclCommInitRank(&nccl_, size(), id, rank()), "ncclCommInitRank");
  }
  ~NcclProcessGroup() override {
    if (nccl_ != nullptr) ncclCommDestroy(nccl_);
  }

  const char* backend_name() const override { return "nccl"; }
  bool accepts(Device device) const override { return device.is_cuda(); }

  std::unique_ptr<Work::Request> raw_all_reduce(Buffer buf, ReduceOp op, bool async) override {
    check_nccl(ncclAllReduce(buf.data, buf.data, static_cast<size_t>(buf.numel),
                             nccl_type(buf.dtype), nccl_op(buf.dtype, op), nccl_, stream()),
               "ncclAllReduce");
    return finish(async);
  }
  std::unique_ptr<Work::Request> raw_broadcast(Buffer buf, int root, bool async) override {
    check_nccl(ncclBroadcast(buf.data, buf.data, static_cast<size_t>(buf.numel),
                             nccl_type(buf.dtype), root, nccl_, stream()),
               "ncclBroadcast");
    return finish(async);
  }
  std::unique_ptr<Work::Request> raw_all_gather(Buffer send, Buffer recv, bool async) override {
    check_nccl(ncclAllGather(send.data, recv.data, static_cast<size_t>(send.numel),
                             nccl_type(send.dtype), nccl_, stream()),
               "ncclAllGather");
    return finish(async);
  }
  std::unique_ptr<Work::Request> raw_reduce_scatter(Buffer send, Buffer recv, ReduceOp op,
                                                    bool async) override {
    check_nccl(ncclReduceScatter(send.data, recv.data, static_cast<size_t>(recv.numel),
                                 nccl_type(send.dtype), nccl_op(send.dtype, op), nccl_, stream()),
               "ncclReduceScatter");
    return finish(async);
  }

 private:
  // The library's stream (cuda/runtime.h): the kernels that wrote the tensor ran on it.
  static cudaStream_t stream() { return static_cast<cudaStream_t>(cuda::runtime().stream()); }
  std::unique_ptr<Work::Request> finish(bool async) {
    if (async) return std::make_unique<NcclRequest>(stream());
    check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    return nullptr;
  }

  ncclComm_t nccl_ = nullptr;
};

}  // namespace

std::unique_ptr<ProcessGroup> make_nccl_process_group(MPI_Comm comm) {
  return std::make_unique<NcclProcessGroup>(comm);
}

}  // namespace mutagrad::distributed
