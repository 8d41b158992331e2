// mutagrad::distributed: process groups over MPI (NCCL in the device build), collectives as
// tracked in-place writes, and data-parallel training. The one header to include.
//
//   #include "distributed/distributed.h"
//   auto& pg = mutagrad::distributed::init_process_group("mpi");   // under mpirun
//   pg.all_reduce_(t, mutagrad::distributed::ReduceOp::kAvg);
//   mutagrad::distributed::DataParallel ddp(params);
#pragma once

#include "distributed/data_parallel.h"
#include "distributed/process_group.h"
