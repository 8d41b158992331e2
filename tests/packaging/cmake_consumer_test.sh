#!/usr/bin/env bash
# The installed C++ distribution, used the way a CMake project outside this repository uses
# it: ./bazelw run //:install into a temporary prefix, examples/cmake_consumer copied next to
# it (nothing refers to the checkout), configured with find_package(mutagrad), built, ctest.
# Also: no installed file names the build tree, and a program built with pkg-config's flags
# alone compiles, links and runs.
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
need_packages cmake pkg-config libgtest-dev libboost-dev

prefix="$scratch/prefix"
step "install into $prefix"
(cd "$repo" && ./bazelw run //:install -- --prefix="$prefix")

step "no installed file names the build tree"
if grep -rIl -e "$repo" -e bazel-out -e execroot -e "$HOME/.cache/bazel" "$prefix"; then
  echo "FAIL: the files above name the build tree" >&2
  exit 1
fi

step "CMake consumer: configure, build, ctest"
cp -R "$repo/examples/cmake_consumer" "$scratch/src"
cmake -S "$scratch/src" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release
cmake --build "$scratch/build" -j "$(nproc)"
(cd "$scratch/build" && ctest --output-on-failure)
if grep -rIl "$repo" "$scratch/build" "$scratch/src"; then
  echo "FAIL: the consumer's build refers to the checkout ($repo)" >&2
  exit 1
fi

step "pkg-config"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cat >"$scratch/version.cc" <<'CC'
#include <iostream>

#include <mutagrad/mutagrad.h>

int main() {
  mutagrad::Tensor x = mutagrad::ones({2, 2}, mutagrad::kFloat64).requires_grad_();
  (x * x).sum().backward();
  std::cout << mutagrad::version() << "\n";
  return x.grad().sum().item<double>() == 8.0 ? 0 : 1;
}
CC
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
g++ -std=c++17 -O1 -o "$scratch/version" "$scratch/version.cc" \
  $(pkg-config --cflags --libs mutagrad) -Wl,-rpath,"$(pkg-config --variable=libdir mutagrad)"
"$scratch/version"
echo "PASS: CMake consumer and pkg-config against the installed tree"
