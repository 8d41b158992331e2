#!/bin/bash
# Runs //examples:functionalize_step into a temporary folder and checks what it printed and
# wrote: the step's writes and their functional form, the report, verify's "ok", the picture.
set -euo pipefail
out="${TEST_TMPDIR:-$(mktemp -d)}/functionalize_step"
mkdir -p "$out"
examples/functionalize_step "$out" > "$out/stdout.txt"
log="$out/stdout.txt"
expect() { grep -qF -- "$1" "$log" || { echo "stdout lacks: $1"; cat "$log"; exit 1; }; }
expect "mul_("
expect "slice_scatter("
expect "mutated inputs: 0, 1, 2"
expect "in the storage of input 0"
expect "verify: ok"
# The functional form writes each input once, at the end (three copy_ after its last op).
test "$(sed -n '/# Its functional form/,/# Writes/p' "$log" | grep -c ' = copy_(')" -eq 3 \
  || { echo "expected 3 copy_ in the functional form"; exit 1; }
grep -q "<svg" "$out/step.svg" || { echo "step.svg is not an SVG"; exit 1; }
grep -q "storage of %0" "$out/step.svg" || { echo "step.svg lacks the storage frame"; exit 1; }
grep -q "cluster_functional" "$out/step.dot" || { echo "step.dot lacks the functional form"; exit 1; }
echo "functionalize_step: ok"
