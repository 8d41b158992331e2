"""benchmark_family and libtorch_twins: our cases, and libtorch's in twin binaries.

For a family `x` (files x_benchmark.cc and libtorch_x_cases.cc), benchmark_family(x) makes:
  :x_cases              our cases, a library (alwayslink: its static BENCHMARK registrations
                        survive linking)
  :x_benchmark          our cases alone: ./bazelw run //benchmarks:x_benchmark
and libtorch_twins(x, ":x_cases") the two comparisons (all manual, never built by //...):
  :libtorch_x_cases     libtorch's counterparts against Debian's libtorch 1.13 (@libtorch)
  :x_vs_libtorch        ours + those, timed in one run (./bazelw installs libtorch-dev)
  :libtorch2_x_cases    the same source against PyTorch 2.x's libtorch (@libtorch2: the wheel
                        tools/torch2/setup_venv.sh installs), compiled as C++20
  :x_vs_torch2          ours + those, timed in one run
Two libtorch versions cannot share one binary (same symbols), hence the twins: the same cases,
the same at::set_num_threads(2), built from one source. tools/torch2/compare_benchmarks.sh runs
each pair back to back and prints both ratio columns. Each binary prints the libtorch it runs
against (benchmarks/libtorch_context.cc).
"""

load("//:copts.bzl", "MUTAGRAD_COPTS")

def _context_library(name, libtorch, copts):
    if native.existing_rule(name):
        return
    native.cc_library(
        name = name,
        srcs = ["libtorch_context.cc"],
        copts = copts,
        tags = ["manual"],
        deps = ["@benchmark", libtorch],
        alwayslink = 1,
    )

def _vs(name, ours, cases_src, libtorch, prefix, suffix, copts):
    cases = prefix + name + "_cases"
    context = prefix + "context"
    _context_library(context, libtorch, copts)

    # Our -Werror stays on: libtorch's headers come in as system headers (`includes` of
    # @libtorch / @libtorch2), so their warnings are not reported.
    native.cc_library(
        name = cases,
        srcs = [cases_src],
        copts = copts,
        tags = ["manual"],
        deps = ["@benchmark", libtorch],
        alwayslink = 1,
    )
    native.cc_binary(
        name = name + suffix,
        tags = ["manual"],
        deps = [ours, ":" + cases, ":" + context, "@benchmark//:benchmark_main"],
    )

def libtorch_twins(name, ours):
    """x_vs_libtorch (Debian's libtorch 1.13) and x_vs_torch2 (PyTorch 2.x) over `ours`."""
    cases_src = "libtorch_" + name + "_cases.cc"
    _vs(name, ours, cases_src, "@libtorch", "libtorch_", "_vs_libtorch", MUTAGRAD_COPTS)

    # libtorch 2.x's headers need C++20 (its TorchConfig.cmake asks for cxx_std_20); this flag
    # comes after .bazelrc's -std=c++17 and so wins, for these two libraries only.
    _vs(name, ours, cases_src, "@libtorch2//:libtorch2", "libtorch2_", "_vs_torch2",
        MUTAGRAD_COPTS + ["-std=c++20"])

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
    libtorch_twins(name, ":" + name + "_cases")
