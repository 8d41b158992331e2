#!/usr/bin/env bash
# //examples:train_digits data-parallel over Open MPI (2 ranks on this machine, launched by
# mpirun through tests/distributed/mpirun_test.sh). Each rank's batch norm sees only its rows
# (torch's DDP without SyncBatchNorm), so the numbers are not the single process's; what must
# hold: every epoch runs, the gradient averaging keeps the ranks' parameters and statistics the
# same bits (the binary checks it with two all-reduces and exits 1 otherwise), rank 0 saves the
# checkpoints, and the model learns as well as in one process (>= 90 % after 4 epochs).
set -euo pipefail
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
multi=$(tests/distributed/mpirun_test.sh 2 examples/train_digits --distributed --epochs 4 \
  --min-accuracy 90 --checkpoint "$tmp/ddp.pt")
echo "$multi"
fail() { echo "train_digits_distributed_test: $1" >&2; exit 1; }
grep -q 'data-parallel over 2 MPI ranks' <<<"$multi" || fail "the run was not data-parallel"
[ "$(grep -c '^epoch ' <<<"$multi")" -eq 4 ] || fail "expected 4 progress lines (rank 0 only)"
grep -q '^ranks agree' <<<"$multi" || fail "the ranks' parameters differ"
[ -s "$tmp/ddp.pt" ] || fail "rank 0 saved no checkpoint"
grep -q 'caught: .*AdamW.step at .*train_digits.cc:[0-9]' <<<"$multi" ||
  fail "the stale-tensor error does not name AdamW.step and the example's line"
