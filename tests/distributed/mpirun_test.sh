#!/usr/bin/env bash
# Runs a test binary under Open MPI's own launcher on this machine (loopback):
#   mpirun_test.sh NP BINARY [ARGS...]
# Settings (docs/distributed.md): --oversubscribe (more ranks than cores), --allow-run-as-root
# (CI runs as root), the shared-memory and self transports only (btl self,vader) with
# single-copy off (CMA's process_vm_readv is refused inside sandboxes), and a hard limit: a
# rank that hangs is killed by `timeout`, so the test fails instead of blocking CI. Each job gets
# its own short temporary directory for Open MPI's session files and shared-memory segments:
# jobs run in parallel by bazel must not meet there (and unix socket paths must stay short).
set -euo pipefail
np=$1
binary=$2
shift 2
# gtest's per-test files are the job's, not each rank's: no rank writes them.
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE GTEST_OUTPUT
tmp=$(mktemp -d /tmp/mutagrad-mpi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp
export OMPI_MCA_btl_vader_backing_directory=$tmp
export OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# --config=asan: no leak check in these processes. Open MPI leaves ~117 KB in ~3,300 blocks at
# MPI_Finalize, much of it allocated by components it has dlclose()d by then: LSan can neither
# symbolize nor suppress those stacks. ASan's memory checks and UBSan stay on; the library's
# own leaks are checked by every other test.
export ASAN_OPTIONS="${ASAN_OPTIONS:+${ASAN_OPTIONS}:}detect_leaks=0"
export MUTAGRAD_DISTRIBUTED_TIMEOUT=${MUTAGRAD_DISTRIBUTED_TIMEOUT:-30}
timeout --kill-after=5 50 mpirun -np "$np" --oversubscribe --bind-to none \
  "$binary" "$@"
