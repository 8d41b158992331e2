#!/usr/bin/env bash
# The fuzz stage of CI (docs/reliability.md): builds the libFuzzer targets with clang
# (--config=fuzz, in its own output base so the gcc build stays cached) and runs each target,
# and the atheris Python target, for SECONDS (default 60) from its checked-in corpus. Exits 1
# on any finding; the crashing input is printed (base64) and kept in the work directory.
#   tests/fuzz/ci_fuzz.sh            # 60 s per target
#   tests/fuzz/ci_fuzz.sh 3600       # the long run
# MUTAGRAD_FUZZ_SKIP_PYTHON=1 skips the Python target (it installs atheris from PyPI).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
output_base=${MUTAGRAD_FUZZ_OUTPUT_BASE:-${XDG_CACHE_HOME:-$HOME/.cache}/bazel_fuzz_ob}
work=${MUTAGRAD_FUZZ_WORK:-$(mktemp -d)}
links="$work/links-"
targets=(index_expression autograd_program safetensors_header checkpoint)

./bazelw --output_base="$output_base" build --config=fuzz --symlink_prefix="$links" \
  $(printf '//tests/fuzz:%s_fuzzer ' "${targets[@]}")

# Two targets at a time (each is one process on one core; CI's machines have two): 4 targets
# take 2 x SECONDS instead of 4 x SECONDS.
fuzz_one() {  # target: runs it, prints its findings and statistics, returns 1 on a finding
  local t=$1 rc=0
  mkdir -p "$work/$t"
  echo "ci_fuzz: $t for ${seconds}s" >&2
  # New inputs go to $work/$t (first directory); the checked-in corpus is only read.
  "${links}bin/tests/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=60 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/$t-" \
    "$work/$t" "tests/fuzz/corpus/$t" >"$work/$t.log" 2>&1 || rc=1
  if [ "$rc" -ne 0 ]; then
    grep -E "FUZZ INVARIANT|ERROR|runtime error|Base64" "$work/$t.log" >&2 || tail -40 "$work/$t.log" >&2
  fi
  grep -E "stat::number_of_executed_units" "$work/$t.log" | sed "s/^/ci_fuzz: $t /" >&2 || true
  return "$rc"
}
status=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  for t in "${targets[@]:i:2}"; do
    fuzz_one "$t" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || status=1
  done
done
./bazelw --output_base="$output_base" shutdown

if [ -z "${MUTAGRAD_FUZZ_SKIP_PYTHON:-}" ]; then
  echo "ci_fuzz: python_index for ${seconds}s" >&2
  if ! MUTAGRAD_FUZZ_WORK="$work" tests/fuzz/run_python_fuzzer.sh -max_total_time="$seconds" \
    -timeout=60 -print_final_stats=1 >"$work/python_index.log" 2>&1; then
    status=1
    grep -E "Uncaught|Error|Base64" "$work/python_index.log" >&2 || tail -40 "$work/python_index.log" >&2
  fi
  grep -E "stat::number_of_executed_units" "$work/python_index.log" |
    sed "s/^/ci_fuzz: python_index /" >&2 || true
fi
[ "$status" -eq 0 ] && echo "ci_fuzz: no findings (work directory $work)" >&2
exit "$status"
