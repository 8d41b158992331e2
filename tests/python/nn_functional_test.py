"""mutagrad.nn.functional and mutagrad.nn.init against torch 1.13: cross_entropy (class indices
with weight / ignore_index / label_smoothing / every reduction, spatial dims, one sample, class
probabilities), nll_loss, mse_loss, binary_cross_entropy_with_logits (weight, pos_weight),
softmax / log_softmax (dims, dtype=, the implicit dim), relu / sigmoid / tanh / linear, dropout:
values, gradients and node names over seeded random inputs, float64 and float32, logits of
+-1e4, error kinds, on the CPU and the host-run CUDA device. nn.init: torch's bounds and gains,
one version bump per call, the caller's line in a stale-tensor error.
"""

import itertools
import math
import random
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import mutagrad as mg
import mutagrad.nn.functional as MF
from lib_util import from_torch, numpy_of, same_kind

DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global DEVICE
    DEVICE = request.param
    yield
    DEVICE = "cpu"


def mgt(t, requires_grad=False):
    out = from_torch(mg, t.detach()).to(DEVICE)
    return out.requires_grad_() if requires_grad else out


def assert_close(m, t, rtol, what=""):
    a, b = numpy_of(m), numpy_of(t)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    assert str(m.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], what
    assert np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True), f"{what}:\n{a}\nvs torch\n{b}"


def differential(fn, inputs, consts=(), rtol=1e-10, what="", names=True):
    """fn(F, *inputs, *consts) in torch and mutagrad: values, the node name, and the gradients
    of sum(out * r) for every floating input."""
    t_in = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    m_in = [mgt(x, x.is_floating_point()) for x in inputs]
    t_c = [c if not isinstance(c, torch.Tensor) else c for c in consts]
    m_c = [mgt(c) if isinstance(c, torch.Tensor) else c for c in consts]
    t_out = fn(TF, *t_in, *t_c)
    m_out = fn(MF, *m_in, *m_c)
    assert_close(m_out, t_out, rtol, what)
    assert not names or m_out.grad_fn.name() == t_out.grad_fn.name(), what
    r = torch.rand(t_out.shape, dtype=t_out.dtype)
    (t_out * r).sum().backward()
    (m_out * mgt(r)).sum().backward()
    for i, (a, b) in enumerate(zip(m_in, t_in)):
        if b.grad is not None:
            assert_close(a.grad, b.grad, rtol, f"{what}: grad of input {i}")
    return m_out


def node_name(t):
    return t.grad_fn.name()


@pytest.mark.parametrize("seed", range(4))
def test_cross_entropy_class_indices_over_options(seed):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    for shape, ls, reduction, use_w, ignore in itertools.product(
        [(6, 4), (3, 5, 2), (5,)], [0.0, 0.15], ["mean", "sum", "none"], [False, True], [-100, 1]
    ):
        dtype = rng.choice([torch.float64, torch.float32])
        x = torch.randn(shape, generator=gen, dtype=dtype) * 3
        c = shape[0] if len(shape) == 1 else shape[1]
        tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
        target = torch.randint(0, c, tshape, generator=gen)
        w = torch.rand(c, generator=gen, dtype=dtype) + 0.5 if use_w else None
        what = f"{shape} ls={ls} {reduction} w={use_w} ignore={ignore} {dtype}"
        rtol = 1e-10 if dtype == torch.float64 else 2e-5
        out = differential(
            lambda F, a, t, w: F.cross_entropy(
                a, t, weight=w, ignore_index=ignore, reduction=reduction, label_smoothing=ls
            ),
            [x],
            [target, w],
            rtol,
            what,
        )
        if ls:
            assert node_name(out) == "AddBackward0", what


def test_cross_entropy_probabilities_and_nll_loss():
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(4, 3, 2, generator=gen, dtype=torch.float64)
    p = torch.softmax(torch.randn(4, 3, 2, generator=gen, dtype=torch.float64), 1)
    w = torch.tensor([0.5, 2.0, 1.0], dtype=torch.float64)
    for reduction, ls, weight in itertools.product(["mean", "sum", "none"], [0.0, 0.3], [None, w]):
        differential(
            lambda F, a, t: F.cross_entropy(
                a, t, weight=weight if F is TF else (None if weight is None else mgt(weight)),
                reduction=reduction, label_smoothing=ls
            ),
            [x, p],
            what=f"probabilities {reduction} {ls}",
            # torch's C++ divides by an int (DivBackward1); mutagrad's Python names every
            # division by a number DivBackward0, as torch's Python operators do.
            names=reduction != "mean",
        )
    lp = torch.log_softmax(torch.randn(5, 4, generator=gen, dtype=torch.float64), 1)
    t = torch.tensor([3, -1, 0, 2, -1])
    for reduction in ["mean", "sum", "none"]:
        out = differential(
            lambda F, a, t, w: F.nll_loss(a, t, weight=w, ignore_index=-1, reduction=reduction),
            [lp],
            [t, torch.tensor([1.0, 0.5, 2.0, 3.0], dtype=torch.float64)],
            what=f"nll {reduction}",
        )
        assert node_name(out) == "NllLossBackward0"
    # Legacy size_average / reduce.
    for sa, rd in [(False, None), (None, False), (True, True)]:
        differential(
            lambda F, a, t: F.nll_loss(a, t, size_average=sa, reduce=rd, ignore_index=-1),
            [lp],
            [t],
            what=f"legacy {sa} {rd}",
        )
    # Every sample ignored: NaN, as torch.
    assert math.isnan(MF.cross_entropy(mgt(lp), mgt(torch.tensor([-100] * 5))).item())


def test_mse_and_bce_with_logits():
    gen = torch.Generator().manual_seed(7)
    a = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    b = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    t01 = torch.rand(3, 4, generator=gen, dtype=torch.float64)
    w = torch.rand(4, generator=gen, dtype=torch.float64) + 0.5
    pw = torch.rand(4, generator=gen, dtype=torch.float64) * 3
    for reduction in ["mean", "sum", "none"]:
        out = differential(lambda F, x, y: F.mse_loss(x, y, reduction=reduction), [a, b])
        assert node_name(out) == "MseLossBackward0"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            differential(lambda F, x, y: F.mse_loss(x, y, reduction=reduction), [a, b[0]])
        for weight, pos_weight in itertools.product([None, w], [None, pw]):
            out = differential(
                lambda F, x, y, wt, p: F.binary_cross_entropy_with_logits(
                    x * 4, y, weight=wt, pos_weight=p, reduction=reduction
                ),
                [a, t01],
                [weight, pos_weight],
                what=f"bce {reduction} {weight is None} {pos_weight is None}",
            )
    out = MF.binary_cross_entropy_with_logits(mgt(a, True), mgt(t01))
    assert node_name(out) == "BinaryCrossEntropyWithLogitsBackward0"


def test_softmax_family_and_activations():
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(3, 4, 5, generator=gen, dtype=torch.float64)
    for dim in [0, 1, 2, -1]:
        out = differential(lambda F, a: F.softmax(a, dim=dim), [x], what=f"softmax {dim}")
        assert node_name(out) == "SoftmaxBackward0"
        out = differential(lambda F, a: F.log_softmax(a, dim), [x], what=f"log_softmax {dim}")
        assert node_name(out) == "LogSoftmaxBackward0"
    differential(lambda F, a: F.softmax(a, 1, dtype=torch.float64 if F is TF else mg.float64),
                 [x.float()], rtol=1e-6)
    # The implicit dim (with torch's deprecation warning): 0 for 1-D and 3-D, else 1.
    for shape in [(5,), (3, 4), (2, 3, 4)]:
        with pytest.warns(UserWarning):
            m = MF.softmax(mgt(torch.ones(shape)))
        assert_close(m, TF.softmax(torch.ones(shape), dim=0 if len(shape) != 2 else 1), 1e-7)
    assert_close(mgt(x).log_softmax(1), x.log_softmax(1), 1e-12)
    assert_close(mg.softmax(mgt(x), -1), torch.softmax(x, -1), 1e-12)
    for name in ["relu", "sigmoid", "tanh"]:
        differential(lambda F, a: getattr(F, name)(a), [x], what=name)
    wt = torch.randn(6, 5, generator=gen, dtype=torch.float64)
    bias = torch.randn(6, generator=gen, dtype=torch.float64)
    # Values and gradients only: torch's linear is one fused node (AddmmBackward0 or a view
    # of one), ours a matmul and an add.
    differential(lambda F, a, w, b: F.linear(a, w, b), [x, wt, bias], what="linear", names=False)
    differential(lambda F, a, w: F.linear(a, w), [x, wt], what="linear, no bias", names=False)


def test_extreme_logits_are_finite_where_torch_is():
    x = torch.tensor([[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4]], dtype=torch.float32)
    t = torch.tensor([1, 2])
    for ls in [0.0, 0.1]:
        out = differential(
            lambda F, a, t: F.cross_entropy(a, t, label_smoothing=ls), [x], [t], rtol=1e-6
        )
        assert np.isfinite(numpy_of(out)).all()
    for dim in [0, 1]:
        differential(lambda F, a: F.log_softmax(a, dim), [x], rtol=1e-6)
        differential(lambda F, a: F.softmax(a, dim), [x], rtol=1e-6)
    y = torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
    out = differential(
        lambda F, a, y: F.binary_cross_entropy_with_logits(a, y, reduction="none"), [x], [y],
        rtol=1e-6,
    )
    assert np.isfinite(numpy_of(out)).all()


def kind_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the kind is what is compared
        return type(e).__name__
    return "ok"


def test_error_kinds_match_torch_and_nothing_changes():
    x = torch.randn(4, 5)
    t = torch.tensor([1, 0, 4, 2])
    cases = {
        "class index out of range": lambda F, x, t: F.cross_entropy(x, t * 2),
        "negative class index": lambda F, x, t: F.nll_loss(x, t - 1),
        "int32 target": lambda F, x, t: F.cross_entropy(x, t.int()),
        "float target of another shape": lambda F, x, t: F.cross_entropy(x, x[:, :3]),
        "batch size": lambda F, x, t: F.cross_entropy(x, t[:3]),
        "bad reduction": lambda F, x, t: F.cross_entropy(x, t, reduction="avg"),
        "weight size": lambda F, x, t: F.cross_entropy(x, t, weight=x[0, :4]),
        "label smoothing": lambda F, x, t: F.cross_entropy(x, t, label_smoothing=1.5),
        "softmax dim": lambda F, x, t: F.softmax(x, 2),
        "softmax of integers": lambda F, x, t: F.softmax(t, 0),
        "bce target size": lambda F, x, t: F.binary_cross_entropy_with_logits(x, x[0]),
        "mse shapes": lambda F, x, t: F.mse_loss(x, x[:3]),
        "dropout p": lambda F, x, t: F.dropout(x, 1.5),
    }
    mx, mt = mgt(x, True), mgt(t)
    tx = x.clone().requires_grad_()
    for what, fn in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, got = kind_of(lambda: fn(TF, tx, t)), kind_of(lambda: fn(MF, mx, mt))
        assert want != "ok" and same_kind(want, got), f"{what}: torch {want}, mutagrad {got}"
    assert mx._version == 0 and mt._version == 0
    assert np.array_equal(numpy_of(mx), x.numpy()) and np.array_equal(numpy_of(mt), t.numpy())
    with pytest.raises(IndexError, match=r"target 8 is out of bounds.*\[0, 4\]"):
        MF.cross_entropy(mx, mt * 2)
    with pytest.raises(RuntimeError, match="weight"):
        MF.cross_entropy(mx, mt, weight=mg.ones(5, requires_grad=True).to(DEVICE))


def test_gradgradcheck():
    x = mg.randn(3, 4, dtype=mg.float64).to(DEVICE).requires_grad_()
    t = mg.tensor([0, 3, 1]).to(DEVICE)
    assert mg.autograd.gradgradcheck(lambda a: MF.cross_entropy(a, t, label_smoothing=0.2), (x,))
    assert mg.autograd.gradgradcheck(lambda a: MF.softmax(a, 1), (x,))
    y = mg.rand(3, 4, dtype=mg.float64).to(DEVICE).requires_grad_()
    assert mg.autograd.gradgradcheck(MF.binary_cross_entropy_with_logits, (x, y))


def test_dropout():
    x = mg.ones(10000, dtype=mg.float64)
    mg.manual_seed(0)
    y = MF.dropout(x, 0.25)
    vals = set(np.unique(numpy_of(y)).tolist())
    assert vals <= {0.0, 1.0 / 0.75} and abs(numpy_of(y).mean() - 1.0) < 0.05
    assert MF.dropout(x, 0.5, training=False) is x
    assert numpy_of(MF.dropout(x, 1.0)).sum() == 0
    z = mg.ones(100)
    MF.dropout(z, 0.5, inplace=True)
    assert z._version == 1


def test_init_follows_torch_formulas():
    mg.manual_seed(0)
    w = mg.empty(128, 64, requires_grad=True)
    mg.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = 1 / 8  # torch.nn.Linear's: gain sqrt(2 / 6) * sqrt(3 / 64)
    v = numpy_of(w)
    assert v.min() >= -bound and v.max() < bound and v.max() > 0.12 and v.min() < -0.12
    assert w._version == 1 and w.is_leaf and w.requires_grad
    for name, param in [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("sigmoid", None)]:
        assert mg.nn.init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param)
        )
    k = mg.empty(10, 4, 3, 3)
    assert mg.nn.init._calculate_fan_in_and_fan_out(k) == (36, 90)
    x = mg.empty(20, 30)
    mg.nn.init.xavier_uniform_(x, gain=2.0)
    assert np.abs(numpy_of(x)).max() <= 2.0 * math.sqrt(6 / 50)
    b = mg.empty(1000)
    mg.nn.init.uniform_(b, -0.5, 0.5)
    assert numpy_of(b).min() >= -0.5 and numpy_of(b).max() < 0.5
    mg.nn.init.normal_(b, mean=2.0, std=0.1)
    assert abs(numpy_of(b).mean() - 2.0) < 0.02
    mg.nn.init.zeros_(b)
    mg.nn.init.ones_(b)
    assert numpy_of(b).sum() == 1000 and b._version == 4
    # Same seed, same parameters.
    mg.manual_seed(3)
    a1 = mg.nn.init.kaiming_uniform_(mg.empty(4, 4))
    mg.manual_seed(3)
    a2 = mg.nn.init.kaiming_uniform_(mg.empty(4, 4))
    assert np.array_equal(numpy_of(a1), numpy_of(a2))
    for bad in [lambda: mg.nn.init.kaiming_uniform_(mg.empty(5)),
                lambda: mg.nn.init.kaiming_uniform_(mg.empty(2, 3), mode="fan_avg"),
                lambda: mg.nn.init.calculate_gain("swish")]:
        with pytest.raises((ValueError, RuntimeError)):
            bad()


def test_init_write_names_the_callers_line():
    w = mg.zeros(3, 3, dtype=mg.float64, requires_grad=True)
    y = (w * w).sum()
    line = __import__("inspect").currentframe().f_lineno + 1
    mg.nn.init.normal_(w)
    with pytest.raises(RuntimeError, match=f"nn_functional_test.py:{line}"):
        y.backward()


def train_script(lib, w1, b1, w2, b2, x, y, steps=40):
    """A torch training loop, unchanged for `import mutagrad as lib`: F.linear/relu/
    cross_entropy with label smoothing, AdamW, masking a few pixels with x[idx] = 0."""
    F = lib.nn.functional
    params = [p.clone().requires_grad_() for p in (w1, b1, w2, b2)]
    opt = lib.optim.AdamW(params, lr=3e-2, weight_decay=1e-2)
    losses = []
    for step in range(steps):
        xb = x.clone()
        xb[lib.arange(8), lib.tensor([step % 16] * 8)] = 0.0
        logits = F.linear(F.relu(F.linear(xb, params[0], params[1])), params[2], params[3])
        loss = F.cross_entropy(logits, y, label_smoothing=0.05)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, params


def test_a_torch_training_script_runs_unchanged():
    gen = torch.Generator().manual_seed(11)
    tensors = [
        torch.randn(12, 16, generator=gen, dtype=torch.float64) * 0.3,
        torch.zeros(12, dtype=torch.float64),
        torch.randn(4, 12, generator=gen, dtype=torch.float64) * 0.3,
        torch.zeros(4, dtype=torch.float64),
        torch.rand(8, 16, generator=gen, dtype=torch.float64),
    ]
    y = torch.randint(0, 4, (8,), generator=gen)
    t_losses, t_params = train_script(torch, *tensors, y)
    m_losses, m_params = train_script(mg, *[mgt(t) for t in tensors], mgt(y))
    assert t_losses[-1] < 0.5 * t_losses[0]  # it learns
    np.testing.assert_allclose(m_losses, t_losses, rtol=1e-9)
    for m, t in zip(m_params, t_params):
        assert_close(m, t.detach(), 1e-9, "parameters after training")
