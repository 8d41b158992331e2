// ProcessGroup's transport-independent half: validation, the agreement between ranks, the
// version bumps and the staging of non-contiguous tensors. See process_group.h.
#include "distributed/process_group.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <utility>

#include "autograd/history.h"

namespace mutagrad::distributed {

// Note [Collectives are in-place writes]
// A collective writes its output tensor(s) on every rank, so it runs the steps of every
// in-place op of the library (autograd/ops/inplace_ops.h), in order: check_inplace (a leaf that
// requires grad, or a view of one, is refused in grad mode), validation, one version bump per
// written tensor with the op's name ("all_reduce_", "broadcast_", "all_gather",
// "reduce_scatter_") and the caller's file:line, then the write. A graph that saved the tensor
// therefore fails in backward naming the collective's line. The collectives are not
// differentiable (no graph spans processes here): writing a tensor that has history in grad
// mode raises; call them under NoGradGuard or on .detach(), as DataParallel does.
// A non-contiguous tensor (a transposed view, a column) is copied into a contiguous buffer, the
// transport writes the buffer, and the buffer is copied back through the view: the write
// reaches the base, and the version moves once (the copies do not bump).
//
// Note [Every rank raises]
// A collective whose ranks disagree on its arguments would hang (one rank waits for bytes that
// never come) or mix data. Before any payload moves, every rank contributes a fixed-size record
// (the collective, reduce op, root, dtype, shape, and whether its own checks refused the call,
// with the message) to one all-gather, and every rank compares all records. On disagreement
// every rank raises DistributedError with every rank's arguments, and a rank whose own checks
// failed raises its own error; so a bad argument on one rank is an error on all ranks, not a
// hang. A rank that never enters the collective (it returned early, or crashed) is caught by a
// timeout: the record exchange is polled, and after timeout_seconds() the waiting ranks raise
// DistributedError and the group is unusable (MPI cannot cancel a collective). The exchange
// costs one small all-gather per collective (a few microseconds on one machine).

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "SUM";
    case ReduceOp::kAvg:
      return "AVG";
    case ReduceOp::kProduct:
      return "PRODUCT";
    case ReduceOp::kMin:
      return "MIN";
    case ReduceOp::kMax:
      return "MAX";
  }
  return "?";
}

// ---- Work --------------------------------------------------------------------------------------

Work::~Work() {
  try {
    wait();
  } catch (...) {  // a destructor must not throw; wait() explicitly to see the error
  }
}

void Work::finish() {
  pending_.clear();  // clears the marks
  done_ = true;
  for (auto& f : after_) f();
  after_.clear();
}

void Work::wait() {
  if (done_) return;
  {
    std::lock_guard<std::mutex> lock(*group_mutex_);
    if (request_) request_->wait();
  }
  finish();
}

bool Work::is_completed() {
  if (done_) return true;
  bool ready = true;
  {
    std::lock_guard<std::mutex> lock(*group_mutex_);
    if (request_) ready = request_->test();
  }
  if (ready) finish();
  return ready;
}

// ---- ProcessGroup ------------------------------------------------------------------------------

enum class ProcessGroup::Kind : int64_t {
  kBarrier = 1,
  kAllReduce,
  kBroadcast,
  kAllGather,
  kReduceScatter
};

struct ProcessGroup::Call {
  Kind kind;
  const char* name;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  CallSite site;
  Tensor tensor;             // all_reduce_/broadcast_: written; all_gather: input;
                             // reduce_scatter_: the output (written)
  std::vector<Tensor> list;  // all_gather: the outputs (written); reduce_scatter_: the inputs
};

namespace {

constexpr int kMaxDims = 8;  // dims beyond these are compared through shape_hash

// One rank's view of a collective call: what Note [Every rank raises] exchanges.
struct Record {
  int64_t kind;
  int64_t op;
  int64_t root;
  int64_t dtype;
  int64_t ndim;
  int64_t shape_hash;
  int64_t refused;  // 1: this rank's own checks raised; message says why
  int64_t file_line;
  int64_t sizes[kMaxDims];
  char message[256];
};

int64_t hash_shape(IntArrayRef sizes) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t s : sizes) h = (h ^ static_cast<uint64_t>(s)) * 1099511628211ull;
  return static_cast<int64_t>(h);
}

const char* kind_name(int64_t kind) {
  switch (kind) {
    case 1:
      return "barrier";
    case 2:
      return "all_reduce_";
    case 3:
      return "broadcast_";
    case 4:
      return "all_gather";
    case 5:
      return "reduce_scatter_";
  }
  return "an unknown collective";
}

std::string describe(const Record& r) {
  std::ostringstream os;
  os << kind_name(r.kind);
  if (r.kind == 1) return os.str();
  os << "(" << dtype_name(static_cast<ScalarType>(r.dtype)) << " [";
  for (int64_t d = 0; d < std::min<int64_t>(r.ndim, kMaxDims); ++d) {
    os << (d ? ", " : "") << r.sizes[d];
  }
  if (r.ndim > kMaxDims) os << ", ...";
  os << "]";
  if (r.kind == 2 || r.kind == 5) os << ", op=" << reduce_op_name(static_cast<ReduceOp>(r.op));
  if (r.kind == 3) os << ", root=" << r.root;
  os << ")";
  return os.str();
}

bool same_call(const Record& a, const Record& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == 1) return true;
  if (a.dtype != b.dtype || a.ndim != b.ndim || a.shape_hash != b.shape_hash) return false;
  if ((a.kind == 2 || a.kind == 5) && a.op != b.op) return false;
  if (a.kind == 3 && a.root != b.root) return false;
  return true;
}

std::string where(const char* name, CallSite site) {
  return str(name, " at ", site.file, ":", site.line);
}

void check_same_geometry(const Tensor& t, const Tensor& ref, const char* name, const char* what,
                         size_t index) {
  if (!t.defined()) throw ValueError(str(name, ": ", what, "[", index, "] is an undefined tensor"));
  if (!t.sizes().equals(ref.sizes()) || t.dtype() != ref.dtype() || t.device() != ref.device()) {
    throw ShapeError(str(name, ": ", what, "[", index, "] is ", dtype_name(t.dtype()), " ",
                         t.sizes(), " on ", t.device(), "; expected ", dtype_name(ref.dtype()), " ",
                         ref.sizes(), " on ", ref.device(),
                         " like the other tensor of the call (every entry has its shape)"));
  }
}

}  // namespace

ProcessGroup::ProcessGroup(int rank, int size) : rank_(rank), size_(size) {
  timeout_seconds_ = 300;
  if (const char* env = std::getenv("MUTAGRAD_DISTRIBUTED_TIMEOUT")) {
    const double t = std::atof(env);
    if (t > 0) timeout_seconds_ = t;
  }
}

ProcessGroup::~ProcessGroup() = default;

void ProcessGroup::set_timeout_seconds(double seconds) {
  if (!(seconds > 0)) {
    throw ValueError(str("set_timeout_seconds: the timeout must be positive, got ", seconds,
                         "; pass the seconds a rank may wait for the others"));
  }
  timeout_seconds_ = seconds;
}

std::shared_ptr<Work> ProcessGroup::run(Call& call, bool async) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool is_reduce = call.kind == Kind::kAllReduce || call.kind == Kind::kReduceScatter;
  std::vector<Tensor> written;
  if (call.kind == Kind::kAllReduce || call.kind == Kind::kBroadcast ||
      call.kind == Kind::kReduceScatter) {
    written.push_back(call.tensor);
  } else if (call.kind == Kind::kAllGather) {
    written = call.list;
  }

  // This rank's own checks; their failure is shared with the others before it is raised.
  Record mine{};
  mine.kind = static_cast<int64_t>(call.kind);
  mine.op = static_cast<int64_t>(call.op);
  mine.root = call.root;
  std::exception_ptr refusal;
  try {
    if (call.kind != Kind::kBarrier) {
      const Tensor& t = call.tensor;
      if (!t.defined()) throw ValueError(str(call.name, ": the tensor is undefined"));
      mine.dtype = static_cast<int64_t>(t.dtype());
      mine.ndim = t.dim();
      mine.shape_hash = hash_shape(t.sizes());
      for (int64_t d = 0; d < std::min<int64_t>(t.dim(), kMaxDims); ++d) mine.sizes[d] = t.size(d);
      if (!accepts(t.device())) {
        throw DeviceError(str(call.name, ": the ", backend_name(),
                              " process group moves tensors of ",
                              std::string(backend_name()) == "nccl" ? "CUDA" : "the CPU",
                              " devices, got a tensor on ", t.device(), "; move it with .to()",
                              std::string(backend_name()) == "nccl"
                                  ? " or use init_process_group(\"mpi\") for CPU tensors"
                                  : " (or .cpu()), or use init_process_group(\"nccl\") for CUDA "
                                    "tensors in the device build"));
      }
      if (call.kind == Kind::kBroadcast && (call.root < 0 || call.root >= size_)) {
        throw ValueError(str(call.name, ": root ", call.root, " is not a rank of this group of ",
                             size_, "; expected a root in [0, ", size_ - 1, "]"));
      }
      if (is_reduce && call.op == ReduceOp::kAvg && !t.is_floating_point()) {
        throw DTypeError(str(call.name, ": ReduceOp AVG needs a floating dtype, got ",
                             dtype_name(t.dtype()),
                             "; use SUM and divide, or convert the tensor with .to(kFloat32)"));
      }
      if (call.kind == Kind::kAllGather || call.kind == Kind::kReduceScatter) {
        const char* what = call.kind == Kind::kAllGather ? "out" : "inputs";
        if (static_cast<int>(call.list.size()) != size_) {
          throw ValueError(str(call.name, ": ", what, " holds ", call.list.size(),
                               " tensors; expected one per rank, ", size_, " (the group's size)"));
        }
        for (size_t i = 0; i < call.list.size(); ++i) {
          check_same_geometry(call.list[i], t, call.name, what, i);
        }
      }
      std::vector<Tensor> touched = written;
      touched.push_back(t);
      if (call.kind == Kind::kReduceScatter) {
        touched.insert(touched.end(), call.list.begin(), call.list.end());
      }
      // Note [Pending collective]: the written memory must be free of every unfinished op; the
      // memory read must not be written by one.
      for (const Tensor& w : written) {
        check_pending(*w.unsafe_impl(), PendingAccess::kWrite, call.name);
      }
      for (const Tensor& x : touched) {
        check_pending(*x.unsafe_impl(), PendingAccess::kRead, call.name);
      }
      for (const Tensor& w : written) {
        const bool requires_grad = autograd::compute_requires_grad(w);
        autograd::check_inplace(w, requires_grad);
        if (requires_grad) {
          throw autograd::AutogradError(
              str(call.name, ": the written tensor has autograd history (",
                  w.grad_fn() ? w.grad_fn()->name() : "requires grad",
                  ") and collectives are not differentiable; run the collective under "
                  "NoGradGuard, or on t.detach() (they share the data)"));
        }
        native::assert_no_internal_overlap(w, call.name);
      }
    }
  } catch (const std::exception& e) {
    refusal = std::current_exception();
    mine.refused = 1;
    std::strncpy(mine.message, e.what(), sizeof mine.message - 1);
  }

  // The agreement (Note [Every rank raises]).
  std::vector<Record> all(static_cast<size_t>(size_));
  exchange_metadata(&mine, all.data(), sizeof(Record), call.name);
  if (refusal) std::rethrow_exception(refusal);
  for (int r = 0; r < size_; ++r) {
    const Record& other = all[static_cast<size_t>(r)];
    if (other.refused) {
      throw DistributedError(str(where(call.name, call.site), " (rank ", rank_, "): rank ", r,
                                 " refused its arguments: ", other.message,
                                 ". Every rank raises so that none waits for it forever"));
    }
  }
  for (int r = 0; r < size_; ++r) {
    if (!same_call(all[static_cast<size_t>(r)], mine)) {
      std::ostringstream os;
      for (int q = 0; q < size_; ++q) {
        os << (q ? "; " : "") << "rank " << q << ": " << describe(all[static_cast<size_t>(q)]);
      }
      throw DistributedError(
          str(where(call.name, call.site), " (rank ", rank_,
              "): the ranks called different collectives or passed different arguments (", os.str(),
              "). Every rank must make the same collective calls in the same order, with tensors "
              "of the same shape and dtype (and the same op and root)"));
    }
  }
  if (call.kind == Kind::kBarrier) return nullptr;  // the exchange was the barrier

  // Staging: the transport sees contiguous buffers only.
  const Tensor& t = call.tensor;
  auto contiguous_or_copy = [](const Tensor& x) {
    return x.is_contiguous() ? x : native::contiguous(x);
  };
  auto buffer = [](const Tensor& x) {
    return Buffer{x.unsafe_impl()->data(), x.numel(), x.dtype()};
  };
  std::vector<std::function<void()>> after;
  Tensor stage;  // what the transport writes
  Tensor send;   // what it reads, for all_gather / reduce_scatter_
  if (call.kind == Kind::kAllReduce || call.kind == Kind::kBroadcast) {
    stage = contiguous_or_copy(t);
    if (!stage.is_same(t)) after.push_back([t, stage] { native::copy_(t, stage); });
  } else if (call.kind == Kind::kAllGather) {
    send = contiguous_or_copy(t);
    DimVector shape{static_cast<int64_t>(size_)};
    for (int64_t s : t.sizes()) shape.push_back(s);
    stage = mutagrad::empty(shape, TensorOptions().dtype(t.dtype()).device(t.device()));
    const std::vector<Tensor> outs = call.list;
    after.push_back([outs, stage] {
      for (size_t r = 0; r < outs.size(); ++r) {
        native::copy_(outs[r], native::select(stage, 0, static_cast<int64_t>(r)));
      }
    });
  } else {  // reduce_scatter_
    DimVector shape{static_cast<int64_t>(size_)};
    for (int64_t s : t.sizes()) shape.push_back(s);
    send = mutagrad::empty(shape, TensorOptions().dtype(t.dtype()).device(t.device()));
    for (size_t r = 0; r < call.list.size(); ++r) {
      native::copy_(native::select(send, 0, static_cast<int64_t>(r)), call.list[r]);
    }
    stage = contiguous_or_copy(t);
    if (!stage.is_same(t)) after.push_back([t, stage] { native::copy_(t, stage); });
  }
  const Buffer out_buf = buffer(stage);
  const Buffer in_buf = send.defined() ? buffer(send) : Buffer{nullptr, 0, t.dtype()};

  // One bump per written tensor, after every check and before the write.
  for (const Tensor& w : written) autograd::bump_version(w, call.name, call.site);

  auto work = std::make_shared<Work>();
  work->group_mutex_ = &mutex_;
  if (async) {
    const MutationSite site{call.name, call.site.file, call.site.line};
    for (const Tensor& w : written) {
      work->pending_.emplace_back(w.storage(), PendingAccess::kWrite, site);
    }
    // all_gather reads its input while it runs (unless it was staged: then the mark costs
    // nothing); reduce_scatter_'s inputs were copied into `send` above.
    if (call.kind == Kind::kAllGather) {
      work->pending_.emplace_back(t.storage(), PendingAccess::kRead, site);
    }
  }
  work->after_ = std::move(after);
  // Keep the staging buffers alive until the transport is done with them.
  work->after_.push_back([stage, send] {});
  try {
    switch (call.kind) {
      case Kind::kAllReduce:
        work->request_ = raw_all_reduce(out_buf, call.op, async);
        break;
      case Kind::kBroadcast:
        work->request_ = raw_broadcast(out_buf, call.root, async);
        break;
      case Kind::kAllGather:
        work->request_ = raw_all_gather(in_buf, out_buf, async);
        break;
      case Kind::kReduceScatter:
        work->request_ = raw_reduce_scatter(in_buf, out_buf, call.op, async);
        break;
      case Kind::kBarrier:
        break;
    }
  } catch (...) {
    work->pending_.clear();
    work->done_ = true;
    throw;
  }
  if (!async) {
    lock.unlock();
    if (work->request_) work->request_->wait();
    work->finish();
  }
  return work;
}

void ProcessGroup::barrier(CallSite site) {
  Call call{Kind::kBarrier, "barrier", ReduceOp::kSum, 0, site, Tensor(), {}};
  run(call, false);
}

std::shared_ptr<Work> ProcessGroup::all_reduce_async_(const Tensor& tensor, ReduceOp op,
                                                      CallSite site) {
  Call call{Kind::kAllReduce, "all_reduce_", op, 0, site, tensor, {}};
  return run(call, true);
}

std::shared_ptr<Work> ProcessGroup::broadcast_async_(const Tensor& tensor, int root,
                                                     CallSite site) {
  Call call{Kind::kBroadcast, "broadcast_", ReduceOp::kSum, root, site, tensor, {}};
  return run(call, true);
}

std::shared_ptr<Work> ProcessGroup::all_gather_async(const std::vector<Tensor>& out,
                                                     const Tensor& tensor, CallSite site) {
  Call call{Kind::kAllGather, "all_gather", ReduceOp::kSum, 0, site, tensor, out};
  return run(call, true);
}

std::shared_ptr<Work> ProcessGroup::reduce_scatter_async_(const Tensor& output,
                                                          const std::vector<Tensor>& inputs,
                                                          ReduceOp op, CallSite site) {
  Call call{Kind::kReduceScatter, "reduce_scatter_", op, 0, site, output, inputs};
  return run(call, true);
}

void ProcessGroup::all_reduce_(const Tensor& tensor, ReduceOp op, CallSite site) {
  Call call{Kind::kAllReduce, "all_reduce_", op, 0, site, tensor, {}};
  run(call, false);
}

void ProcessGroup::broadcast_(const Tensor& tensor, int root, CallSite site) {
  Call call{Kind::kBroadcast, "broadcast_", ReduceOp::kSum, root, site, tensor, {}};
  run(call, false);
}

void ProcessGroup::all_gather(const std::vector<Tensor>& out, const Tensor& tensor, CallSite site) {
  Call call{Kind::kAllGather, "all_gather", ReduceOp::kSum, 0, site, tensor, out};
  run(call, false);
}

void ProcessGroup::reduce_scatter_(const Tensor& output, const std::vector<Tensor>& inputs,
                                   ReduceOp op, CallSite site) {
  Call call{Kind::kReduceScatter, "reduce_scatter_", op, 0, site, output, inputs};
  run(call, false);
}

}  // namespace mutagrad::distributed
