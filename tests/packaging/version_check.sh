#!/usr/bin/env bash
# The version is written once (version.bzl); every artifact must say the same:
# mutagrad::version() of the installed library, pkg-config --modversion, the CMake package's
# mutagrad_VERSION, the wheel's file name and the installed wheel's mutagrad.__version__.
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
need_packages cmake pkg-config python3-venv

expected="$(sed -n 's/^MUTAGRAD_VERSION = "\(.*\)"$/\1/p' "$repo/version.bzl")"
if [ -z "$expected" ]; then
  echo "FAIL: no MUTAGRAD_VERSION in version.bzl" >&2
  exit 1
fi

prefix="$scratch/prefix"
(cd "$repo" && ./bazelw build //python:wheel && ./bazelw run //:install -- --prefix="$prefix") \
  >"$scratch/bazel.log" 2>&1 || { cat "$scratch/bazel.log" >&2; exit 1; }
bin="$(cd "$repo" && ./bazelw info bazel-bin 2>/dev/null)"

# mutagrad::version(), from a program built with pkg-config's flags.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cat >"$scratch/v.cc" <<'CC'
#include <mutagrad/version.h>

#include <cstdio>

int main() { std::puts(mutagrad::version()); }
CC
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
g++ -std=c++17 -o "$scratch/v" "$scratch/v.cc" $(pkg-config --cflags --libs mutagrad) \
  -Wl,-rpath,"$prefix/lib"
cpp="$("$scratch/v")"

pc="$(pkg-config --modversion mutagrad)"

mkdir -p "$scratch/cmake"
cat >"$scratch/cmake/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(version_check LANGUAGES CXX)
find_package(mutagrad REQUIRED)
file(WRITE "${CMAKE_BINARY_DIR}/version.txt" "${mutagrad_VERSION}")
CMAKE
cmake -S "$scratch/cmake" -B "$scratch/cmake/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake_version="$(cat "$scratch/cmake/build/version.txt")"

wheel="$(cd "$bin/python" && ls mutagrad-*-cp311-cp311-linux_x86_64.whl)"
wheel_version="$(echo "$wheel" | cut -d- -f2)"
/usr/bin/python3 -m venv "$scratch/venv"
"$scratch/venv/bin/python" -m pip install -q --no-index --disable-pip-version-check \
  "$bin/python/$wheel"
cd "$scratch"  # not the checkout: the installed package
py="$("$scratch/venv/bin/python" -c 'import mutagrad; print(mutagrad.__version__)')"

echo "version.bzl $expected | mutagrad::version() $cpp | pkg-config $pc | CMake $cmake_version" \
  "| wheel $wheel_version | mutagrad.__version__ $py"
for v in "$cpp" "$pc" "$cmake_version" "$wheel_version" "$py"; do
  [ "$v" == "$expected" ] || { echo "FAIL: version mismatch" >&2; exit 1; }
done
echo "PASS: one version everywhere"
