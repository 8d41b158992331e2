#!/usr/bin/env bash
# Sourced by every shell test that runs /usr/bin/python3 on the mutagrad extension:
#   source tests/python/asan_python_env.sh path/to/mutagrad/_C.so
# Under --config=asan the extension is ASan-instrumented, but /usr/bin/python3 is not: the ASan
# runtime must then be loaded first, or the import aborts ("ASan runtime does not come first").
# libstdc++ is preloaded with it: python3 does not link it, and ASan's __cxa_throw interceptor
# aborts on the first C++ exception unless libstdc++ is there when ASan starts. CPython
# deliberately leaves objects alive at exit, so leak detection is off (appended: the last
# setting of an ASan option wins); every other ASan check stays on. Outside asan: no change.
so_libs="$(ldd "$1")"
libasan="$(awk '/libasan/ { print $3 }' <<<"${so_libs}")"
if [[ -n "${libasan}" ]]; then
  libstdcxx="$(awk '/libstdc\+\+/ { print $3 }' <<<"${so_libs}")"
  export LD_PRELOAD="${libasan}${libstdcxx:+:${libstdcxx}}${LD_PRELOAD:+:${LD_PRELOAD}}"
  export ASAN_OPTIONS="${ASAN_OPTIONS:+${ASAN_OPTIONS}:}detect_leaks=0"
fi
unset so_libs libasan libstdcxx
