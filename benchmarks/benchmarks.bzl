"""benchmark_family: the four targets of one benchmark family.

For a family `x` (files x_benchmark.cc and libtorch_x_cases.cc):
  :x_cases              our cases, a library (alwayslink: its static BENCHMARK registrations
                        survive linking)
  :x_benchmark          our cases alone: ./bazelw run //benchmarks:x_benchmark
  :libtorch_x_cases     libtorch's counterparts (manual: needs Debian's libtorch-dev)
  :x_vs_libtorch        both, timed in one run (manual; ./bazelw installs libtorch-dev)
"""

load("//:copts.bzl", "MUTAGRAD_COPTS")

def benchmark_family(name):
    native.cc_library(
        name = name + "_cases",
        srcs = [name + "_benchmark.cc"],
        copts = MUTAGRAD_COPTS,
        deps = [
            "//:mutagrad",
            "@benchmark",
        ],
        alwayslink = 1,
    )
    native.cc_binary(
        name = name + "_benchmark",
        deps = [
            ":" + name + "_cases",
            "@benchmark//:benchmark_main",
        ],
    )

    # Our -Werror stays on: libtorch's headers come in as system headers (see @libtorch in
    # WORKSPACE), so their warnings are not reported.
    native.cc_library(
        name = "libtorch_" + name + "_cases",
        srcs = ["libtorch_" + name + "_cases.cc"],
        copts = MUTAGRAD_COPTS,
        tags = ["manual"],
        deps = [
            "@benchmark",
            "@libtorch",
        ],
        alwayslink = 1,
    )
    native.cc_binary(
        name = name + "_vs_libtorch",
        tags = ["manual"],
        deps = [
            ":" + name + "_cases",
            ":libtorch_" + name + "_cases",
            "@benchmark//:benchmark_main",
        ],
    )
