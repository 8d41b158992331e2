"""mutagrad_dependencies(): the repositories mutagrad's BUILD files use, all local.

mutagrad builds offline from Debian packages (docs/notes/offline-bazel.md): Eigen, GoogleTest,
Google Benchmark, pybind11 and the Python headers, zlib, oneDNN and libtorch are the system's,
the CUDA Toolkit's headers are /usr/local/cuda's, and rules_cc, rules_java and
remote_coverage_tools (which Bazel 4 would otherwise download) are the stand-ins in
third_party/. This WORKSPACE calls the macro; so does a project that uses mutagrad:

    local_repository(name = "mutagrad", path = "/path/to/mutagrad")
    load("@mutagrad//:deps.bzl", "mutagrad_dependencies")
    mutagrad_dependencies()

    cc_binary(name = "app", srcs = ["app.cc"], deps = ["@mutagrad//:mutagrad"])

A repository the calling WORKSPACE declared first (same name) is kept, so a project can
bring its own Eigen or GoogleTest. Only what a build reaches is looked at: a C++ user needs
libeigen3-dev, libboost-dev, libdnnl-dev and libgraphviz-dev, and //serialize's user libzip-dev
and nlohmann-json3-dev (./bazelw installs them all).
"""

def _third_party_impl(rctx):
    # The stand-in's directory in this repository, wherever the repository is.
    src = rctx.path(rctx.attr.build_file).dirname
    for child in src.readdir():
        rctx.symlink(child, child.basename)

# A directory of this repository (third_party/<name>) as a repository of its own; unlike
# local_repository(path = "third_party/..."), this works when mutagrad is not the main one.
_third_party = repository_rule(
    implementation = _third_party_impl,
    attrs = {"build_file": attr.label(allow_single_file = True, mandatory = True)},
    local = True,
)

_EIGEN = """
cc_library(
    name = "eigen",
    hdrs = glob(["Eigen/**", "unsupported/**"]),
    includes = ["."],
    visibility = ["//visibility:public"],
)
"""

_GOOGLETEST = """
cc_library(
    name = "gtest",
    linkopts = ["-lgtest", "-lpthread"],
    visibility = ["//visibility:public"],
)

cc_library(
    name = "gtest_main",
    linkopts = ["-lgtest_main", "-lgtest", "-lpthread"],
    visibility = ["//visibility:public"],
)

cc_library(
    name = "gmock",
    linkopts = ["-lgmock", "-lgtest", "-lpthread"],
    visibility = ["//visibility:public"],
)
"""

_BENCHMARK = """
cc_library(
    name = "benchmark",
    linkopts = ["-lbenchmark", "-lpthread"],
    visibility = ["//visibility:public"],
)

cc_library(
    name = "benchmark_main",
    linkopts = ["-lbenchmark_main", "-lbenchmark", "-lpthread"],
    visibility = ["//visibility:public"],
)
"""

_PYTHON = """
cc_library(
    name = "pybind11",
    hdrs = glob(["python3.11/**/*.h", "pybind11/**/*.h"]),
    includes = ["python3.11", "."],
    visibility = ["//visibility:public"],
)
"""

# PyTorch 1.13's C++ API from Debian's libtorch-dev: only for the "manual" benchmark targets
# //benchmarks:*_vs_libtorch (never built by //...). The API headers get -isystem via
# `includes`; the rest (ATen/, c10/, torch/csrc/) is found in /usr/include. Both are system
# include directories, so libtorch's own warnings do not trip our -Werror.
_LIBTORCH = """
cc_library(
    name = "libtorch",
    hdrs = glob(["torch/csrc/api/include/**/*.h"]),
    includes = ["torch/csrc/api/include"],
    linkopts = ["-ltorch", "-ltorch_cpu", "-lc10", "-lpthread"],
    visibility = ["//visibility:public"],
)
"""

# The CUDA Toolkit's headers (CCCL = Thrust/CUB/libcu++ under include/cccl, cuda_runtime.h under
# include). Used by //cuda: the host-run build compiles the kernel sources with g++ against
# these headers; the device build's nvcc finds them itself. ./bazelw checks the path exists
# (and stands Debian's Thrust in for it on a machine without the toolkit).
_CUDA = """
cc_library(
    name = "cccl",
    hdrs = glob(["include/cccl/**"]),
    includes = ["include/cccl"],
    visibility = ["//visibility:public"],
)

cc_library(
    name = "cudart_headers",
    hdrs = glob(["include/*.h", "include/*.hpp", "include/crt/**"]),
    includes = ["include"],
    visibility = ["//visibility:public"],
)

# The same files as private headers (a library's srcs): //distributed's NCCL group adds the
# include path to its own copts, so nothing above it compiles differently in the device build.
filegroup(
    name = "cudart_files",
    srcs = glob(["include/*.h", "include/*.hpp", "include/crt/**"]),
    visibility = ["//visibility:public"],
)
"""

# The system zlib (Debian's zlib1g-dev), for //examples:train_digits's gzip reader.
_ZLIB = """
cc_library(
    name = "zlib",
    linkopts = ["-lz"],
    visibility = ["//visibility:public"],
)
"""

# oneDNN 2.6 (Debian's libdnnl-dev), for the CPU convolutions (tensor/cpu/convolution.cc). Its
# headers (oneapi/dnnl/dnnl.hpp) are on the system include path.
_DNNL = """
cc_library(
    name = "dnnl",
    linkopts = ["-ldnnl"],
    visibility = ["//visibility:public"],
)
"""

# libzip (Debian's libzip-dev), for //serialize's PyTorch checkpoints (zip archives).
_LIBZIP = """
cc_library(
    name = "libzip",
    linkopts = ["-lzip"],
    visibility = ["//visibility:public"],
)
"""

# nlohmann-json (Debian's nlohmann-json3-dev, header-only, nlohmann/json.hpp on the system
# include path), for //serialize's safetensors headers.
_NLOHMANN_JSON = """
cc_library(
    name = "nlohmann_json",
    visibility = ["//visibility:public"],
)
"""

def _system(name, path, build_file_content):
    if not native.existing_rule(name):
        native.new_local_repository(
            name = name,
            path = path,
            build_file_content = build_file_content,
        )

def mutagrad_dependencies():
    """Declares every repository mutagrad's BUILD files name (none is fetched unless used)."""
    for name in ["rules_cc", "rules_java", "remote_coverage_tools"]:
        if not native.existing_rule(name):
            _third_party(
                name = name,
                build_file = Label("//third_party/%s:BUILD.bazel" % name),
            )
    _system("eigen", "/usr/include/eigen3", _EIGEN)
    _system("googletest", "/usr", _GOOGLETEST)
    _system("benchmark", "/usr", _BENCHMARK)
    _system("python", "/usr/include", _PYTHON)
    _system("libtorch", "/usr/include", _LIBTORCH)
    _system("cuda", "/usr/local/cuda", _CUDA)
    _system("zlib", "/usr", _ZLIB)
    _system("dnnl", "/usr", _DNNL)
    _system("libzip", "/usr", _LIBZIP)
    _system("nlohmann_json", "/usr", _NLOHMANN_JSON)
