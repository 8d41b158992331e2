"""inference_mode against torch 1.13 (issue 35): the context manager and decorator, nested
inference_mode(False), is_inference_mode_enabled, Tensor.is_inference, and torch's rules for
inference tensors (no version counter, never saved for backward, no in-place write or
requires_grad_ outside inference mode; a view of a normal tensor stays normal). mutagrad runs on
the CPU and the host-run CUDA device."""

import pytest
import torch

import mutagrad as mg
from lib_util import same_kind

MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def ones(lib, *shape, requires_grad=False):
    t = lib.ones(*shape)
    if lib is mg:
        t = t.to(MG_DEVICE)
    return t.requires_grad_() if requires_grad else t


def test_modes_inside_and_out():
    for lib in (torch, mg):
        assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()
        with lib.inference_mode():
            assert lib.is_inference_mode_enabled() and not lib.is_grad_enabled()
            with lib.inference_mode(False):
                assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()
            assert lib.is_inference_mode_enabled()
        assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()
        with lib.no_grad():
            with lib.inference_mode():
                pass
            assert not lib.is_grad_enabled()  # restored to no_grad's


def test_decorator():
    for lib in (torch, mg):
        @lib.inference_mode()
        def f(x):
            assert lib.is_inference_mode_enabled()
            return x * 2

        y = f(ones(lib, 2))
        assert y.is_inference() and not lib.is_inference_mode_enabled()

        @lib.inference_mode(False)
        def g(x):
            return x * 2

        assert not g(ones(lib, 2)).is_inference()


def capture(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the outcome is the exception)
        return type(e).__name__, str(e)
    return None


def scenario(lib):
    """What torch's rules say for each use of an inference tensor."""
    normal = ones(lib, 3)
    with lib.inference_mode():
        a = ones(lib, 2)
        b = a + 1
        a.add_(1)  # allowed inside; not counted
        view_of_normal = normal[1:]
        normal.add_(1)  # a normal tensor's write is counted inside too
        view_of_inference = a[1:]
    w = ones(lib, 2, requires_grad=True)
    out = {
        "flags": (a.is_inference(), b.is_inference(), view_of_inference.is_inference(),
                  view_of_normal.is_inference(), normal.is_inference(), w.is_inference(),
                  (a + 1).is_inference(), a.clone().is_inference()),
        "values": (a.tolist(), b.tolist(), normal.tolist()),
        "normal_version": normal._version,
        "version": capture(lambda: a._version),
        "inplace_outside": capture(lambda: a.add_(1)),
        "inplace_view_outside": capture(lambda: view_of_inference.mul_(2)),
        "saved": capture(lambda: w * a),
        "requires_grad_": capture(lambda: a.requires_grad_()),
        "not_saved_is_fine": (w + a).requires_grad,
    }
    out["after"] = a.tolist()
    return out


def test_inference_tensor_rules_are_torchs():
    t = scenario(torch)
    m = scenario(mg)
    # torch 1.13 writes, then raises; mutagrad refuses before writing (docs/python.md).
    assert t.pop("after") == [3.0, 6.0] and m.pop("after") == [2.0, 2.0]
    for key in t:
        if isinstance(t[key], tuple) and len(t[key]) == 2 and isinstance(t[key][0], str):
            assert m[key] is not None, key
            assert same_kind(t[key][0], m[key][0]), (key, t[key], m[key])
            assert m[key][1] == t[key][1], key
        else:
            assert m[key] == t[key], (key, m[key], t[key])


def test_backward_through_a_clone_works():
    for lib in (torch, mg):
        with lib.inference_mode():
            a = ones(lib, 2) * 3
        w = ones(lib, 2, requires_grad=True)
        (w * a.clone()).sum().backward()
        assert w.grad.tolist() == [3.0, 3.0]
