#!/bin/bash
# Runs //examples:explain_mutation into a temporary folder and checks what it wrote: three
# SVGs naming the nodes, the stale write's line in the dry run and in the log.
set -euo pipefail
out="${TEST_TMPDIR:-$(mktemp -d)}/pictures"
mkdir -p "$out"
examples/explain_mutation "$out"
for f in safe.svg stale.svg snapshot.svg; do
  grep -q "<svg" "$out/$f" || { echo "$f is not an SVG"; exit 1; }
done
grep -q "CopySlices" "$out/safe.svg" || { echo "safe.svg lacks CopySlices"; exit 1; }
grep -q "explain_mutation.cc:4[0-9]" "$out/stale.svg" || { echo "stale.svg lacks the write"; exit 1; }
grep -q "add_ at examples/explain_mutation.cc:" "$out/check.txt" || { echo "check.txt"; exit 1; }
test "$(wc -l < "$out/writes.jsonl")" -eq 3 || { echo "writes.jsonl: expected 3 writes"; exit 1; }
grep -q '"snapshot_bytes": 96' "$out/writes.jsonl" || { echo "no snapshot bytes"; exit 1; }
echo "explain_mutation: ok"
