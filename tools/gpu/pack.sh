#!/usr/bin/env bash
# Packs the device build's (--config=cuda) test and benchmark binaries for a GPU machine that
# has no Bazel: stripped binaries, the shared libraries they need that such a machine may lack
# (Graphviz for autograd/render.cc, ...), the test data they read, and the run script, in one
# tarball at .gpu/mutagrad-gpu.tar.xz (.gpu/ is git-ignored). docs/cuda.md, "On a GPU machine".
#
#   tools/gpu/pack.sh                 # builds first (./bazelw build --config=cuda ...)
#   NO_BUILD=1 tools/gpu/pack.sh      # packs what bazel-bin holds
#   # there: tar xf mutagrad-gpu.tar.xz && mutagrad-gpu/run_checks.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/../.."

# Every test the device build runs on the GPU: the CUDA conformance suites, the device-build
# check, and every *_cuda twin (tests/devices.bzl), plus the CUDA benchmark and the quickstart.
cuda_tests=$(./bazelw query 'attr(name, ".*_cuda$", tests(//tests/...))' 2>/dev/null)
targets=($cuda_tests //tests/cuda:backend_conformance_test //tests/cuda:convolution_conformance_test
  //tests/cuda:indexing_conformance_test
  //tests/cuda:reduce_linalg_conformance_test //tests/cuda:cuda_test
  //tests/cuda:device_build_test //benchmarks:cuda_benchmark //examples:quickstart)
if [ -z "${NO_BUILD:-}" ]; then
  ./bazelw build --config=cuda "${targets[@]}"
fi

pkg=.gpu/mutagrad-gpu
rm -rf .gpu
mkdir -p "$pkg/bin" "$pkg/lib" "$pkg/tests/indexing"
for t in "${targets[@]}"; do
  path=${t#//}
  bin=bazel-bin/${path/://}
  cp "$bin" "$pkg/bin/"
done
chmod u+w "$pkg"/bin/*
strip "$pkg"/bin/*
# Test data read at run time (relative to the working directory).
cp tests/indexing/torch_oracle.py "$pkg/tests/indexing/"
cp benchmarks/torch_cuda_cases.py "$pkg/"
cp tools/gpu/run_checks.sh "$pkg/"

# Shared libraries outside what any Linux with a CUDA driver and toolkit has: glibc, libstdc++,
# libgcc, the driver's libcuda and the toolkit's libcublas and libcudnn (found there through the
# binaries' rpath /usr/local/cuda/lib64, or LD_LIBRARY_PATH set by run_checks.sh to PyTorch's
# nvidia wheels). cuDNN is not carried: libcudnn.so.9 loads its engine libraries (~500 MB)
# from its own directory at run time, and a shim of one version beside engines of another
# fails; the GPU machine's PyTorch has them all.
base='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda\.|libcublas|libcudnn)'
# ldd on Bazel's own binaries: test binaries link the workspace's libraries as shared objects
# (bazel-bin/_solib_k8, found through their rpath), which must travel too.
for t in "${targets[@]}"; do
  path=${t#//}
  ldd "bazel-bin/${path/://}" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name file; do
  [[ "$name" =~ $base ]] && continue
  cp -L "$file" "$pkg/lib/$name"
done
echo "pack.sh: libraries carried: $(ls "$pkg/lib" | tr '\n' ' ')"
tar -C .gpu -cf - mutagrad-gpu | xz -T2 -6 >.gpu/mutagrad-gpu.tar.xz
rm -rf "$pkg"
ls -la .gpu/mutagrad-gpu.tar.xz
