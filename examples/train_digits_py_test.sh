#!/usr/bin/env bash
# Runs examples/train_digits.py (the Python twin of //examples:train_digits) on a reduced budget
# against the user build of the module: a progress line per epoch, the accuracy threshold, the
# caught stale-tensor error naming AdamW's step and the script's line, the snapshot policy's
# recovery; then a run stopped after epoch 3 and resumed ends with the uninterrupted run's state,
# bit for bit (its digest).
set -euo pipefail
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "train_digits_py_test: $1" >&2; exit 1; }
export PYTHONPATH="$PWD/python" PYTHONDONTWRITEBYTECODE=1
# Under --config=asan the ASan runtime must come first (asan_python_env.sh).
source tests/python/asan_python_env.sh python/mutagrad/_C.so
run() { /usr/bin/python3 examples/train_digits.py "$@"; }
out=$(run --epochs 6 --min-accuracy 95 --checkpoint "$tmp/full.pt")
echo "$out"
[ "$(grep -c '^epoch ' <<<"$out")" -eq 6 ] || fail "expected 6 progress lines"
grep -q '^final test accuracy' <<<"$out" || fail "no final accuracy"
grep -q 'caught: .*AdamW.step at .*train_digits.py:[0-9]' <<<"$out" ||
  fail "the stale-tensor error does not name AdamW.step and the script's line"
grep -q 'backward succeeded' <<<"$out" || fail "the snapshot policy did not recover"

part=$(run --epochs 6 --stop-after 3 --checkpoint "$tmp/part.pt")
[ "$(grep -c '^epoch ' <<<"$part")" -eq 3 ] || fail "the stopped run did not stop after 3 epochs"
resumed=$(run --epochs 6 --resume "$tmp/part.pt" --checkpoint "$tmp/resumed.pt")
echo "$resumed"
grep -q 'resumed after epoch 3' <<<"$resumed" || fail "the run did not resume"
strip() { grep -E '^epoch |^final test accuracy|^state digest' | sed 's/ *[0-9]* examples\/s//'; }
diff <(strip <<<"$out" | sed -n '4,$p') <(strip <<<"$resumed") ||
  fail "the resumed run differs from the uninterrupted one"
