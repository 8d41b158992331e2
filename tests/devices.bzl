"""cc_test_on_devices: one test source run on every device, parameterized by the build.

    cc_test_on_devices(name = "set_item_test", srcs = ["set_item_test.cc"], deps = [...])

defines :set_item_test (tensors on the CPU) and :set_item_test_cuda, which sets
MUTAGRAD_TEST_DEVICE=cuda (tests/tensor/test_device.h puts the test's tensors on the CUDA
device) and links //cuda:testing: the host-run backend here, a GPU under --config=cuda.
"""

load("//:copts.bzl", "MUTAGRAD_COPTS")

def cc_test_on_devices(name, srcs, deps, size = "medium", data = [], cuda = True, tags = []):
    native.cc_test(
        name = name,
        size = size,
        srcs = srcs,
        copts = MUTAGRAD_COPTS,
        data = data,
        tags = tags,
        deps = deps + ["//tests/tensor:test_device"],
    )
    if cuda:
        native.cc_test(
            name = name + "_cuda",
            size = size,
            srcs = srcs,
            copts = MUTAGRAD_COPTS,
            data = data,
            env = {"MUTAGRAD_TEST_DEVICE": "cuda"},
            tags = tags,
            deps = deps + ["//cuda:testing", "//tests/tensor:test_device"],
        )
