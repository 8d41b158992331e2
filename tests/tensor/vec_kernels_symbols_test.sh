#!/usr/bin/env bash
# The AVX2 and AVX-512 builds of the per-capability kernels (//tensor/cpu:vec_kernels_avx2,
# :vec_kernels_avx512) must not export a symbol that another object of the program can also
# define: an inline or template function compiled there with -mavx2 or -mavx512f, merged by the
# linker with the baseline build's copy, would run on CPUs without it (Note [CPU capability
# dispatch] in tensor/cpu/vec_kernels.h). Every global symbol such an object defines must be in
# mutagrad::cpu::<capability> or in its renamed Eigen (mutagrad_eigen_<capability>); sanitizer
# bookkeeping symbols are allowed.
#   args: a capability's name, then its library's outputs ($(rootpaths ...)); repeated
set -euo pipefail
status=0
checked=0
capability=""
check() {  # check <capability> <archive>
  local cap="$1" a="$2"
  local ns="mutagrad_eigen_${cap}"
  local eigen="${#ns}${ns}" ours="8mutagrad3cpu${#cap}${cap}"
  # Defined global (upper-case type) or unique (u) symbols, by their mangled names: nested in
  # namespace mutagrad::cpu::<cap> or mutagrad_eigen_<cap>, a function's static or guard
  # variable there, or type information of a class there; or the pointer to the C++
  # personality routine (data, the same in every object).
  local defined count bad
  defined=$(nm --defined-only "$a" | awk 'NF >= 3 && ($2 ~ /^[A-Zu]$/) { print $3 }')
  count=$(printf '%s\n' "$defined" | grep -c . || true)
  bad=$(printf '%s\n' "$defined" | grep -v -E \
    "^_Z(GV|TI|TS|TV|TT)?Z?NK?(${eigen}|${ours})|^_*(asan|ubsan|sancov|odr_asan)|^__(start|stop)_|^DW\.ref\.__gxx_personality_v0\$" \
    | grep . | c++filt || true)
  if [ -n "$bad" ]; then
    echo "FAIL: $a defines symbols another object may define too (compiled for ${cap}):" >&2
    printf '%s\n' "$bad" >&2
    status=1
  fi
  # The table must be there, or the check above saw the wrong file.
  if ! printf '%s\n' "$defined" | grep -qx "_ZN${ours}11kVecKernelsE"; then
    echo "FAIL: $a does not define mutagrad::cpu::${cap}::kVecKernels" >&2
    status=1
  fi
  echo "$a (${cap}): $count global symbols checked"
  checked=$((checked + 1))
}
for f in "$@"; do
  case "$f" in
    *.a | *.lo)
      if [ -z "$capability" ]; then
        echo "FAIL: $f comes before any capability name" >&2
        exit 1
      fi
      check "$capability" "$f"
      ;;
    *.so | *.o) ;;
    *) capability="$f" ;;
  esac
done
if [ "$checked" -lt 2 ]; then
  echo "FAIL: expected the archives of avx2 and avx512 among the arguments: $*" >&2
  exit 1
fi
exit "$status"
