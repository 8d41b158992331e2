"""Convolution's second order against torch 1.13 (issue 37): gradcheck and gradgradcheck in
float64 over conv1d, conv2d, conv_transpose1d and conv_transpose2d geometries (stride, padding,
dilation, groups, output_padding, bias), and Hessian-vector products of a small CNN's loss
(conv2d, tanh, max_pool2d, a strided grouped conv2d, avg_pool2d, linear, cross entropy)
against torch.autograd.functional.hvp on the same weights and direction: by double backward
(mutagrad.autograd.functional.hvp/vhp) and by forward-over-reverse. Runs mutagrad on the CPU and
the (host-run) CUDA device.
"""

import numpy as np
import pytest
import torch

import mutagrad as mg
import mutagrad.autograd.functional as MAF
import mutagrad.nn.functional as MF
import torch.autograd.functional as TAF
import torch.nn.functional as TF
from lib_util import from_torch, numpy_of


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    return request.param


# (op, input shape, weight shape, bias, keyword arguments): small enough for finite differences.
GEOMETRIES = [
    ("conv1d", (2, 2, 7), (3, 2, 3), True, dict(stride=2, padding=1)),
    ("conv1d", (1, 4, 9), (4, 2, 2), False, dict(dilation=3, groups=2)),
    ("conv2d", (2, 2, 5, 4), (3, 2, 3, 2), True, dict(stride=(2, 1), padding=(1, 0))),
    ("conv2d", (1, 4, 6, 5), (2, 2, 2, 3), True, dict(dilation=(2, 1), groups=2, padding=1)),
    ("conv2d", (1, 3, 4, 4), (3, 1, 1, 1), False, dict(groups=3)),
    ("conv_transpose1d", (2, 2, 4), (2, 3, 3), True,
     dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 2, 2, 3), True,
     dict(stride=(2, 1), dilation=(1, 2), padding=(0, 1))),
    ("conv_transpose2d", (1, 4, 3, 2), (4, 1, 3, 2), False,
     dict(stride=2, groups=2, output_padding=(1, 0))),
]


@pytest.mark.parametrize("case", range(len(GEOMETRIES)))
def test_gradcheck_and_gradgradcheck_float64(device, case):
    name, x_shape, w_shape, bias, kwargs = GEOMETRIES[case]
    f = getattr(MF, name)
    gen = torch.Generator().manual_seed(case)
    tensors = [torch.randn(x_shape, generator=gen, dtype=torch.float64),
               torch.randn(w_shape, generator=gen, dtype=torch.float64)]
    if bias:
        out_channels = w_shape[0] if "transpose" not in name else w_shape[1] * kwargs.get(
            "groups", 1)
        tensors.append(torch.randn(out_channels, generator=gen, dtype=torch.float64))
    inputs = tuple(from_torch(mg, t).to(device).requires_grad_() for t in tensors)

    def fn(*args):
        return f(*args, **kwargs)

    assert mg.autograd.gradcheck(fn, inputs)
    assert mg.autograd.gradgradcheck(fn, inputs)
    # torch agrees that these are the derivatives checked: the same geometry passes there too.
    t_inputs = tuple(t.clone().requires_grad_() for t in tensors)
    t_fn = getattr(TF, name)
    assert torch.autograd.gradgradcheck(lambda *a: t_fn(*a, **kwargs), t_inputs)


def cnn_loss(lib, F, target):
    """The loss of a small CNN as a function of its weights; `target` is the lib's labels."""

    def loss(x, w1, b1, w2, b2, wl, bl):
        h = F.conv2d(x, w1, b1, padding=1).tanh()
        h = F.max_pool2d(h, 2)
        h = F.conv2d(h, w2, b2, stride=1, padding=1, groups=2).tanh()
        h = F.avg_pool2d(h, 2)
        h = h.reshape(h.shape[0], -1)
        return F.cross_entropy(h.matmul(wl.t()) + bl, target)

    return loss


def cnn_case(seed):
    gen = torch.Generator().manual_seed(seed)

    def r(*shape, scale=0.5):
        return torch.randn(shape, generator=gen, dtype=torch.float64) * scale

    x = r(3, 2, 8, 8, scale=1.0)
    weights = (r(4, 2, 3, 3), r(4), r(6, 2, 3, 3), r(6), r(5, 24), r(5))
    direction = tuple(r(*w.shape, scale=1.0) for w in weights)
    target = torch.tensor([0, 3, 4])
    return x, weights, direction, target


def close(got, want, rtol):
    want = want.detach().numpy()
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(numpy_of(got), want, rtol=0, atol=rtol * scale)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cnn_loss_hvp_matches_torch(device, seed):
    x, weights, direction, target = cnn_case(seed)
    t_loss = cnn_loss(torch, TF, target)
    t_out, t_hv = TAF.hvp(lambda *w: t_loss(x, *w), weights, direction)

    mx = from_torch(mg, x).to(device)
    mw = tuple(from_torch(mg, w).to(device) for w in weights)
    mv = tuple(from_torch(mg, v).to(device) for v in direction)
    m_loss = cnn_loss(mg, MF, from_torch(mg, target).to(device))
    m_out, m_hv = MAF.hvp(lambda *w: m_loss(mx, *w), mw, mv)
    assert abs(m_out.item() - t_out.item()) < 1e-12
    assert len(m_hv) == len(t_hv)
    assert len(m_hv) == len(t_hv)
    for got, want in zip(m_hv, t_hv):
        close(got, want, 1e-10)
    # H is symmetric: v^T H gives the same products.
    _, m_vh = MAF.vhp(lambda *w: m_loss(mx, *w), mw, mv)
    assert len(m_vh) == len(t_hv)
    for got, want in zip(m_vh, t_hv):
        close(got, want, 1e-10)
    # Forward-over-reverse: the tangent of the gradient along v.
    _, fwd = mg._C._forward_over_reverse_hvp(lambda *w: m_loss(mx, *w), list(mw), list(mv),
                                              False)
    assert len(fwd) == len(t_hv)
    for got, want in zip(fwd, t_hv):
        close(got, want, 1e-10)


def test_cnn_hvp_sees_a_weight_written_between_hvps(device):
    # An in-place update of a weight between two HVPs (an optimizer step) changes the second,
    # as in torch: nothing from the first pass is reused.
    x, weights, direction, target = cnn_case(5)
    t_loss = cnn_loss(torch, TF, target)
    mx = from_torch(mg, x).to(device)
    mw = tuple(from_torch(mg, w).to(device) for w in weights)
    mv = tuple(from_torch(mg, v).to(device) for v in direction)
    m_loss = cnn_loss(mg, MF, from_torch(mg, target).to(device))
    MAF.hvp(lambda *w: m_loss(mx, *w), mw, mv)
    with mg.no_grad():
        mw[0].mul_(0.5)
    t_weights = (weights[0] * 0.5,) + weights[1:]
    _, t_hv = TAF.hvp(lambda *w: t_loss(x, *w), t_weights, direction)
    _, m_hv = MAF.hvp(lambda *w: m_loss(mx, *w), mw, mv)
    assert len(m_hv) == len(t_hv)
    for got, want in zip(m_hv, t_hv):
        close(got, want, 1e-10)
