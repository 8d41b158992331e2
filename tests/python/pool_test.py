"""max_pool2d against torch 1.13 over random geometries (kernel, stride, padding, dilation,
ceil_mode, batched and unbatched): values, indices (return_indices), input gradients and second
derivatives in float32 and float64, the node name, and torch's exception kinds for refused
arguments. Runs mutagrad on the CPU and the (host-run) CUDA device.
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


def random_pool(rng):
    while True:
        k = [rng.randint(1, 4), rng.randint(1, 4)]
        stride = None if rng.random() < 0.3 else [rng.randint(1, 3), rng.randint(1, 3)]
        padding = [rng.randint(0, kk // 2) for kk in k]
        dilation = [rng.choice([1, 1, 2]), rng.choice([1, 2])]
        ceil_mode = rng.random() < 0.5
        shape = [rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 9), rng.randint(1, 9)]
        if rng.random() < 0.2:
            shape = shape[1:]
        kwargs = dict(kernel_size=k, stride=stride, padding=padding, dilation=dilation,
                      ceil_mode=ceil_mode)
        try:
            y = TF.max_pool2d(torch.zeros(shape), **kwargs)
        except RuntimeError:
            continue
        # A window of padding only (-inf): torch 1.13's backward writes its gradient past the
        # input there (heap corruption), so such geometries are left out.
        if torch.isinf(y).any():
            continue
        return shape, kwargs


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_random_geometries_match_torch(device, dtype):
    rng = random.Random(11 + (dtype == torch.float64))
    gen = torch.Generator().manual_seed(2)
    for _ in range(150):
        shape, kwargs = random_pool(rng)
        tx = torch.randn(shape, generator=gen, dtype=dtype, requires_grad=True)
        ty, ti = TF.max_pool2d(tx, return_indices=True, **kwargs)
        tg = torch.randn(ty.shape, generator=gen, dtype=dtype)
        (ty * tg).sum().backward()
        mx = from_torch(mg, tx).to(device).requires_grad_()
        my, mi = MF.max_pool2d(mx, return_indices=True, **kwargs)
        assert my.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
        assert tuple(my.shape) == tuple(ty.shape), (shape, kwargs)
        assert np.array_equal(numpy_of(my), numpy_of(ty)), (shape, kwargs)
        assert np.array_equal(numpy_of(mi), numpy_of(ti)), (shape, kwargs)
        (my * from_torch(mg, tg).to(device)).sum().backward()
        np.testing.assert_allclose(numpy_of(mx.grad), numpy_of(tx.grad), rtol=0, atol=1e-6)


def test_second_derivatives_match_torch(device):
    rng = random.Random(3)
    gen = torch.Generator().manual_seed(5)
    for _ in range(10):
        shape, kwargs = random_pool(rng)
        tx = torch.randn(shape, generator=gen, dtype=torch.float64, requires_grad=True)
        results = []
        for lib, f, x in ((torch, TF.max_pool2d, tx),
                          (mg, MF.max_pool2d, from_torch(mg, tx).to(device).requires_grad_())):
            y = f(x, **kwargs)
            (gx,) = lib.autograd.grad((y * y * y).sum(), (x,), create_graph=True)
            results.append(lib.autograd.grad((gx * gx).sum(), (x,))[0])
        np.testing.assert_allclose(numpy_of(results[1]), numpy_of(results[0]), rtol=0, atol=1e-10)


def test_refused_arguments_raise_torchs_kind(device):
    x = torch.randn(1, 2, 5, 5)
    cases = [
        dict(kernel_size=3, padding=2),  # pad more than half the kernel
        dict(kernel_size=0),
        dict(kernel_size=2, stride=0),
        dict(kernel_size=7),  # output too small
        dict(kernel_size=(2, 2, 2)),
    ]
    for kwargs in cases:
        with pytest.raises((RuntimeError, ValueError)) as expected:
            TF.max_pool2d(x, **kwargs)
        mx = from_torch(mg, x).to(device)
        with pytest.raises((RuntimeError, ValueError)) as got:
            MF.max_pool2d(mx, **kwargs)
        assert isinstance(got.value, expected.type), (kwargs, got.value, expected.value)
        assert mx._version == 0
    with pytest.raises(RuntimeError):
        MF.max_pool2d(mg.ones(1, 1, 4, 4, dtype=mg.int64).to(device), 2)
