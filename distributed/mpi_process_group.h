// MpiProcessGroup: the "mpi" transport (Open MPI), CPU tensors. Also the bootstrap and the
// metadata exchange of the "nccl" group, which derives from it.
//
//   MpiProcessGroup pg(MPI_COMM_WORLD);   // what init_process_group("mpi") makes
//   pg.all_reduce_(t);                    // MPI_Allreduce(MPI_IN_PLACE, ...) on t's buffer
#pragma once

#include <mpi.h>

#include <memory>

#include "distributed/process_group.h"

namespace mutagrad::distributed {

class MpiProcessGroup : public ProcessGroup {
 public:
  // Duplicates `comm` (the group's traffic stays apart from the program's own MPI calls).
  explicit MpiProcessGroup(MPI_Comm comm);
  ~MpiProcessGroup() override;

  const char* backend_name() const override { return "mpi"; }
  bool accepts(Device device) const override { return device.is_cpu(); }
  std::unique_ptr<Work::Request> raw_all_reduce(Buffer buf, ReduceOp op, bool async) override;
  std::unique_ptr<Work::Request> raw_broadcast(Buffer buf, int root, bool async) override;
  std::unique_ptr<Work::Request> raw_all_gather(Buffer send, Buffer recv, bool async) override;
  std::unique_ptr<Work::Request> raw_reduce_scatter(Buffer send, Buffer recv, ReduceOp op,
                                                    bool async) override;

  MPI_Comm comm() const { return comm_; }

 protected:
  void exchange_metadata(const void* mine, void* all, size_t bytes,
                         const char* collective) override;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool broken_ = false;  // a metadata exchange timed out: the communicator is unusable
};

// Raises DistributedError naming `call` and MPI's error string when `code` is not MPI_SUCCESS.
void check_mpi(int code, const char* call);

}  // namespace mutagrad::distributed
