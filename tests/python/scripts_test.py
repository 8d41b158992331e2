"""Typical torch scripts, run unchanged with `lib = torch` and `lib = mutagrad` (issue 21's "a
tutorial or training script that stays inside tensors + autograd runs unchanged"): each script
is a function of the library that returns plain Python numbers, and torch 1.13 is the oracle.
The kinds: the autograd tutorial, a manual SGD loop, in-place work on views, masked assignment,
Hessian-vector products, gradcheck, printing, NumPy interop, a small MLP trained on a toy
problem, normalisation statistics, integer arithmetic, rounding, products and einsum, segment
sums, top-1 accuracy, cleaning NaNs, a causal attention mask, dtype conversions, and running
sums.
"""

import math

import numpy as np
import pytest
import torch

import mutagrad as mg


def flat(x):
    """A tensor (of either library), number or nested structure as a flat list of floats."""
    if isinstance(x, (torch.Tensor, mg.Tensor)):
        return [float(v) for v in np.asarray(x.detach().cpu().numpy(), dtype=np.float64).ravel()]
    if isinstance(x, np.ndarray):
        return [float(v) for v in x.astype(np.float64).ravel()]
    if isinstance(x, (list, tuple)):
        return [v for e in x for v in flat(e)]
    if isinstance(x, bool):
        return [float(x)]
    return [float(x)]


def autograd_tutorial(lib):
    x = lib.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    out.backward()
    return [out, x.grad, y.grad_fn is not None, x.is_leaf, y.is_leaf]


def manual_sgd(lib):
    xs = lib.linspace(-1, 1, 20).reshape(20, 1)
    ys = 3 * xs - 0.5
    w = lib.zeros(1, 1, requires_grad=True)
    b = lib.zeros(1, requires_grad=True)
    losses = []
    for _ in range(25):
        loss = ((xs @ w + b - ys) ** 2).mean()
        loss.backward()
        with lib.no_grad():
            w -= 0.3 * w.grad
            b -= 0.3 * b.grad
        w.grad.zero_()
        b.grad.zero_()
        losses.append(loss.item())
    return [losses, w, b]


def views_in_place(lib):
    a = lib.zeros(3, 4)
    a[1] += 1
    a[:, 2].mul_(3)
    a[:, 2] += 2
    a.t()[0].fill_(5)
    row = a[2]
    row.add_(lib.arange(4.0))
    return [a, a._version, row._version]


def masked_assignment(lib):
    x = lib.arange(-4.0, 5.0).reshape(3, 3)
    x[x > 2] = 0
    x[x < -2] = lib.tensor([7.0, 8.0])
    mask = (x % 2) == 1
    x.masked_fill_(mask, -1)
    return [x, mask.sum(), x[mask].numel()]


def hessian_vector(lib):
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    f = (x ** 3).sum() + x.prod()
    (g,) = lib.autograd.grad(f, x, create_graph=True)
    v = lib.tensor([1.0, 0.0, -1.0], dtype=lib.float64)
    (hv,) = lib.autograd.grad(g, x, grad_outputs=v)
    _, hvp = lib.autograd.functional.hvp(lambda t: (t ** 3).sum() + t.prod(), x.detach(), v)
    return [g, hv, hvp]


def gradient_check(lib):
    def fn(a, b):
        return (a * b).sin().sum(dim=0) + a.exp() * b.clamp(min=0.1)

    a = lib.rand(3, 2, dtype=lib.float64, requires_grad=True)
    b = lib.rand(3, 2, dtype=lib.float64, requires_grad=True)
    return [lib.autograd.gradcheck(fn, (a, b)), lib.autograd.gradgradcheck(fn, (a, b))]


def printing(lib):
    loss = lib.tensor(0.123456)
    t = lib.tensor([1.5, 2.25])
    return [f"{loss:.4f}", f"{loss.item():.2e}", f"{t[0].item():.1f}", str(t.tolist()),
            len(t), t.shape[0], t.dim(), t.numel(), int(lib.tensor(7)), bool(lib.tensor([1]))]


def numpy_interop(lib):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = lib.from_numpy(a)
    t[0, 0] = 100  # shares memory
    back = (t * 2).numpy()
    u = lib.tensor(a) + lib.as_tensor(np.ones(3, dtype=np.float32))
    return [float(a[0, 0]), back, u, np.asarray(t).sum()]


def tiny_mlp(lib):
    g = np.random.default_rng(0)
    x = lib.tensor(g.standard_normal((64, 2)), dtype=lib.float32)
    y = (x[:, 0] * x[:, 1] > 0).long()
    w1 = lib.tensor(g.standard_normal((2, 16)) * 0.5, dtype=lib.float32, requires_grad=True)
    b1 = lib.zeros(16, requires_grad=True)
    w2 = lib.tensor(g.standard_normal((16, 2)) * 0.5, dtype=lib.float32, requires_grad=True)
    b2 = lib.zeros(2, requires_grad=True)
    losses = []
    for _ in range(30):
        h = (x @ w1 + b1).relu()
        logits = h @ w2 + b2
        logp = logits - logits.logsumexp(dim=1, keepdim=True)
        loss = -logp.gather(1, y.unsqueeze(1)).mean()
        loss.backward()
        with lib.no_grad():
            for p in (w1, b1, w2, b2):
                p.sub_(0.5 * p.grad)
                p.grad.zero_()
        losses.append(loss.item())
    accuracy = (logits.argmax(dim=1) == y).float().mean()
    return [losses, accuracy]


def normalisation(lib):
    x = lib.arange(12.0).reshape(3, 4) ** 1.5
    z = (x - x.mean(dim=0, keepdim=True)) / x.std(dim=0, keepdim=True)
    n = x / x.norm(dim=1, keepdim=True)
    return [z, n, x.var(), x.amax(dim=1), x.amin(), x.std(unbiased=False)]


def integer_arithmetic(lib):
    i = lib.arange(-7, 8)
    return [i // 3, i % 3, lib.fmod(i, 3), i.div(2, rounding_mode="trunc"), i & 5, i | 8,
            i ^ 1, i << 2, i >> 1, ~i, (i % 4 == 0).sum(), i.abs().max()]


def rounding(lib):
    x = lib.tensor([-2.5, -1.5, -0.4, 0.5, 1.5, 2.675, 3.7])
    return [x.floor(), x.ceil(), x.round(), x.round(decimals=1), x.trunc(), x.frac(), x.sign()]


def products(lib):
    a = lib.arange(6.0).reshape(2, 3)
    b = lib.arange(12.0).reshape(3, 4)
    v = lib.arange(3.0)
    batch = lib.arange(24.0).reshape(2, 3, 4)
    return [a @ b, lib.mm(a, b), lib.mv(a, v), lib.dot(v, v), lib.outer(v, v),
            lib.einsum("ij,jk->ik", a, b), lib.einsum("bij->bji", batch), lib.einsum("ii", b[:, :3]),
            lib.bmm(batch.transpose(1, 2), batch), lib.addmm(lib.ones(2, 4), a, b, beta=0.5)]


def segment_sums(lib):
    values = lib.arange(10.0)
    segment = lib.tensor([0, 0, 1, 1, 1, 2, 3, 3, 3, 3])
    sums = lib.zeros(4).scatter_add_(0, segment, values)
    counts = lib.zeros(4).index_add_(0, segment, lib.ones(10))
    maxes = lib.zeros(4).scatter_reduce(0, segment, values, "amax", include_self=False)
    return [sums, counts, sums / counts, maxes]


def top1_accuracy(lib):
    logits = lib.tensor([[0.1, 2.0, -1.0], [3.0, 0.5, 0.2], [0.0, 0.1, 0.3], [1.0, 1.5, 0.9]])
    labels = lib.tensor([1, 0, 1, 1])
    pred = logits.argmax(dim=1)
    correct = pred.eq(labels)
    picked = logits.gather(1, labels.view(-1, 1)).squeeze(1)
    return [correct.float().mean(), picked, correct.all(), correct.any()]


def cleaning(lib):
    x = lib.tensor([1.0, float("nan"), float("inf"), -float("inf"), -3.0])
    clean = lib.nan_to_num(x, nan=0.0, posinf=10.0, neginf=-10.0)
    return [clean, x.isnan(), x.isinf(), x.isfinite(), clean.clamp(-5, 5), clean.clamp_min(0),
            lib.where(x.isfinite(), x, lib.zeros_like(x))]


def causal_mask(lib):
    t = 4
    scores = lib.arange(16.0).reshape(t, t) / 10
    mask = lib.ones(t, t).tril().bool()
    masked = scores.masked_fill(~mask, float("-inf"))
    weights = (masked - masked.logsumexp(dim=-1, keepdim=True)).exp()
    return [weights, weights.sum(dim=-1), lib.triu(lib.ones(3, 3), diagonal=1), lib.eye(3)]


def dtypes(lib):
    x = lib.tensor([1.7, -2.2, 3.0])
    return [str(x.long().dtype).split(".")[-1], x.long(), x.int(), x.double().dtype == lib.float64,
            (x.long() + 0.5).dtype == lib.float32, (x > 0).dtype == lib.bool,
            x.to(lib.int32).sum().dtype == lib.int64]


def running_sums(lib):
    x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    c = x.cumsum(dim=1)
    p = x.cumprod(dim=0)
    (c.sum() + p.sum()).backward()
    return [c, p, x.grad, lib.arange(5).cumsum(0)]


SCRIPTS = [autograd_tutorial, manual_sgd, views_in_place, masked_assignment, hessian_vector,
           gradient_check, printing, numpy_interop, tiny_mlp, normalisation, integer_arithmetic,
           rounding, products, segment_sums, top1_accuracy, cleaning, causal_mask, dtypes,
           running_sums]


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.__name__ for s in SCRIPTS])
def test_script_runs_unchanged_and_matches_torch(script):
    want = script(torch)
    got = script(mg)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, str):
            assert g == w, (script.__name__, k)
            continue
        gv, wv = flat(g), flat(w)
        assert len(gv) == len(wv), (script.__name__, k, gv, wv)
        assert np.allclose(gv, wv, rtol=1e-5, atol=1e-6, equal_nan=True), (script.__name__, k,
                                                                            gv, wv)


def test_every_script_kind_is_here():
    assert len(SCRIPTS) == 19
    assert not math.isnan(sum(flat(tiny_mlp(mg)[0])))
