#!/usr/bin/env bash
# The device build (--config=cuda) must compile every object it shares with the default build
# with the same action key (Note [Backends link, they do not compile into their users] in
# cuda/cuda.bzl): both builds write one output directory, so an object whose key differs is
# compiled again at every switch between them, in CI's stages and on a developer's machine.
# This compares the two builds' C++ compile actions (bazel aquery: analysis only, seconds) and
# names every object that differs.
#   tools/ci/same_objects.sh            # .ci/run runs it before the device build
set -euo pipefail
cd "$(dirname "$0")/../.."
keys() {  # bazel flags... -> "object action-key" lines
  ./bazelw aquery "$@" 'mnemonic("CppCompile", //...)' --output=text 2>/dev/null |
    awk '/^  ActionKey:/ {key = $2}
         /^  Outputs:/ {gsub(/[\[\],]/, ""); for (i = 2; i <= NF; i++) if ($i ~ /\.o$/) print $i, key}' |
    sort
}
keys >/tmp/same_objects.default.$$
keys --config=cuda --define=mutagrad_nvcc=sm_90 >/tmp/same_objects.device.$$
trap 'rm -f /tmp/same_objects.*.$$' EXIT
shared=$(join /tmp/same_objects.default.$$ /tmp/same_objects.device.$$ | wc -l)
differ=$(join /tmp/same_objects.default.$$ /tmp/same_objects.device.$$ | awk '$2 != $3 {print $1}')
if [ "$shared" -lt 100 ]; then
  echo "FAIL: only $shared objects in common: the aquery output was not understood" >&2
  exit 1
fi
if [ -n "$differ" ]; then
  echo "FAIL: the device build compiles these objects differently from the default build:" >&2
  echo "$differ" >&2
  echo "A target above //cuda sees a backend's headers or include paths: depend on a backend" \
    "through link_only (cuda/cuda.bzl)." >&2
  exit 1
fi
echo "PASS: the device build reuses all $shared objects it shares with the default build"
