#!/usr/bin/env bash
# Runs //examples:train_digits on a reduced budget and checks what it prints: a progress line
# per epoch, the accuracy threshold (the binary exits 1 below it), the caught stale-tensor
# error naming AdamW's step and the example's line, and the kSnapshot run succeeding.
set -euo pipefail
out=$(examples/train_digits --epochs 8 --min-accuracy 90)
echo "$out"
fail() { echo "train_digits_test: $1" >&2; exit 1; }
[ "$(grep -c '^epoch ' <<<"$out")" -eq 8 ] || fail "expected 8 progress lines"
grep -q 'examples/s' <<<"$out" || fail "no throughput in the progress lines"
grep -q '^final test accuracy' <<<"$out" || fail "no final accuracy"
grep -q 'caught: .*AdamW.step at .*train_digits.cc:[0-9]' <<<"$out" ||
  fail "the stale-tensor error does not name AdamW.step and the example's line"
grep -q 'backward succeeded' <<<"$out" || fail "kSnapshot did not recover"
