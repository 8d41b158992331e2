#!/usr/bin/env bash
# The AVX2 build of the per-capability kernels (//tensor/cpu:vec_kernels_avx2) must not export a
# symbol that another object of the program can also define: an inline or template function
# compiled there with -mavx2, merged by the linker with the baseline build's copy, would run on
# CPUs without AVX2 (Note [CPU capability dispatch] in tensor/cpu/vec_kernels.h). Every global
# symbol the object defines must be in mutagrad::cpu::avx2 or in the renamed Eigen
# (mutagrad_eigen_avx2); sanitizer bookkeeping symbols are allowed.
#   args: the library's outputs ($(rootpaths //tensor/cpu:vec_kernels_avx2))
set -euo pipefail
archives=()
for f in "$@"; do
  case "$f" in *.a | *.lo) archives+=("$f") ;; esac
done
if [ "${#archives[@]}" -eq 0 ]; then
  echo "FAIL: no static archive among the arguments: $*" >&2
  exit 1
fi
status=0
for a in "${archives[@]}"; do
  # Defined global (upper-case type) or unique (u) symbols, by their mangled names: nested in
  # namespace mutagrad::cpu::avx2 or mutagrad_eigen_avx2, a function's static or guard
  # variable there, or type information of a class there; or the pointer to the C++
  # personality routine (data, the same in every object).
  defined=$(nm --defined-only "$a" | awk 'NF >= 3 && ($2 ~ /^[A-Zu]$/) { print $3 }')
  count=$(printf '%s\n' "$defined" | grep -c . || true)
  bad=$(printf '%s\n' "$defined" | grep -v -E \
    '^_Z(GV|TI|TS|TV|TT)?Z?NK?(19mutagrad_eigen_avx2|8mutagrad3cpu4avx2)|^_*(asan|ubsan|sancov|odr_asan)|^__(start|stop)_|^DW\.ref\.__gxx_personality_v0$' \
    | grep . | c++filt || true)
  if [ -n "$bad" ]; then
    echo "FAIL: $a defines symbols another object may define too (compiled with -mavx2):" >&2
    printf '%s\n' "$bad" >&2
    status=1
  fi
  # The table must be there, or the check above saw the wrong file.
  if ! printf '%s\n' "$defined" | grep -qx '_ZN8mutagrad3cpu4avx211kVecKernelsE'; then
    echo "FAIL: $a does not define mutagrad::cpu::avx2::kVecKernels" >&2
    status=1
  fi
  echo "$a: $count global symbols checked"
done
exit "$status"
