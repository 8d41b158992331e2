#!/usr/bin/env bash
# Runs on the GPU machine, from the unpacked tarball of tools/gpu/pack.sh: every device-build
# test binary (in parallel, each with a time limit), then the CUDA benchmark and PyTorch's
# counterparts (benchmarks/torch_cuda_cases.py, plain and deterministic). Writes three files to
# OUTDIR: summary.txt (one line per test binary), failures.txt (the failed tests' messages) and
# bench.txt, and sanitizer.txt (compute-sanitizer over two suites); the full logs of failed binaries stay in logs/ beside this script.
#
#   mutagrad-gpu/run_checks.sh OUTDIR [tests|bench|all] [gtest filter]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run_checks.sh OUTDIR [tests|bench|all] [gtest filter]}
what=${2:-all}
filter=${3:-*}
cd "$here"
mkdir -p "$out" logs
# The toolkit's cuBLAS and cuDNN (rpath /usr/local/cuda/lib64), else those of the pip wheels
# beside PyTorch (nvidia/cu13/lib, nvidia/cudnn/lib; or wherever python3's nvidia.cudnn is);
# then the libraries pack.sh carried.
cudnn_wheel=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' \
  2>/dev/null)
extra=$(ls -d /usr/local/cuda/lib64 /opt/torch/.venv/lib/python3*/site-packages/nvidia/cu13/lib \
  /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib $cudnn_wheel 2>/dev/null |
  tr '\n' ':')
export LD_LIBRARY_PATH="${extra}$here/lib:${LD_LIBRARY_PATH:-}"
summary=$out/summary.txt
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nproc
  # Every device binary links libcudnn.so.9 (cuda/cudnn.cc): say so at once if none is found.
  ldd bin/cuda_test | grep -E 'libcudnn|not found'
} >"$summary" 2>&1

run_one() {  # binary name; prints "PASS|FAIL|TIMEOUT name seconds tests"
  local b=$1 env=() t0=$SECONDS rc
  [[ $b == *_cuda ]] && env=(MUTAGRAD_TEST_DEVICE=cuda)
  env "${env[@]}" MUTAGRAD_TEST_PYTHON=python3 timeout 150 "bin/$b" --gtest_filter="$filter" \
    >"logs/$b.log" 2>&1
  rc=$?
  local tests
  tests=$(grep -oE '^\[  PASSED  \] [0-9]+' "logs/$b.log" | grep -oE '[0-9]+$')
  if [ $rc -eq 0 ]; then
    echo "PASS $b $((SECONDS - t0))s ${tests:-?} tests"
    rm -f "logs/$b.log"
  elif [ $rc -eq 124 ]; then
    echo "TIMEOUT $b $((SECONDS - t0))s"
  else
    echo "FAIL(rc=$rc) $b $((SECONDS - t0))s"
  fi
}
export -f run_one
export filter

if [[ $what == tests || $what == all ]]; then
  # compute-sanitizer's memcheck and racecheck over two suites, beside the ordinary runs.
  if command -v compute-sanitizer >/dev/null; then
    (for tool in memcheck racecheck; do
      echo "== compute-sanitizer --tool $tool cuda_test, indexing_conformance_test"
      for b in cuda_test indexing_conformance_test; do
        timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 "bin/$b" 2>&1 |
          grep -E '^=========|PASSED|FAILED' | head -60
        echo "exit ${PIPESTATUS[0]} ($b)"
      done
    done) >"$out/sanitizer.txt" 2>&1 &
  fi
  ls bin | grep -E '_test(_cuda)?$' | xargs -P 8 -I{} bash -c 'run_one {}' | sort >>"$summary"
  # The failed tests' names, one file for all (few files come back).
  for f in logs/*.log; do
    [ -e "$f" ] || continue
    echo "=== $(basename "$f" .log)"
    grep -E '^\[  FAILED  \]|Failure|error|what\(\)|Expected|Which is|terminate' "$f" | head -60
    tail -5 "$f"
  done >"$out/failures.txt"
  wait
fi
if [[ $what == bench || $what == all ]]; then
  {
    echo "== mutagrad cuda_benchmark"
    timeout 240 bin/cuda_benchmark --benchmark_min_time=0.3 2>&1
    echo "== torch"
    timeout 120 python3 torch_cuda_cases.py --min-time 0.3 2>&1
    echo "== torch, deterministic algorithms"
    timeout 120 python3 torch_cuda_cases.py --min-time 0.3 --deterministic 2>&1
    echo "== torch, deterministic algorithms, no TF32 in cuDNN (what mutagrad's conv runs)"
    timeout 120 python3 torch_cuda_cases.py --min-time 0.3 --deterministic --no-tf32 2>&1
  } >"$out/bench.txt"
fi
if bin/quickstart >/dev/null 2>&1; then echo "PASS quickstart"; else echo "FAIL quickstart"; fi >>"$summary"
cat "$summary"
