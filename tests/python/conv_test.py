"""Convolution against torch 1.13: conv1d, conv2d, conv_transpose1d and conv_transpose2d over
random geometries (1,600 cases: stride, padding, dilation, groups, output_padding, batch, odd
sizes, 1x1 and large kernels): values and input/weight/bias gradients in float32 and float64,
second derivatives, padding "same"/"valid", unbatched inputs, node names and torch's exception
kinds for refused arguments (nothing changed). Runs mutagrad on the CPU and the (host-run) CUDA
device.
"""

import random

import numpy as np
import pytest
import torch

import mutagrad as mg
import mutagrad.nn.functional as MF
import torch.nn.functional as TF
from lib_util import from_torch, numpy_of


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    return request.param


def lib_tensor(t, device, requires_grad=True):
    m = from_torch(mg, t).to(device)
    return m.requires_grad_() if requires_grad else m


def random_case(rng, dims, transposed):
    """Arguments of one random convolution: shapes and keyword arguments."""
    while True:
        groups = rng.choice([1, 1, 2, 3])
        n = rng.randint(1, 3)
        cin = groups * rng.randint(1, 3)
        cout = groups * rng.randint(1, 3)
        k = [1 if rng.random() < 0.2 else rng.randint(1, 5) for _ in range(dims)]
        stride = [rng.randint(1, 3) for _ in range(dims)]
        dilation = [rng.choice([1, 1, 2, 3]) for _ in range(dims)]
        padding = [rng.randint(0, 2) for _ in range(dims)]
        size = [rng.randint(1, 9) for _ in range(dims)]
        if transposed:
            out_pad = [rng.randint(0, max(s, d) - 1) for s, d in zip(stride, dilation)]
            outs = [
                (i - 1) * s - 2 * p + d * (kk - 1) + op + 1
                for i, s, p, d, kk, op in zip(size, stride, padding, dilation, k, out_pad)
            ]
            if min(outs) <= 0:
                continue
            w_shape = (cin, cout // groups, *k)
            kwargs = dict(stride=stride, padding=padding, output_padding=out_pad, groups=groups,
                          dilation=dilation)
        else:
            if any(d * (kk - 1) + 1 > i + 2 * p for i, p, d, kk in zip(size, padding, dilation, k)):
                continue
            w_shape = (cout, cin // groups, *k)
            kwargs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        bias = rng.random() < 0.7
        return (n, cin, *size), w_shape, (cout if bias else None), kwargs


def close(got, want, dtype):
    want = want.detach().numpy()
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    tol = 1e-10 if dtype == torch.float64 else 3e-5
    np.testing.assert_allclose(numpy_of(got), want, rtol=0, atol=tol * scale)


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_random_geometries_match_torch(device, dims, transposed, dtype):
    rng = random.Random(1000 * dims + 10 * transposed + (dtype == torch.float64))
    name = ("conv_transpose%dd" if transposed else "conv%dd") % dims
    tf, mf = getattr(TF, name), getattr(MF, name)
    gen = torch.Generator().manual_seed(dims + 2 * transposed)
    for _ in range(100):
        x_shape, w_shape, bias_size, kwargs = random_case(rng, dims, transposed)
        tx = torch.randn(x_shape, generator=gen, dtype=dtype, requires_grad=True)
        tw = torch.randn(w_shape, generator=gen, dtype=dtype, requires_grad=True)
        tb = (torch.randn(bias_size, generator=gen, dtype=dtype, requires_grad=True)
              if bias_size else None)
        ty = tf(tx, tw, tb, **kwargs)
        tg = torch.randn(ty.shape, generator=gen, dtype=dtype)
        (ty * tg).sum().backward()
        mx, mw = lib_tensor(tx, device), lib_tensor(tw, device)
        mb = lib_tensor(tb, device) if tb is not None else None
        my = mf(mx, mw, mb, **kwargs)
        assert tuple(my.shape) == tuple(ty.shape), (x_shape, w_shape, kwargs)
        assert my.grad_fn.name() == "ConvolutionBackward0"
        (my * lib_tensor(tg, device, False)).sum().backward()
        close(my, ty, dtype)
        close(mx.grad, tx.grad, dtype)
        close(mw.grad, tw.grad, dtype)
        if tb is not None:
            close(mb.grad, tb.grad, dtype)


@pytest.mark.parametrize("transposed", [False, True])
def test_second_derivatives_match_torch(device, transposed):
    rng = random.Random(5 + transposed)
    gen = torch.Generator().manual_seed(3)
    tf = TF.conv_transpose2d if transposed else TF.conv2d
    mf = MF.conv_transpose2d if transposed else MF.conv2d
    for _ in range(8):
        x_shape, w_shape, _, kwargs = random_case(rng, 2, transposed)
        tx = torch.randn(x_shape, generator=gen, dtype=torch.float64, requires_grad=True)
        tw = torch.randn(w_shape, generator=gen, dtype=torch.float64, requires_grad=True)
        results = []
        for lib, f, x, w in (
            (torch, tf, tx, tw),
            (mg, mf, lib_tensor(tx, device), lib_tensor(tw, device)),
        ):
            y = f(x, w, None, **kwargs)
            gx, gw = lib.autograd.grad((y * y).sum(), (x, w), create_graph=True)
            s = (gx * gx).sum() + (gw * gw.sin()).sum()
            results.append(lib.autograd.grad(s, (x, w)))
            if lib is mg:
                assert gw.grad_fn.name() == "ConvolutionBackwardBackward0"
        for got, want in zip(results[1], results[0]):
            close(got, want, torch.float64)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("padding", ["same", "valid"])
def test_padding_strings_and_unbatched_inputs(device, padding):
    gen = torch.Generator().manual_seed(4)
    for dims, x_shape, w_shape, dilation in (
        (1, (3, 10), (4, 3, 4), 2),
        (2, (2, 7, 6), (3, 2, 4, 3), 1),
        (2, (1, 2, 5, 5), (2, 2, 2, 2), (2, 1)),
    ):
        tx = torch.randn(x_shape, generator=gen, dtype=torch.float64, requires_grad=True)
        tw = torch.randn(w_shape, generator=gen, dtype=torch.float64, requires_grad=True)
        name = "conv%dd" % dims
        ty = getattr(TF, name)(tx, tw, padding=padding, dilation=dilation)
        mx, mw = lib_tensor(tx, device), lib_tensor(tw, device)
        my = getattr(mg, name)(mx, mw, padding=padding, dilation=dilation)
        close(my, ty, torch.float64)
        ty.sum().backward()
        my.sum().backward()
        close(mx.grad, tx.grad, torch.float64)
        close(mw.grad, tw.grad, torch.float64)


def test_refused_arguments_raise_torchs_kind_and_change_nothing(device):
    x = torch.randn(1, 4, 5, 5)
    w = torch.randn(6, 2, 3, 3)
    cases = [
        lambda lib, x, w: lib.nn.functional.conv2d(x, w, groups=4),  # 6 % 4
        lambda lib, x, w: lib.nn.functional.conv2d(x, w),  # channels 4 vs 2
        lambda lib, x, w: lib.nn.functional.conv2d(x, w[:, :, :1].repeat(1, 1, 7, 1), groups=2),
        lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=-1, groups=2),
        lambda lib, x, w: lib.nn.functional.conv2d(x, w, stride=0, groups=2),
        lambda lib, x, w: lib.nn.functional.conv2d(x, w[0], groups=2),
        lambda lib, x, w: lib.nn.functional.conv2d(x, w.double(), groups=2),
        lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding="full", groups=2),
        lambda lib, x, w: lib.nn.functional.conv2d(x, w, stride=2, padding="same", groups=2),
        lambda lib, x, w: lib.nn.functional.conv2d(x, w, torch_or_mg_zeros(lib, 5), groups=2),
    ]
    for i, case in enumerate(cases):
        kinds = []
        for lib, xi, wi in ((torch, x, w), (mg, lib_tensor(x, device, False),
                                            lib_tensor(w, device, False))):
            before = (numpy_of(xi).copy(), xi._version, wi._version)
            try:
                case(lib, xi, wi)
                kinds.append(None)
            except (RuntimeError, ValueError) as e:
                kinds.append(type(e))
            assert np.array_equal(numpy_of(xi), before[0])
            assert (xi._version, wi._version) == before[1:]
        assert kinds[0] is not None, i
        assert kinds[1] is not None and issubclass(kinds[1], kinds[0]), (i, kinds)


def torch_or_mg_zeros(lib, n):
    return lib.zeros(n)


def test_relu_in_place_on_the_output_and_a_stale_input(device):
    x = lib_tensor(torch.randn(1, 2, 5, 5), device)
    w = lib_tensor(torch.randn(3, 2, 3, 3), device)
    y = mg.conv2d(x, w, padding=1)
    y.relu_()  # conv does not save its output
    y.sum().backward()
    assert x.grad is not None
    h = x * 1.0
    y = mg.conv2d(h, w)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="add_"):
        y.sum().backward()
