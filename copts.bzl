"""Compiler flags for project code: the one place they are set.

Build-mode flags (optimisation, sanitizers) live in .bazelrc; these apply to every
target under //tensor, //autograd, //indexing, //cuda, //python, //tests,
//benchmarks and //examples.
"""

MUTAGRAD_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
]

# Test and benchmark code additionally includes GoogleTest / Google Benchmark headers.
MUTAGRAD_TEST_COPTS = MUTAGRAD_COPTS
