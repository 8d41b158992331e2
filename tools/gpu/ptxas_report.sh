#!/usr/bin/env bash
# Compiles cuda/*.cu for sm_90 with `ptxas -v` and prints, per kernel, its registers and stack
# frame; exits 1 when a kernel of ours has a stack frame of 64 bytes or more, the mark of an
# array copied to local memory (Note [No dynamic indexing in kernels]
# in cuda/kernel_util.h). Needs nvcc only, no GPU.
#
#   tools/gpu/ptxas_report.sh                  # every file
#   tools/gpu/ptxas_report.sh cuda/indexing.cu
set -euo pipefail
cd "$(dirname "$0")/../.."
nvcc=${MUTAGRAD_CUDA_ROOT:-/usr/local/cuda}/bin/nvcc
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(cuda/*.cu)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for f in "${files[@]}"; do
  "$nvcc" -std=c++17 -O3 --fmad=false --expt-relaxed-constexpr -Xcompiler=-fPIC \
    -isystem "${MUTAGRAD_CUDA_ROOT:-/usr/local/cuda}/include/cccl" -I. \
    -DMUTAGRAD_CUDA_DEVICE_BUILD=1 -gencode=arch=compute_90,code=sm_90 -Xptxas -v \
    -c "$f" -o "$tmp/k.o" 2>"$tmp/log"
  # ptxas prints per entry: "Compiling entry function 'NAME'", the stack frame and spills,
  # then "Used N registers". Our kernels are the ones whose functor is in mutagrad::cuda.
  awk -v file="$f" '
    /Compiling entry function/ { name = $0; sub(/.*_cu_[0-9a-f]+/, "", name); sub(/EEN6thrust.*/, "", name) }
    /bytes stack frame/ { frame = $1; spills = $5 }
    /Used [0-9]+ registers/ {
      regs = $5
      if (name != "") printf "%-20s %-50s regs %3d  spills %4d  stack %5d\n", file, substr(name, 1, 50), regs, spills, frame
      if (frame >= 64 && name != "") bad = 1
      name = ""
    }
    END { exit bad }' "$tmp/log" || status=1
done
exit $status
