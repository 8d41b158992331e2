// ProcessGroup: collectives over MPI (and NCCL in the device build) as tracked in-place writes.
//
//   // mpirun -np 2 ./prog
//   distributed::ProcessGroup& pg = distributed::init_process_group("mpi");
//   Tensor g = mutagrad::ones({3}) * (pg.rank() + 1);
//   pg.all_reduce_(g);                        // g == [3, 3, 3] on both ranks; g.version() == 1
//   auto work = pg.all_reduce_async_(g, distributed::ReduceOp::kAvg);
//   work->wait();                             // g.sum() before wait() raises PendingWriteError
//
// Every collective is an in-place write through the mutation engine (see Note [Collectives are
// in-place writes]) and checks, before any byte moves, that every rank called the same
// collective with the same shape and dtype (Note [Every rank raises]).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mutagrad.h"

namespace mutagrad::distributed {

// torch.distributed.ReduceOp's SUM, AVG, PRODUCT, MIN, MAX.
enum class ReduceOp : uint8_t { kSum, kAvg, kProduct, kMin, kMax };
const char* reduce_op_name(ReduceOp op);

// A collective that cannot run: the ranks disagree (different collectives, shapes, dtypes or
// roots), another rank refused its arguments, the transport failed, or a rank stopped
// answering within the group's timeout. Python sees it as RuntimeError.
class DistributedError : public Error {
  using Error::Error;
};

// A started collective that has not finished. Until wait() returns, the memory it writes refuses
// reads and writes, and all_gather's input refuses writes, through every alias (PendingWriteError,
// Note [Pending collective] in docs/notes/version-counter.md). Destroying an unfinished Work
// waits for it.
class Work {
 public:
  // Something the transport runs: wait() blocks until done, test() polls.
  class Request {
   public:
    virtual ~Request() = default;
    virtual void wait() = 0;
    virtual bool test() = 0;
  };

  Work() = default;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  ~Work();

  // Blocks until the collective finished and its results are in the caller's tensors.
  void wait();
  // Whether wait() would return at once (polls the transport; finishes the Work if it can).
  bool is_completed();

 private:
  friend class ProcessGroup;
  void finish();

  std::mutex* group_mutex_ = nullptr;  // the group's: serializes calls into the transport
  std::unique_ptr<Request> request_;
  std::vector<PendingMark> pending_;          // on the memory it writes and reads
  std::vector<std::function<void()>> after_;  // copy-backs into non-contiguous tensors, AVG
  bool done_ = false;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "mpi" or "nccl".
  virtual const char* backend_name() const = 0;
  // How long a rank waits for the others to enter the same collective before it raises
  // DistributedError (Note [Every rank raises]). Default 300 s, or MUTAGRAD_DISTRIBUTED_TIMEOUT
  // (seconds) in the environment.
  double timeout_seconds() const { return timeout_seconds_; }
  void set_timeout_seconds(double seconds);

  void barrier(CallSite site = CallSite::current());

  // Every rank's `tensor` becomes op(all ranks' tensors), element-wise. AVG needs a floating
  // dtype. A bool tensor reduces with logical or (SUM, MAX) / and (PRODUCT, MIN).
  void all_reduce_(const Tensor& tensor, ReduceOp op = ReduceOp::kSum,
                   CallSite site = CallSite::current());
  // Every rank's `tensor` becomes rank `root`'s (a write on every rank, the root's included).
  void broadcast_(const Tensor& tensor, int root, CallSite site = CallSite::current());
  // out[r] = rank r's `tensor`, for r in [0, size()): `out` holds size() tensors of `tensor`'s
  // shape and dtype, each written once.
  void all_gather(const std::vector<Tensor>& out, const Tensor& tensor,
                  CallSite site = CallSite::current());
  // `output` = op over ranks of inputs[rank()]: `inputs` holds size() tensors of output's shape.
  void reduce_scatter_(const Tensor& output, const std::vector<Tensor>& inputs,
                       ReduceOp op = ReduceOp::kSum, CallSite site = CallSite::current());

  // The same, started and not waited for (torch's async_op=True).
  std::shared_ptr<Work> all_reduce_async_(const Tensor& tensor, ReduceOp op = ReduceOp::kSum,
                                          CallSite site = CallSite::current());
  std::shared_ptr<Work> broadcast_async_(const Tensor& tensor, int root,
                                         CallSite site = CallSite::current());
  std::shared_ptr<Work> all_gather_async(const std::vector<Tensor>& out, const Tensor& tensor,
                                         CallSite site = CallSite::current());
  std::shared_ptr<Work> reduce_scatter_async_(const Tensor& output,
                                              const std::vector<Tensor>& inputs,
                                              ReduceOp op = ReduceOp::kSum,
                                              CallSite site = CallSite::current());

  // Transport-level operations on contiguous buffers of `numel` elements of `dtype`, on the
  // group's device, for the layer above; they assume validated, agreed arguments and no other
  // collective in flight. `async` false: done when they return (the Request may be null).
  struct Buffer {
    void* data;
    int64_t numel;
    ScalarType dtype;
  };
  virtual std::unique_ptr<Work::Request> raw_all_reduce(Buffer buf, ReduceOp op, bool async) = 0;
  virtual std::unique_ptr<Work::Request> raw_broadcast(Buffer buf, int root, bool async) = 0;
  // recv holds size() * send.numel elements.
  virtual std::unique_ptr<Work::Request> raw_all_gather(Buffer send, Buffer recv, bool async) = 0;
  // send holds size() * recv.numel elements.
  virtual std::unique_ptr<Work::Request> raw_reduce_scatter(Buffer send, Buffer recv, ReduceOp op,
                                                            bool async) = 0;
  // Whether tensors of this device are what the transport moves (CPU for MPI, CUDA for NCCL).
  virtual bool accepts(Device device) const = 0;

 protected:
  ProcessGroup(int rank, int size);
  void set_rank_and_size(int rank, int size) {
    rank_ = rank;
    size_ = size;
  }
  // The metadata exchange of Note [Every rank raises]: every rank's `bytes` bytes at `mine`
  // gathered into `all` (size() * bytes), over MPI for every backend. Raises DistributedError
  // after timeout_seconds().
  virtual void exchange_metadata(const void* mine, void* all, size_t bytes,
                                 const char* collective) = 0;

 private:
  enum class Kind : int64_t;
  struct Call;
  std::shared_ptr<Work> run(Call& call, bool async);

  int rank_;
  int size_;
  double timeout_seconds_;
  std::mutex mutex_;  // one collective at a time (MPI_THREAD_SERIALIZED)
};

// Note [MPI environment]
// init_process_group("mpi") calls MPI_Init_thread (unless the program already did) and reads
// rank and size from MPI_COMM_WORLD, i.e. from what mpirun put in the environment; run without
// mpirun it is a group of one. MPI_Finalize runs at exit when we initialized MPI.
// "nccl" (the device build only) makes a NCCL communicator over MPI_COMM_WORLD, one GPU per
// rank: the process's device (Note [One device per process] in cuda/runtime.h). ValueError for
// any other name.
ProcessGroup& init_process_group(const std::string& backend = "mpi");
bool is_initialized();
// The group of init_process_group; DistributedError when there is none.
ProcessGroup& default_group();
// Forgets the default group (MPI itself stays up until exit, as MPI cannot be restarted).
void destroy_process_group();

}  // namespace mutagrad::distributed
