"""cc_test_on_devices: one test source run on every device, parameterized by the build.

    cc_test_on_devices(name = "set_item_test", srcs = ["set_item_test.cc"], deps = [...])

defines :set_item_test (tensors on the CPU) and :set_item_test_cuda, which sets
MUTAGRAD_TEST_DEVICE=cuda (tests/tensor/test_device.h puts the test's tensors on the CUDA
device) and links //cuda:testing: the host-run backend here, a GPU under --config=cuda. Both
link :set_item_test_lib, the sources compiled once; a test without a _cuda twin (cuda = False)
is a plain cc_test.
"""

load("//:copts.bzl", "MUTAGRAD_COPTS")

def cc_test_on_devices(name, srcs, deps, size = "medium", data = [], cuda = True, tags = []):
    if not cuda:
        native.cc_test(
            name = name,
            size = size,
            srcs = srcs,
            copts = MUTAGRAD_COPTS,
            data = data,
            tags = tags,
            deps = deps + ["//tests/tensor:test_device"],
        )
        return

    # The sources are compiled once, into a library both tests link whole (alwayslink: the
    # TEST()s register themselves at load time); only the links differ. linkstatic: its objects
    # go into each test executable, not a shared library of their own, so a test that replaces
    # operator new (scalar_inplace_ops_test) replaces it for the whole process, as the
    # executable's definitions come first in symbol lookup (from a shared library compiled with
    # -fno-semantic-interposition, the library's own calls bind to its definitions while every
    # other library's bind to the sanitizer's: ASan's alloc-dealloc-mismatch).
    native.cc_library(
        name = name + "_lib",
        testonly = 1,
        srcs = srcs,
        copts = MUTAGRAD_COPTS,
        alwayslink = 1,
        linkstatic = 1,
        deps = deps + ["//tests/tensor:test_device"],
    )
    native.cc_test(
        name = name,
        size = size,
        data = data,
        tags = tags,
        deps = [":" + name + "_lib"],
    )
    native.cc_test(
        name = name + "_cuda",
        size = size,
        data = data,
        env = {"MUTAGRAD_TEST_DEVICE": "cuda"},
        tags = tags,
        deps = [
            ":" + name + "_lib",
            "//cuda:testing",
        ],
    )
