"""cuda_kernels: one set of kernel sources (.cu), built two ways.

    cuda_kernels(
        name = "kernels",
        srcs = ["copy.cu", "pointwise.cu"],
        hdrs = ["kernel_util.h"],
        header_deps = ["//tensor:headers"],
        deps = ["//tensor:core"],
    )

defines two libraries, both `manual` (built only when something selects them):

- `kernels_device`: each .cu compiled by nvcc (genrule, outside the sandbox: nvcc needs
  /usr/local/cuda) for sm_80 and sm_90 plus PTX for newer GPUs; links cudart statically.
- `kernels_host`: the same .cu files compiled by g++ as C++ with Thrust's OpenMP (or CPP) device
  system, so Thrust algorithms run on the host. See Note [Two builds of one kernel source] in
  cuda/kernel_util.h.
"""

load("//:copts.bzl", "MUTAGRAD_COPTS")

NVCC = "/usr/local/cuda/bin/nvcc"

# sm_80 (A100) and sm_90 (H100) machine code, plus compute_90 PTX that newer GPUs JIT-compile.
NVCC_GENCODE = [
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
]

# --define=mutagrad_nvcc=sm_90 (CI's nvcc stage): one target, sm_90 machine code and compute_90
# PTX from one front-end pass. Every kernel still goes through cicc and ptxas, in 56% of the
# time for the slowest file (misc.cu: 110 s; 196 s with the three targets above, of which ptxas
# took 123 s and cicc 58 s). Releases and tools/gpu build the full set.
# (Quoted: the genrule's bash would read the brackets as a glob.)
NVCC_GENCODE_ONE_TARGET = ["'-gencode=arch=compute_90,code=[sm_90,compute_90]'"]

# --fmad=false: no contraction of a*b+c into an FMA, so device results round as the CPU's do
# (Note [Bitwise equal to the CPU backend] in cuda/kernel_util.h).
NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "--fmad=false",
    "--expt-relaxed-constexpr",
    "-Werror=all-warnings",
    "-Xcompiler=-fPIC,-Wall,-Wextra,-Werror,-Wno-unused-parameter",
    "-isystem /usr/local/cuda/include/cccl",
]

# After the include flags (_include_flags, per repository).
NVCC_DEFINES = ["-DMUTAGRAD_CUDA_DEVICE_BUILD=1"]

# cuBLAS is linked as a shared library (its static archive would add hundreds of MB to every
# test binary); the rpath finds it where the toolkit is installed.
CUDART_LINKOPTS = [
    "-L/usr/local/cuda/lib64",
    "-Wl,-rpath,/usr/local/cuda/lib64",
    "-lcublas",
    "-lcudart_static",
    "-ldl",
    "-lrt",
    "-lpthread",
]

# cuDNN 9 (the toolkit's, /usr/local/cuda/lib64, found through CUDART_LINKOPTS' -L and rpath; on
# a GPU machine without it there, LD_LIBRARY_PATH to PyTorch's nvidia/cudnn/lib, as
# tools/gpu/run_checks.sh sets): only the device backend links it (cuda/cudnn.cc).
CUDNN_LINKOPTS = ["-lcudnn"]

# The host-run build: Thrust's device system is OpenMP (parallel) unless the build asks for the
# sequential CPP system (--define=mutagrad_thrust=cpp; --config=asan keeps OpenMP, docs/cuda.md).
HOST_RUN_COPTS = select({
    "//cuda:thrust_cpp": [
        "-DTHRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_CPP",
        "-DMUTAGRAD_HOST_RUN_SYSTEM=\\\"CPP\\\"",
    ],
    "//conditions:default": [
        "-DTHRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP",
        "-DMUTAGRAD_HOST_RUN_SYSTEM=\\\"OMP\\\"",
        "-fopenmp",
    ],
})

HOST_RUN_LINKOPTS = select({
    "//cuda:thrust_cpp": [],
    "//conditions:default": ["-fopenmp"],
})

def _include_flags():
    # Includes are relative to this repository's root, which is the execroot when mutagrad is
    # the main repository and external/<name> when another workspace uses it.
    repo = native.repository_name()
    root = "." if repo == "@" else "external/" + repo[1:]
    return ["-I" + root, "-I$(GENDIR)" + ("" if root == "." else "/" + root)]

def cuda_kernels(name, srcs, hdrs = [], header_deps = [], deps = []):
    objs = []
    flags = NVCC_FLAGS + _include_flags() + NVCC_DEFINES
    for src in srcs:
        stem = src[:-len(".cu")]
        obj = "_nvcc/%s/%s.o" % (name, stem)
        objs.append(obj)
        native.genrule(
            name = "%s_nvcc_%s" % (name, stem),
            srcs = [src] + hdrs + header_deps,
            outs = [obj],
            cmd = " ".join([NVCC] + flags) + select({
                "//cuda:nvcc_one_target": " " + " ".join(NVCC_GENCODE_ONE_TARGET),
                "//conditions:default": " " + " ".join(NVCC_GENCODE),
            }) + " -c $(location %s) -o $@" % src,
            message = "nvcc %s" % src,
            tags = ["no-sandbox", "manual"],
        )
    native.cc_library(
        name = name + "_device",
        srcs = objs,
        hdrs = hdrs,
        linkopts = CUDART_LINKOPTS,
        alwayslink = 1,
        tags = ["manual"],
        deps = deps + ["@cuda//:cudart_headers"],
    )
    native.cc_library(
        name = name + "_host",
        srcs = srcs,
        hdrs = hdrs,
        # g++ does not know the .cu extension: compile it as C++. Thrust's headers come in as
        # -isystem (through @cuda//:cccl), so their warnings do not trip -Werror.
        copts = MUTAGRAD_COPTS + ["-x", "c++"] + HOST_RUN_COPTS,
        linkopts = HOST_RUN_LINKOPTS,
        alwayslink = 1,
        tags = ["manual"],
        deps = deps + ["@cuda//:cccl"],
    )

# Note [Backends link, they do not compile into their users]
# A backend's headers and include paths (Thrust's, cuda_runtime.h's: -isystem external/cuda/...,
# -iquote external/cuda) are its own business: no file above //cuda includes them, only
# cuda/api's headers. Handed up through cc_library deps they would reach every object of the
# library, the tests and the Python bindings, and these would compile with other command lines
# (and action keys) in the device build than in the default one: 183 of 325 objects. CI's
# stages share one output directory, so each switch of build compiled them again. link_only
# passes on a backend's linking and nothing of its compiling: every object above //cuda is the
# same in all three builds, and only the backends, the kernels and the links differ.
def _link_only_impl(ctx):
    return [CcInfo(linking_context = ctx.attr.dep[CcInfo].linking_context)]

link_only = rule(
    implementation = _link_only_impl,
    attrs = {"dep": attr.label(providers = [CcInfo])},
    doc = "A cc_library's linking without its headers, defines or include paths.",
)
