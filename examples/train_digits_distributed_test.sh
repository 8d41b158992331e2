#!/usr/bin/env bash
# //examples:train_digits data-parallel over Open MPI (2 ranks on this machine, launched by
# mpirun through tests/distributed/mpirun_test.sh) against the single-process run: every
# epoch's loss and accuracies, and the final test accuracy, must be the same.
set -euo pipefail
single=$(examples/train_digits --epochs 4)
multi=$(tests/distributed/mpirun_test.sh 2 examples/train_digits --distributed --epochs 4)
echo "$multi"
fail() { echo "train_digits_distributed_test: $1" >&2; exit 1; }
grep -q 'data-parallel over 2 MPI ranks' <<<"$multi" || fail "the run was not data-parallel"
# The epoch lines without the throughput column.
strip() { grep -E '^epoch |^final test accuracy' | sed 's/ *[0-9]* examples\/s//'; }
diff <(strip <<<"$single") <(strip <<<"$multi") ||
  fail "the data-parallel run differs from the single-process run"
