#!/usr/bin/env bash
# compare_benchmarks.sh: every benchmark family against libtorch 1.13 (Debian) and 2.x (PyPI).
#
#   tools/torch2/compare_benchmarks.sh                        # all families
#   tools/torch2/compare_benchmarks.sh indexing autograd      # some
#   REPS=3 tools/torch2/compare_benchmarks.sh pointwise -- --benchmark_min_time=0.3
#   ROUNDS=3 tools/torch2/compare_benchmarks.sh pointwise     # every family 3 times over
#
# libtorch 1.13 and 2.x cannot be linked into one binary (the same symbols), so each family has
# twin binaries built from the same sources (benchmarks/benchmarks.bzl): x_vs_libtorch and
# x_vs_torch2. Each ratio is same-run: ours and libtorch's cases interleaved in one binary. This
# runs the twins of a family back to back with the same flags, then prints one markdown table
# per family with both ratio columns (tools/torch2/compare_benchmarks.py), our own time in each
# twin's run (if those disagree, the load changed between them: rerun), and the libtorch
# version, library and BLAS each binary reports. JSON and console output stay in $OUT_DIR.
#
# Without the 2.x venv (tools/torch2/setup_venv.sh) the 1.13 twins run alone and the tables
# say "libtorch 2.x not available". Run it on a quiet machine: docs/performance.md.
#
# ROUNDS=N (default 1) runs every family's twins N times, round after round, into
# $OUT_DIR/round<r>/, and each table gives the median over the rounds of the same-run ratio,
# with its range. On a shared VM whole minutes run slow for both libraries (docs/performance.md,
# session 11): a ratio that holds in every round is one to quote.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${root}"

families=()
extra=()
while (($# > 0)); do
  if [[ "$1" == "--" ]]; then
    shift
    extra=("$@")
    break
  fi
  families+=("$1")
  shift
done
if ((${#families[@]} == 0)); then
  families=(indexing autograd mutation pointwise training optim)
fi
reps="${REPS:-5}"
rounds="${ROUNDS:-1}"
if ! [[ "${rounds}" =~ ^[1-9][0-9]*$ ]]; then
  echo "compare_benchmarks.sh: ROUNDS=${rounds}: expected a whole number of rounds, 1 or more" >&2
  exit 2
fi
out="${OUT_DIR:-/tmp/mutagrad-vs-torch-$(date -u +%Y%m%dT%H%M%S)}"
mkdir -p "${out}"
# The tables read every round<r> folder of OUT_DIR: none may be left from an earlier run.
rm -rf "${out}"/round[0-9]*

venv="${MUTAGRAD_TORCH2_VENV:-${HOME}/.cache/mutagrad/torch2-venv}"
twins=(libtorch)
if compgen -G "${venv}/lib/python3*/site-packages/torch/lib/libtorch_cpu.so" >/dev/null ||
  [ -n "${MUTAGRAD_TORCH2_DIR:-}" ]; then
  twins+=(torch2)
else
  echo "compare_benchmarks.sh: no PyTorch 2.x at ${venv} (tools/torch2/setup_venv.sh):" \
    "libtorch 1.13 only" >&2
fi

targets=()
for f in "${families[@]}"; do
  for t in "${twins[@]}"; do targets+=("//benchmarks:${f}_vs_${t}"); done
done
if [[ -z "${NO_BUILD:-}" ]]; then
  ./bazelw build "${targets[@]}" >&2
elif [[ -z "${BAZEL_BIN:-}" ]] &&
  ! ./bazelw build --check_up_to_date "${targets[@]}" >/dev/null 2>&1; then
  # NO_BUILD=1 runs the twins as they are. They are manual targets, which `bazel build //...`
  # leaves alone: in session 12 a whole run measured an earlier session's kernels in one twin.
  # (BAZEL_BIN, copies kept for an A/B, is run as it is.)
  echo "compare_benchmarks.sh: NO_BUILD=1, but bazel says ${targets[*]} are not up to date" \
    "with the sources (bazel build --check_up_to_date): build them (run without NO_BUILD)" >&2
  exit 2
fi
# The default configuration's outputs (-c opt): stable while others build under other configs,
# which move the bazel-bin symlink.
bin="${BAZEL_BIN:-${root}/bazel-out/k8-opt/bin}"

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  dirty="$(git diff --quiet HEAD -- . || echo ' (+ uncommitted changes)')"
  echo "commit: $(git rev-parse --short HEAD)${dirty}"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
  echo "flags: --benchmark_repetitions=${reps} --benchmark_enable_random_interleaving=true" \
    "--benchmark_report_aggregates_only=true ${extra[*]}"
} >"${out}/run.txt"

for ((round = 1; round <= rounds; round++)); do
  dir="${out}"
  if ((rounds > 1)); then
    dir="${out}/round${round}"
    mkdir -p "${dir}"
    echo "round ${round} of ${rounds}" >>"${out}/run.txt"
  fi
  for f in "${families[@]}"; do
    for t in "${twins[@]}"; do
      name="${f}_vs_${t}"
      if [ ! -x "${bin}/benchmarks/${name}" ]; then
        echo "compare_benchmarks.sh: ${bin}/benchmarks/${name} is not built (run without NO_BUILD)" >&2
        exit 1
      fi
      echo "== ${name}, round ${round} of ${rounds} (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
      echo "${name}: load average at start $(cut -d' ' -f1-3 /proc/loadavg)" >>"${out}/run.txt"
      "${bin}/benchmarks/${name}" --benchmark_repetitions="${reps}" \
        --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
        --benchmark_out="${dir}/${name}.json" --benchmark_out_format=json "${extra[@]}" \
        >"${dir}/${name}.txt" 2>&1
      echo "${name}: load average at end $(cut -d' ' -f1-3 /proc/loadavg)" >>"${out}/run.txt"
    done
  done
done

/usr/bin/python3 "${root}/tools/torch2/compare_benchmarks.py" "${out}" "${families[@]}"
echo "compare_benchmarks.sh: outputs in ${out}" >&2
