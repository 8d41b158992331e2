// NcclProcessGroup: the "nccl" transport, CUDA tensors, in the device build (--config=cuda).
// Bootstraps over MPI: rank 0's ncclUniqueId is broadcast with MPI_Bcast, then every rank joins
// with ncclCommInitRankConfig (non-blocking, Note [NCCL failures raise] in watchdog.h) on the
// process's device (Note [One device per process] in cuda/runtime.h). The agreement exchange of
// Note [Every rank raises] stays on MPI (host metadata); the payload goes through NCCL on a
// stream of its own, ordered by events after the kernels that produced the tensor and before
// those that read the result (Note [NCCL on its own stream] in nccl_process_group.cc).
//
//   auto& pg = distributed::init_process_group("nccl");   // under mpirun, one rank per GPU
//   Tensor g = mutagrad::ones({1024}).cuda();
//   pg.all_reduce_(g);                                    // ncclAllReduce, NCCL's stream
#pragma once

#include <memory>

#include "distributed/mpi_process_group.h"

namespace mutagrad::distributed {

// Note [The NCCL group registers itself]
// Only the device build links nccl_process_group.cc (//distributed:nccl), so the rest of the
// library compiles the same in every build and does not name it: the file sets this factory
// from a static initializer, and init_process_group("nccl") calls it, or raises DeviceError
// naming the device build when it is null.
using NcclGroupFactory = std::unique_ptr<ProcessGroup> (*)(MPI_Comm comm);
NcclGroupFactory& nccl_group_factory();

}  // namespace mutagrad::distributed
