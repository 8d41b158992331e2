// DataParallel: torch's DistributedDataParallel for a list of parameters. Every rank holds a
// replica; gradients are averaged over the ranks while backward runs, so N processes trained on
// disjoint shards take the same steps as one process trained on the whole batch.
//
//   distributed::ProcessGroup& pg = distributed::init_process_group("mpi");
//   distributed::DataParallel ddp(model.parameters());   // parameters := rank 0's
//   for (...) {
//     opt.zero_grad();
//     cross_entropy(model.forward(my_shard_x), my_shard_y).backward();  // grads averaged here
//     opt.step();                                          // same step on every rank
//   }
//
// Note [DataParallel buckets]
// At construction every parameter is broadcast from rank 0 (broadcast_, one tracked write per
// parameter, under NoGradGuard). The parameters are then split, in reverse order (the order in
// which backward usually produces their gradients), into buckets of one dtype of at most
// bucket_cap_bytes. A post-hook on each parameter's AccumulateGrad node marks it ready; when a
// bucket's parameters are all ready its gradients are copied into the bucket's flat buffer and
// an all_reduce_async_(AVG) of the buffer starts, while backward goes on with the other
// layers (with "nccl", on NCCL's own stream, so the transfer overlaps the backward kernels:
// Note [NCCL on its own stream] in distributed/nccl_process_group.cc). Buckets start in index order
// on every rank (a ready bucket waits for the earlier ones), as torch's Reducer, so that the ranks'
// collectives match. When the last bucket has started, the hook waits for all of them and writes
// the averages back into each .grad (one tracked write per gradient, op "DataParallel.all_reduce_",
// at the line that constructed the DataParallel). So when backward() returns, every rank holds the
// same averaged gradients. Every parameter must receive a gradient in every backward (torch's
// find_unused_parameters=False); one that does not leaves its bucket unreduced, and the next
// backward raises naming it.
// Exactness: with two ranks, (a + b) / 2 is computed the same on both ranks, so the replicas
// stay bitwise identical; it differs from one process's full-batch mean only in rounding
// (float64: ~1e-16 relative per step), unless the values are exact (tests/distributed).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "distributed/process_group.h"

namespace mutagrad::distributed {

struct DataParallelOptions {
  // torch's default bucket_cap_mb=25.
  int64_t bucket_cap_bytes = 25 * 1024 * 1024;
  // Broadcast the parameters from rank 0 at construction (torch always does).
  bool broadcast_parameters = true;
};

class DataParallel {
 public:
  explicit DataParallel(std::vector<Tensor> parameters, ProcessGroup& group = default_group(),
                        DataParallelOptions options = {}, CallSite site = CallSite::current());
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  const std::vector<Tensor>& parameters() const;
  ProcessGroup& process_group() const;
  // The parameter indices of each bucket, in launch order.
  std::vector<std::vector<size_t>> buckets() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace mutagrad::distributed
