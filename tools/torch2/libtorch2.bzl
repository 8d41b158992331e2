"""libtorch2_repository: the libtorch of a PyTorch 2.x wheel (a venv's site-packages/torch).

The `torch` wheel on PyPI ships libtorch's C++ headers (torch/include), libraries (torch/lib)
and CMake files (torch/share/cmake/Torch). This rule makes them a repository with one target,
`@libtorch2//:libtorch2`, used only by the manual //benchmarks:*_vs_torch2 targets. Where the
wheel is (first that exists):

  1. $MUTAGRAD_TORCH2_DIR: a `torch` package directory (.../site-packages/torch);
  2. $MUTAGRAD_TORCH2_VENV/lib/python3*/site-packages/torch;
  3. ~/.cache/mutagrad/torch2-venv/lib/python3*/site-packages/torch, where
     tools/torch2/setup_venv.sh installs it.

The wheel's C++ ABI (`_GLIBCXX_USE_CXX11_ABI`) comes from TorchConfig.cmake's TORCH_CXX_FLAGS
when it sets one (wheels before 2.7 could be built either way), else from libc10.so's symbols
(std::__cxx11 names mean 1); $MUTAGRAD_TORCH2_CXX11_ABI overrides both. The define is exported
to what includes libtorch's headers. libtorch 2.x's headers need C++20: a target that uses
this repository adds `-std=c++20` to its own copts (benchmarks/benchmarks.bzl).

Only libtorch_cpu and libc10 are linked (by absolute path with an rpath, so that the wheel's
own $ORIGIN-relative RUNPATH finds libcudart and libcupti under site-packages/nvidia, which
libtorch_cpu needs to load even on a machine without a GPU). With no wheel found, the
repository still loads and its target fails the build with the command that installs one,
so nothing but a *_vs_torch2 target is affected.
"""

_MISSING = """\
genrule(
    name = "libtorch2_missing",
    outs = ["libtorch2_missing.h"],
    cmd = "echo '{message}' >&2; exit 1",
)

cc_library(
    name = "libtorch2",
    hdrs = [":libtorch2_missing.h"],
    visibility = ["//visibility:public"],
)
"""

_FOUND = """\
# libtorch {version} from {torch_dir}
# (C++11 ABI {abi}: {abi_source}).
cc_library(
    name = "libtorch2",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/**/*.cuh"]),
    defines = ["_GLIBCXX_USE_CXX11_ABI={abi}"],
    includes = ["include", "include/torch/csrc/api/include"],
    linkopts = [
        "-L{torch_dir}/lib",
        "-Wl,-rpath,{torch_dir}/lib",
        "-ltorch_cpu",
        "-lc10",
        "-lpthread",
    ],
    visibility = ["//visibility:public"],
)
"""

def _under(rctx, directory, relative):
    # Bazel 4's path.get_child() takes one name, without slashes.
    return rctx.path(str(directory) + "/" + relative)

def _find_torch_dir(rctx):
    env = rctx.os.environ
    if env.get("MUTAGRAD_TORCH2_DIR"):
        return rctx.path(env["MUTAGRAD_TORCH2_DIR"]), "$MUTAGRAD_TORCH2_DIR"
    venv = env.get("MUTAGRAD_TORCH2_VENV")
    origin = "$MUTAGRAD_TORCH2_VENV"
    if not venv:
        venv = env.get("HOME", "/root") + "/.cache/mutagrad/torch2-venv"
        origin = "the default venv " + venv
    lib = rctx.path(venv + "/lib")
    if lib.exists:
        for child in lib.readdir():
            if child.basename.startswith("python3"):
                candidate = _under(rctx, child, "site-packages/torch")
                if candidate.exists:
                    return candidate, origin
    return rctx.path(venv + "/lib/python3.x/site-packages/torch"), origin

def _version(rctx, torch_dir):
    header = _under(rctx, torch_dir, "include/torch/headeronly/version.h")
    if not header.exists:  # before 2.9 the macros were in the C++ API's own version.h
        header = _under(rctx, torch_dir, "include/torch/csrc/api/include/torch/version.h")
    if not header.exists:
        return "unknown"
    text = rctx.read(header)
    parts = []
    for key in ["MAJOR", "MINOR", "PATCH"]:
        marker = "#define TORCH_VERSION_%s " % key
        start = text.find(marker)
        if start < 0:
            return "unknown"
        parts.append(text[start + len(marker):].split("\n")[0].strip())
    return ".".join(parts)

def _cxx11_abi(rctx, torch_dir):
    env = rctx.os.environ
    if env.get("MUTAGRAD_TORCH2_CXX11_ABI") in ["0", "1"]:
        return env["MUTAGRAD_TORCH2_CXX11_ABI"], "$MUTAGRAD_TORCH2_CXX11_ABI"
    config = _under(rctx, torch_dir, "share/cmake/Torch/TorchConfig.cmake")
    if config.exists:
        text = rctx.read(config)
        for abi in ["0", "1"]:
            if "-D_GLIBCXX_USE_CXX11_ABI=" + abi in text:
                return abi, "TorchConfig.cmake's TORCH_CXX_FLAGS"
    result = rctx.execute(["readelf", "--wide", "--dyn-syms", str(torch_dir) + "/lib/libc10.so"])
    if result.return_code != 0:
        fail("libtorch2: cannot read the symbols of %s/lib/libc10.so: %s" %
             (torch_dir, result.stderr))
    if "_ZNSt7__cxx11" in result.stdout or "B5cxx11" in result.stdout:
        return "1", "libc10.so uses std::__cxx11 (TorchConfig.cmake sets no flag)"
    return "0", "libc10.so has no std::__cxx11 symbol (TorchConfig.cmake sets no flag)"

def _libtorch2_repository_impl(rctx):
    torch_dir, origin = _find_torch_dir(rctx)
    if not _under(rctx, torch_dir, "lib/libtorch_cpu.so").exists:
        message = ("@libtorch2: no PyTorch 2.x wheel at %s (from %s). Install one with " +
                   "tools/torch2/setup_venv.sh, or set MUTAGRAD_TORCH2_DIR to a " +
                   "site-packages/torch directory, then rebuild.") % (torch_dir, origin)
        rctx.file("WORKSPACE", "")
        # $ is make-variable syntax in a genrule's cmd.
        rctx.file("BUILD.bazel", _MISSING.format(message = message.replace("$", "$$")))
        return
    for child in ["include", "lib", "share"]:
        rctx.symlink(torch_dir.get_child(child), child)
    abi, abi_source = _cxx11_abi(rctx, torch_dir)
    rctx.file("WORKSPACE", "")
    rctx.file("BUILD.bazel", _FOUND.format(
        version = _version(rctx, torch_dir),
        torch_dir = str(torch_dir),
        abi = abi,
        abi_source = abi_source,
    ))

libtorch2_repository = repository_rule(
    implementation = _libtorch2_repository_impl,
    environ = ["MUTAGRAD_TORCH2_DIR", "MUTAGRAD_TORCH2_VENV", "MUTAGRAD_TORCH2_CXX11_ABI", "HOME"],
    local = True,
)
