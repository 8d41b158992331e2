#!/usr/bin/env bash
# Runs //examples:train_digits on a reduced budget and checks what it prints: a progress line
# per epoch, the accuracy threshold of 98 % (the binary exits 1 below it), the caught stale-tensor
# error naming AdamW's step and the example's line, and the kSnapshot run succeeding. Then the
# resume: a run stopped after epoch 3 and resumed from its checkpoint prints the uninterrupted
# run's epochs 4-6 and ends with its state, bit for bit (the digest of every parameter, running
# statistic and optimizer moment).
set -euo pipefail
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "train_digits_test: $1" >&2; exit 1; }
# The issue's bar, 98 %, at 6 epochs: 98.6-98.9 % (355-356 of 360) with each CPU capability
# (MUTAGRAD_CPU_CAPABILITY=avx512/avx2/baseline), a margin of two images.
out=$(examples/train_digits --epochs 6 --min-accuracy 98 --checkpoint "$tmp/full.pt")
echo "$out"
[ "$(grep -c '^epoch ' <<<"$out")" -eq 6 ] || fail "expected 6 progress lines"
grep -q 'examples/s' <<<"$out" || fail "no throughput in the progress lines"
grep -q '^final test accuracy' <<<"$out" || fail "no final accuracy"
grep -q 'Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))' <<<"$out" ||
  fail "the model is not printed"
grep -q 'caught: .*AdamW.step at .*train_digits.cc:[0-9]' <<<"$out" ||
  fail "the stale-tensor error does not name AdamW.step and the example's line"
grep -q 'backward succeeded' <<<"$out" || fail "kSnapshot did not recover"
[ -s "$tmp/full.pt" ] || fail "no checkpoint at $tmp/full.pt"

part=$(examples/train_digits --epochs 6 --stop-after 3 --checkpoint "$tmp/part.pt")
echo "$part"
[ "$(grep -c '^epoch ' <<<"$part")" -eq 3 ] || fail "the stopped run did not stop after 3 epochs"
grep -q "stopped after epoch 3; continue with --resume $tmp/part.pt" <<<"$part" ||
  fail "the stopped run does not say how to resume"
resumed=$(examples/train_digits --epochs 6 --resume "$tmp/part.pt" --checkpoint "$tmp/resumed.pt")
echo "$resumed"
grep -q 'resumed after epoch 3' <<<"$resumed" || fail "the run did not resume"
# The epoch lines without the throughput column, and the final lines.
strip() { grep -E '^epoch |^final test accuracy|^state digest' | sed 's/ *[0-9]* examples\/s//'; }
diff <(strip <<<"$out" | sed -n '4,$p') <(strip <<<"$resumed") ||
  fail "the resumed run differs from the uninterrupted one"
grep -q '^state digest: [0-9a-f]\{16\}$' <<<"$resumed" || fail "no state digest"
# Resuming from a checkpoint of another schedule length is refused, naming the fix.
rc=0
msg=$(examples/train_digits --epochs 7 --resume "$tmp/part.pt" --checkpoint "" 2>&1) || rc=$?
[ "$rc" -eq 64 ] && grep -q 'pass --epochs 6' <<<"$msg" ||
  fail "a resume with another --epochs was not refused (status $rc): $msg"
