#!/usr/bin/env bash
# examples/bazel_consumer: a separate Bazel workspace that declares this checkout as
# @mutagrad (local_repository), calls mutagrad_dependencies() and builds and runs a program
# on @mutagrad//:mutagrad and @mutagrad//optim. It has its own output base, so this builds the
# library once more; the server is shut down afterwards.
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"

consumer="$repo/examples/bazel_consumer"
cd "$consumer"
trap '"$repo/bazelw" shutdown >/dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
step "bazel run //:hello in $consumer"
"$repo/bazelw" run //:hello | tee "$scratch/out.txt"
version="$(sed -n 's/^MUTAGRAD_VERSION = "\(.*\)"$/\1/p' "$repo/version.bzl")"
grep -qx "mutagrad $version" "$scratch/out.txt" || {
  echo "FAIL: the program did not print 'mutagrad $version'" >&2
  exit 1
}
echo "PASS: a Bazel workspace outside mutagrad builds and runs a program on @mutagrad"
