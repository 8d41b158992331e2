#!/usr/bin/env bash
# Runs a test binary under Open MPI's own launcher on this machine (loopback):
#   mpirun_test.sh NP BINARY [ARGS...]
# Settings (docs/distributed.md): --oversubscribe (more ranks than cores), --allow-run-as-root
# (CI runs as root), the shared-memory and self transports only (btl self,vader) with
# single-copy off (CMA's process_vm_readv is refused inside sandboxes), and a hard limit: a
# rank that hangs is killed by `timeout`, so the test fails instead of blocking CI.
set -euo pipefail
np=$1
binary=$2
shift 2
export OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MUTAGRAD_DISTRIBUTED_TIMEOUT=${MUTAGRAD_DISTRIBUTED_TIMEOUT:-60}
exec timeout --kill-after=10 240 mpirun -np "$np" --oversubscribe --bind-to none \
  "$binary" "$@"
