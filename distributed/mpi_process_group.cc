// MpiProcessGroup and init_process_group. See mpi_process_group.h and process_group.h.
#include "distributed/mpi_process_group.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include "distributed/nccl_process_group.h"
#include "tensor/half.h"

namespace mutagrad::distributed {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw DistributedError(str(call, " failed: ", std::string(text, static_cast<size_t>(len)),
                             " (MPI error ", code,
                             "); check that every rank is alive and that mpirun's transport "
                             "settings work on this machine (docs/distributed.md)"));
}

namespace {

// MPI counts are ints: larger buffers go in pieces of this many elements.
constexpr int64_t kMaxCount = int64_t{1} << 30;

// Note [Reducing float16 and bfloat16 over MPI]
// MPI has no 16-bit float types. They travel as MPI_UINT16_T with user-defined commutative ops
// that widen each pair to float, combine, and round back once per combine: with two ranks this
// is the correctly rounded a + b (the result torch's NCCL all_reduce gives); with more ranks
// the rounding happens after each partial combine, in the order MPI picks.
template <bool kBF16>
float widen(uint16_t bits) {
  return kBF16 ? half_detail::bfloat16_bits_to_float(bits) : half_detail::half_bits_to_float(bits);
}
template <bool kBF16>
uint16_t narrow_bits(float value) {
  return kBF16 ? half_detail::float_to_bfloat16_bits(value)
               : half_detail::float_to_half_bits(value);
}

template <bool kBF16, ReduceOp kOp>
void half_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = widen<kBF16>(a[i]), y = widen<kBF16>(b[i]);
    float r = 0;
    switch (kOp) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        r = x + y;
        break;
      case ReduceOp::kProduct:
        r = x * y;
        break;
      case ReduceOp::kMin:
        r = (x < y || x != x) ? x : y;  // NaN propagates, as torch.minimum
        break;
      case ReduceOp::kMax:
        r = (x > y || x != x) ? x : y;
        break;
    }
    b[i] = narrow_bits<kBF16>(r);
  }
}

template <bool kBF16>
MPI_Op half_op(ReduceOp op) {
  // Created on first use (after MPI_Init), under the group's lock; freed with MPI at exit.
  static MPI_Op ops[5] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  MPI_Op& slot = ops[static_cast<int>(op)];
  if (slot == MPI_OP_NULL) {
    MPI_User_function* fn = nullptr;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        fn = half_reduce<kBF16, ReduceOp::kSum>;
        break;
      case ReduceOp::kProduct:
        fn = half_reduce<kBF16, ReduceOp::kProduct>;
        break;
      case ReduceOp::kMin:
        fn = half_reduce<kBF16, ReduceOp::kMin>;
        break;
      case ReduceOp::kMax:
        fn = half_reduce<kBF16, ReduceOp::kMax>;
        break;
    }
    check_mpi(MPI_Op_create(fn, /*commute=*/1, &slot), "MPI_Op_create");
  }
  return slot;
}

MPI_Datatype mpi_type(ScalarType dtype) {
  switch (dtype) {
    case kBool:
      return MPI_C_BOOL;
    case ScalarType::UInt8:
      return MPI_UINT8_T;
    case ScalarType::Int8:
      return MPI_INT8_T;
    case ScalarType::Int16:
      return MPI_INT16_T;
    case ScalarType::Int32:
      return MPI_INT32_T;
    case ScalarType::Int64:
      return MPI_INT64_T;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      return MPI_UINT16_T;  // Note [Reducing float16 and bfloat16 over MPI]
    case ScalarType::Float32:
      return MPI_FLOAT;
    case ScalarType::Float64:
      return MPI_DOUBLE;
  }
  throw DTypeError(str("mpi: no MPI type for ", dtype_name(dtype)));
}

MPI_Op mpi_op(ScalarType dtype, ReduceOp op) {
  if (dtype == ScalarType::Float16) return half_op<false>(op);
  if (dtype == ScalarType::BFloat16) return half_op<true>(op);
  if (dtype == kBool) {  // MPI's logical ops: sum/max = or, product/min = and
    return (op == ReduceOp::kSum || op == ReduceOp::kMax) ? MPI_LOR : MPI_LAND;
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return MPI_SUM;
    case ReduceOp::kProduct:
      return MPI_PROD;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kMax:
      return MPI_MAX;
  }
  return MPI_SUM;
}

// AVG = SUM, then every element divided by the group's size (rounded once).
void divide(const ProcessGroup::Buffer& buf, int size) {
  const auto n = static_cast<size_t>(buf.numel);
  switch (buf.dtype) {
    case ScalarType::Float32: {
      auto* p = static_cast<float*>(buf.data);
      for (size_t i = 0; i < n; ++i) p[i] /= static_cast<float>(size);
      break;
    }
    case ScalarType::Float64: {
      auto* p = static_cast<double*>(buf.data);
      for (size_t i = 0; i < n; ++i) p[i] /= size;
      break;
    }
    case ScalarType::Float16:
    case ScalarType::BFloat16: {
      auto* p = static_cast<uint16_t*>(buf.data);
      const bool bf = buf.dtype == ScalarType::BFloat16;
      for (size_t i = 0; i < n; ++i) {
        const float v = (bf ? widen<true>(p[i]) : widen<false>(p[i])) / static_cast<float>(size);
        p[i] = bf ? narrow_bits<true>(v) : narrow_bits<false>(v);
      }
      break;
    }
    default:
      MG_INTERNAL_ASSERT(false, "AVG of ", dtype_name(buf.dtype), " passed validation");
  }
}

class MpiRequest final : public Work::Request {
 public:
  MpiRequest(std::vector<MPI_Request> requests, std::function<void()> after, const char* call)
      : requests_(std::move(requests)), after_(std::move(after)), call_(call) {}
  void wait() override {
    if (done_) return;
    check_mpi(
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
        call_);
    complete();
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    check_mpi(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag,
                          MPI_STATUSES_IGNORE),
              call_);
    if (flag) complete();
    return done_;
  }

 private:
  void complete() {
    done_ = true;
    if (after_) after_();
  }
  std::vector<MPI_Request> requests_;
  std::function<void()> after_;
  const char* call_;
  bool done_ = false;
};

int count_of(int64_t numel, const char* call) {
  if (numel > INT_MAX) {
    throw ValueError(str(call, ": ", numel,
                         " elements per rank is more than MPI's int counts "
                         "allow (",
                         INT_MAX, "); split the tensor"));
  }
  return static_cast<int>(numel);
}

}  // namespace

MpiProcessGroup::MpiProcessGroup(MPI_Comm comm) : ProcessGroup(0, 1) {
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size), "MPI_Comm_size");
  set_rank_and_size(rank, size);
}

MpiProcessGroup::~MpiProcessGroup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL && !broken_) MPI_Comm_free(&comm_);
}

void MpiProcessGroup::exchange_metadata(const void* mine, void* all, size_t bytes,
                                        const char* collective) {
  if (broken_) {
    throw DistributedError(str(collective,
                               ": this process group stopped working after a rank "
                               "timed out in an earlier collective; restart the job"));
  }
  MPI_Request request;
  check_mpi(MPI_Iallgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes),
                           MPI_BYTE, comm_, &request),
            "MPI_Iallgather");
  const auto start = std::chrono::steady_clock::now();
  const auto limit = std::chrono::duration<double>(timeout_seconds());
  for (int spins = 0;; ++spins) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (spins > 64) std::this_thread::yield();  // the other ranks may share our cores
    if ((spins & 1023) == 0 && std::chrono::steady_clock::now() - start > limit) {
      broken_ = true;
      throw DistributedError(
          str(collective, " (rank ", rank(), "): waited ", timeout_seconds(),
              " s for the other ranks to enter the same collective. A rank skipped it, called "
              "a different number of collectives, or died. The group is unusable now (MPI "
              "cannot cancel a collective); raise the timeout with set_timeout_seconds() or "
              "MUTAGRAD_DISTRIBUTED_TIMEOUT if the ranks are merely slow"));
    }
  }
}

std::unique_ptr<Work::Request> MpiProcessGroup::raw_all_reduce(Buffer buf, ReduceOp op,
                                                               bool async) {
  const MPI_Datatype type = mpi_type(buf.dtype);
  const MPI_Op mop = mpi_op(buf.dtype, op);
  const int64_t esize = element_size(buf.dtype);
  std::vector<MPI_Request> requests;
  for (int64_t start = 0; start < buf.numel; start += kMaxCount) {
    void* p = static_cast<char*>(buf.data) + start * esize;
    const int n = static_cast<int>(std::min(kMaxCount, buf.numel - start));
    if (async) {
      requests.emplace_back();
      check_mpi(MPI_Iallreduce(MPI_IN_PLACE, p, n, type, mop, comm_, &requests.back()),
                "MPI_Iallreduce");
    } else {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, p, n, type, mop, comm_), "MPI_Allreduce");
    }
  }
  const int size = this->size();
  std::function<void()> after;
  if (op == ReduceOp::kAvg) after = [buf, size] { divide(buf, size); };
  if (!async) {
    if (after) after();
    return nullptr;
  }
  return std::make_unique<MpiRequest>(std::move(requests), std::move(after), "MPI_Iallreduce");
}

std::unique_ptr<Work::Request> MpiProcessGroup::raw_broadcast(Buffer buf, int root, bool async) {
  const MPI_Datatype type = mpi_type(buf.dtype);
  const int64_t esize = element_size(buf.dtype);
  std::vector<MPI_Request> requests;
  for (int64_t start = 0; start < buf.numel; start += kMaxCount) {
    void* p = static_cast<char*>(buf.data) + start * esize;
    const int n = static_cast<int>(std::min(kMaxCount, buf.numel - start));
    if (async) {
      requests.emplace_back();
      check_mpi(MPI_Ibcast(p, n, type, root, comm_, &requests.back()), "MPI_Ibcast");
    } else {
      check_mpi(MPI_Bcast(p, n, type, root, comm_), "MPI_Bcast");
    }
  }
  if (!async) return nullptr;
  return std::make_unique<MpiRequest>(std::move(requests), nullptr, "MPI_Ibcast");
}

std::unique_ptr<Work::Request> MpiProcessGroup::raw_all_gather(Buffer send, Buffer recv,
                                                               bool async) {
  const MPI_Datatype type = mpi_type(send.dtype);
  const int n = count_of(send.numel, "all_gather");
  if (!async) {
    check_mpi(MPI_Allgather(send.data, n, type, recv.data, n, type, comm_), "MPI_Allgather");
    return nullptr;
  }
  std::vector<MPI_Request> requests(1);
  check_mpi(MPI_Iallgather(send.data, n, type, recv.data, n, type, comm_, &requests[0]),
            "MPI_Iallgather");
  return std::make_unique<MpiRequest>(std::move(requests), nullptr, "MPI_Iallgather");
}

std::unique_ptr<Work::Request> MpiProcessGroup::raw_reduce_scatter(Buffer send, Buffer recv,
                                                                   ReduceOp op, bool async) {
  const MPI_Datatype type = mpi_type(send.dtype);
  const MPI_Op mop = mpi_op(send.dtype, op);
  const int n = count_of(recv.numel, "reduce_scatter_");
  const int size = this->size();
  std::function<void()> after;
  if (op == ReduceOp::kAvg) after = [recv, size] { divide(recv, size); };
  if (!async) {
    check_mpi(MPI_Reduce_scatter_block(send.data, recv.data, n, type, mop, comm_),
              "MPI_Reduce_scatter_block");
    if (after) after();
    return nullptr;
  }
  std::vector<MPI_Request> requests(1);
  check_mpi(MPI_Ireduce_scatter_block(send.data, recv.data, n, type, mop, comm_, &requests[0]),
            "MPI_Ireduce_scatter_block");
  return std::make_unique<MpiRequest>(std::move(requests), std::move(after),
                                      "MPI_Ireduce_scatter_block");
}

// ---- init_process_group ------------------------------------------------------------------------

namespace {

std::unique_ptr<ProcessGroup>& default_slot() {
  static auto* slot = new std::unique_ptr<ProcessGroup>();
  return *slot;
}

void finalize_at_exit() {
  default_slot().reset();  // frees the communicators while MPI is still up
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

ProcessGroup& init_process_group(const std::string& backend) {
  if (backend != "mpi" && backend != "nccl") {
    throw ValueError(str("init_process_group: unknown backend \"", backend,
                         "\"; expected \"mpi\" (CPU tensors) or \"nccl\" (CUDA tensors, device "
                         "build)"));
  }
  if (default_slot()) {
    throw DistributedError(str("init_process_group(\"", backend,
                               "\"): the default process group "
                               "is already initialized (",
                               default_slot()->backend_name(),
                               "); call destroy_process_group() first"));
  }
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
              "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  }
  if (backend == "nccl") {
    if (nccl_group_factory() == nullptr) {
      throw DeviceError(
          "init_process_group(\"nccl\"): this build has no NCCL; build with --config=cuda (the "
          "device build, docs/distributed.md) or use \"mpi\" for CPU tensors");
    }
    default_slot() = nccl_group_factory()(MPI_COMM_WORLD);
  } else {
    default_slot() = std::make_unique<MpiProcessGroup>(MPI_COMM_WORLD);
  }
  return *default_slot();
}

NcclGroupFactory& nccl_group_factory() {
  static NcclGroupFactory factory = nullptr;
  return factory;
}

bool is_initialized() { return default_slot() != nullptr; }

ProcessGroup& default_group() {
  if (!default_slot()) {
    throw DistributedError(
        "the default process group is not initialized; call "
        "distributed::init_process_group(\"mpi\") first (and launch with mpirun)");
  }
  return *default_slot();
}

void destroy_process_group() { default_slot().reset(); }

}  // namespace mutagrad::distributed
