#!/usr/bin/env bash
# Installs the mutagrad C++ distribution (//packaging:dist) under a prefix:
#   ./bazelw run //:install -- --prefix=$HOME/.local
# writes include/mutagrad/, lib/libmutagrad.{so,a}, lib/pkgconfig/mutagrad.pc and
# lib/cmake/mutagrad/. A relative prefix is taken from the directory bazel was run in.
set -euo pipefail

usage() {
  echo "usage: ./bazelw run //:install -- --prefix=DIR" >&2
  exit 2
}

prefix=""
while (($#)); do
  case "$1" in
    --prefix=*) prefix="${1#--prefix=}" ;;
    --prefix)
      (($# > 1)) || usage
      prefix="$2"
      shift
      ;;
    *) usage ;;
  esac
  shift
done
[ -n "$prefix" ] || usage
if [[ "$prefix" != /* ]]; then
  prefix="${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix"
fi

# The tree is in the runfiles (bazel run) next to this script.
here="${RUNFILES_DIR:-$0.runfiles}"
dist=""
for candidate in "$here"/*/packaging/dist; do
  [ -d "$candidate" ] && dist="$candidate"
done
[ -n "$dist" ] || {
  echo "install.sh: the distribution tree (packaging/dist) is not in $here" >&2
  exit 1
}

mkdir -p "$prefix"
# -L: the runfiles are symlinks; the install gets the files.
cp -RL --no-preserve=mode "$dist"/. "$prefix"/
so=$(cd "$prefix/lib" && ls libmutagrad.so.*)
ln -sfn "$so" "$prefix/lib/libmutagrad.so"
chmod 0755 "$prefix/lib/$so"
echo "mutagrad installed in $prefix: include/mutagrad, lib/$so (+ libmutagrad.so, .a)," \
  "lib/pkgconfig/mutagrad.pc, lib/cmake/mutagrad"
