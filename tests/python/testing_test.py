"""mutagrad.testing.assert_close against torch.testing.assert_close (1.13): the same inputs give
the same verdict, exception kind and message (modulo the library's name), on the CPU and, for
mutagrad's tensors, the host-run CUDA device; make_tensor's shapes, dtypes, ranges and flags."""

import math

import pytest
import torch

import mutagrad as mg

DEVICES = ["cpu", "cuda"]


def cases(lib, device):
    """(actual, expected, kwargs) triples built with `lib`; mutagrad tensors on `device`."""
    def t(values, dtype="float32"):
        x = lib.tensor(values, dtype=getattr(lib, dtype))
        return x.to(device) if lib is mg else x

    nan, inf = math.nan, math.inf
    return [
        (t([1.0, 2.0, 3.0]), t([1.0, 2.0, 4.0]), {}),
        (t([1.0, 2.0, 3.0]), t([1.0, 2.0, 3.0]), {}),
        (t([1.0, 2.0, 3.0]), t([1.0, 2.0, 3.000001]), {}),  # within float32's defaults
        (t([1.0, 2.0, 3.0], "float64"), t([1.0, 2.0, 3.000001], "float64"), {}),
        (t([[1.0, 2.0], [3.0, 5.0]]), t([[1.0, 2.5], [3.0, 4.0]]), {}),
        (t([1, 2, 3], "int64"), t([1, 2, 4], "int64"), {}),
        (t([1, 2, 3], "int32"), t([1, 2, 3], "int32"), {}),
        (t([True, False]), t([True, True]), {}) if False else
        (t([True, False], "bool"), t([True, True], "bool"), {}),
        (t([1.0, 2.0]), t([1.0, 2.0], "float64"), {}),
        (t([1.0, 2.0]), t([1.0, 2.0], "float64"), {"check_dtype": False}),
        (t([1.0, 2.5]), t([1.0, 2.0], "float64"), {"check_dtype": False}),
        (t([1, 2], "int64"), t([1.0, 2.0]), {}),
        (t([1.0, 2.0]), t([1.0, 2.0, 3.0]), {}),
        (t(1.0), t(1.1), {}),
        (t(nan), t(nan), {}),
        (t(nan), t(nan), {"equal_nan": True}),
        (t([nan, 1.0]), t([nan, 1.0]), {"equal_nan": True}),
        (t([1.0, nan]), t([1.0, 2.0]), {}),
        (t([1.0, inf]), t([1.0, 2.0]), {}),
        (t([1.0, inf]), t([1.0, inf]), {}),
        (t([0.0, 1.0]), t([1e-9, 1.0]), {}),
        (t([0.0, 1.0]), t([1e-3, 1.0]), {}),
        (t([0.5, 1.0]), t([0.0, 1.0]), {}),
        (t([1.0, 2.0]), t([1.0, 3.0]), {"rtol": 0, "atol": 0}),
        (t([1.0, 2.0]), t([1.0, 2.2]), {"rtol": 0.2, "atol": 0}),
        (t([1.0, 2.0]), t([1.0, 2.2]), {"rtol": 0.01, "atol": 0.1}),
        (t([1.0, 2.0]), t([1.0, 3.0]), {"rtol": 0}),
        (t([1.0, 2.0]), t([1.0, 3.0]), {"msg": "custom"}),
        (t([1.0, 2.0], "float16"), t([1.0, 2.001], "float16"), {}),
        (t([1.0, 2.0], "float16"), t([1.0, 2.01], "float16"), {}),
        (t([1.0, 2.0], "bfloat16"), t([1.0, 2.02], "bfloat16"), {}),
        (t([1.0, 2.0], "bfloat16"), t([1.0, 2.1], "bfloat16"), {}),
        (lib.zeros(2, 3).t(), lib.zeros(3, 2), {"check_stride": True}),
        (lib.zeros(2, 3).t(), lib.zeros(3, 2), {}),
        (1.0, 1.1, {}),
        (1.0, 1.0 + 1e-8, {}),
        (1, 2, {}),
        (1, 1.0, {}),
        (1, 1.0, {"check_dtype": False}),
        (nan, nan, {}),
        (nan, nan, {"equal_nan": True}),
        (True, False, {}),
        (None, None, {}),
        (None, 1, {}),
        ([t(1.0), t(2.0)], [t(1.0), t(3.0)], {}),
        ((t([1.0, 2.0]), [t(1.0), {"k": t(2.0)}]), (t([1.0, 2.0]), [t(1.0), {"k": t(2.5)}]), {}),
        ({"a": t(1.0), "b": 2}, {"a": t(1.0), "b": 3}, {}),
        ({"a": t(1.0)}, {"b": t(1.0)}, {}),
        ([1, 2], [1, 2, 3], {}),
        ([1.0, 2.0], [1.0, 2.0], {}),
        (t([1.0, 2.0]), [1.0, 2.0], {}),
        (t(1.0), 1.0, {}),
        ("a", "a", {}),
    ]


def outcome(lib, device, k):
    actual, expected, kwargs = cases(lib, device)[k]
    assert_close = lib.testing.assert_close
    try:
        assert_close(actual, expected, **kwargs)
        return "PASS"
    except Exception as e:  # noqa: BLE001  (kind and message are the outcome)
        text = str(e).replace("torch", "LIB").replace("mutagrad", "LIB")
        return type(e).__name__, text.replace("LIB._C.Tensor", "LIB.Tensor")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("k", range(len(cases(torch, "cpu"))))
def test_assert_close_matches_torch(k, device):
    expected = outcome(torch, device, k)
    got = outcome(mg, device, k)
    assert got == expected, f"case {k}:\nmutagrad: {got!r}\ntorch:    {expected!r}"


def test_message_structure():
    with pytest.raises(AssertionError) as info:
        mg.testing.assert_close(mg.tensor([1.0, 2.0, 3.0]), mg.tensor([1.0, 2.0, 4.0]))
    assert str(info.value) == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 1.0 at index (2,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.25 at index (2,) (up to 1.3e-06 allowed)")


def test_device_mismatch_and_callable_msg():
    a = mg.tensor([1.0, 2.0])
    b = a.to("cuda")
    with pytest.raises(AssertionError, match="attribute 'device' do not match: cpu != cuda"):
        mg.testing.assert_close(a, b)
    mg.testing.assert_close(a, b, check_device=False)
    with pytest.raises(AssertionError, match="^wrapped: Tensor-likes are not close"):
        mg.testing.assert_close(a, b * 2, check_device=False, msg=lambda m: "wrapped: " + m)


@pytest.mark.parametrize("device", DEVICES)
def test_make_tensor(device):
    make = mg.testing.make_tensor
    x = make((3, 4), dtype=mg.float32, device=device, low=-1, high=1)
    assert tuple(x.shape) == (3, 4) and x.dtype == mg.float32 and x.device.type == device
    assert -1 <= float(x.min()) and float(x.max()) <= 1
    y = make(2, 5, dtype=mg.int64, device=device, low=3, high=7)
    assert tuple(y.shape) == (2, 5) and 3 <= int(y.min()) and int(y.max()) < 7
    z = make((4, 6), dtype=mg.float64, device=device, noncontiguous=True, requires_grad=True)
    assert not z.is_contiguous() and z.requires_grad and tuple(z.shape) == (4, 6)
    w = make((50,), dtype=mg.int64, device=device, low=-1, high=2, exclude_zero=True)
    assert bool((w != 0).all())
    b = make((10,), dtype=mg.bool, device=device)
    assert b.dtype == mg.bool
