"""max_pool1d, avg_pool1d/2d, adaptive_avg_pool1d/2d, adaptive_max_pool2d, unfold and fold against
torch 1.13 over random geometries (kernel, stride, padding, dilation, ceil_mode,
count_include_pad, divisor_override, odd sizes, batched and unbatched, contiguous and transposed
inputs): values, indices, input gradients in float32 and float64; node names; gradcheck and
gradgradcheck in float64; refused arguments (torch's exception kind, the input unchanged); the
modules' repr. Runs mutagrad on the CPU and the (host-run) CUDA device. (max_pool2d: pool_test.py.)
"""

import random

import numpy as np
import pytest
import torch

import mutagrad as mg
import mutagrad.nn as mnn
import mutagrad.nn.functional as MF
import torch.nn as tnn
import torch.nn.functional as TF
from lib_util import from_torch, numpy_of


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    return request.param


def maybe(rng, p, value):
    return value if rng.random() < p else None


def max_pool1d_case(rng):
    k = rng.randint(1, 5)
    return "max_pool1d", 1, dict(
        kernel_size=k, stride=maybe(rng, 0.7, rng.randint(1, 3)), padding=rng.randint(0, k // 2),
        dilation=rng.choice([1, 1, 2, 3]), ceil_mode=rng.random() < 0.5, return_indices=True)


def avg_pool1d_case(rng):
    k = rng.randint(1, 5)
    return "avg_pool1d", 1, dict(
        kernel_size=k, stride=maybe(rng, 0.7, rng.randint(1, 3)), padding=rng.randint(0, k // 2),
        ceil_mode=rng.random() < 0.5, count_include_pad=rng.random() < 0.5)


def avg_pool2d_case(rng):
    k = [rng.randint(1, 4), rng.randint(1, 4)]
    if rng.random() < 0.3:
        k = k[0]
    kk = [k, k] if isinstance(k, int) else k
    return "avg_pool2d", 2, dict(
        kernel_size=k, stride=maybe(rng, 0.7, [rng.randint(1, 3), rng.randint(1, 3)]),
        padding=[rng.randint(0, kk[0] // 2), rng.randint(0, kk[1] // 2)],
        ceil_mode=rng.random() < 0.5, count_include_pad=rng.random() < 0.5,
        divisor_override=maybe(rng, 0.25, rng.choice([1, 2, 3, 5, 7])))


def adaptive_avg_pool1d_case(rng):
    return "adaptive_avg_pool1d", 1, dict(output_size=rng.randint(1, 11))


def adaptive_avg_pool2d_case(rng):
    o = [rng.randint(1, 11), rng.randint(1, 11)]
    if rng.random() < 0.2:
        o[rng.randint(0, 1)] = None
    return "adaptive_avg_pool2d", 2, dict(output_size=o if rng.random() < 0.8 else o[0] or 1)


def adaptive_max_pool2d_case(rng):
    o = [rng.randint(1, 11), rng.randint(1, 11)]
    return "adaptive_max_pool2d", 2, dict(output_size=o, return_indices=True)


def unfold_case(rng):
    return "unfold", 2, dict(
        kernel_size=[rng.randint(1, 4), rng.randint(1, 4)], dilation=[rng.randint(1, 2), 1],
        padding=[rng.randint(0, 2), rng.randint(0, 2)],
        stride=[rng.randint(1, 3), rng.randint(1, 3)])


CASES = [max_pool1d_case, avg_pool1d_case, avg_pool2d_case, adaptive_avg_pool1d_case,
         adaptive_avg_pool2d_case, adaptive_max_pool2d_case, unfold_case]

NODES = {
    "max_pool1d": "SqueezeBackward1",
    "avg_pool1d": "SqueezeBackward1",
    "avg_pool2d": "AvgPool2DBackward0",
    "adaptive_avg_pool1d": "SqueezeBackward1",
    "adaptive_avg_pool2d": "AdaptiveAvgPool2DBackward0",
    "adaptive_max_pool2d": "AdaptiveMaxPool2DBackward0",
    "unfold": "Im2ColBackward0",
    "fold": "Col2ImBackward0",
}


def random_case(rng, make):
    """(op, shape, kwargs, transposed) that torch accepts, its output finite."""
    while True:
        name, dims, kwargs = make(rng)
        shape = [rng.randint(1, 3), rng.randint(1, 3)] + [rng.randint(1, 9) for _ in range(dims)]
        if rng.random() < 0.2 and name != "unfold":
            shape = shape[1:]
        try:
            with torch.no_grad():
                y = getattr(TF, name)(torch.zeros(shape, requires_grad=True), **kwargs)
        except RuntimeError:
            continue
        y = y[0] if isinstance(y, tuple) else y
        # A max-pool window of padding only (-inf): torch 1.13's backward writes past the input.
        if torch.isinf(y).any():
            continue
        return name, shape, kwargs, rng.random() < 0.3


def pair(lib, shape, transposed, dtype, gen, device):
    """The same input for torch and mutagrad: contiguous, or the transpose of a contiguous one."""
    base_shape = shape[::-1] if transposed else shape
    base = torch.randn(base_shape, generator=gen, dtype=dtype)
    mx = from_torch(mg, base).to(device)
    if transposed:
        perm = list(range(len(shape)))[::-1]
        base, mx = base.permute(perm), mx.permute(perm)
    return base.requires_grad_(), mx.requires_grad_()


def tolerance(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("make", CASES, ids=lambda f: f.__name__[:-5])
def test_random_geometries_match_torch(device, dtype, make):
    rng = random.Random(hash((make.__name__, str(dtype))) % 1000)
    gen = torch.Generator().manual_seed(3)
    for _ in range(60):
        name, shape, kwargs, transposed = random_case(rng, make)
        tx, mx = pair(mg, shape, transposed, dtype, gen, device)
        ty = getattr(TF, name)(tx, **kwargs)
        my = getattr(MF, name)(mx, **kwargs)
        where = (name, shape, kwargs, transposed)
        if isinstance(ty, tuple):
            (ty, ti), (my, mi) = ty, my
            assert np.array_equal(numpy_of(mi), numpy_of(ti)), where
        if ty.grad_fn is not None and type(ty.grad_fn).__name__ != "MeanBackward1":
            assert my.grad_fn.name() == NODES[name] == type(ty.grad_fn).__name__, where
        assert tuple(my.shape) == tuple(ty.shape), where
        np.testing.assert_allclose(numpy_of(my), numpy_of(ty), **tolerance(dtype), err_msg=str(where))
        tg = torch.randn(ty.shape, generator=gen, dtype=dtype)
        (ty * tg).sum().backward()
        (my * from_torch(mg, tg).to(device)).sum().backward()
        np.testing.assert_allclose(numpy_of(mx.grad), numpy_of(tx.grad), **tolerance(dtype),
                                   err_msg=str(where))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fold_matches_torch(device, dtype):
    rng = random.Random(17)
    gen = torch.Generator().manual_seed(4)
    checked = 0
    while checked < 60:
        k = [rng.randint(1, 4), rng.randint(1, 4)]
        kw = dict(kernel_size=k, dilation=[rng.randint(1, 2), rng.randint(1, 2)],
                  padding=[rng.randint(0, 2), rng.randint(0, 2)],
                  stride=[rng.randint(1, 3), rng.randint(1, 3)])
        out = [rng.randint(1, 9), rng.randint(1, 9)]
        try:
            length = TF.unfold(torch.zeros(1, 1, *out), **kw).shape[-1]
        except RuntimeError:
            continue
        checked += 1
        shape = [rng.randint(1, 3), rng.randint(1, 3) * k[0] * k[1], length]
        if rng.random() < 0.2:
            shape = shape[1:]
        transposed = rng.random() < 0.3
        tx, mx = pair(mg, shape, transposed, dtype, gen, device)
        ty, my = TF.fold(tx, out, **kw), MF.fold(mx, out, **kw)
        where = (shape, out, kw, transposed)
        assert my.grad_fn.name() == "Col2ImBackward0" == type(ty.grad_fn).__name__
        assert tuple(my.shape) == tuple(ty.shape), where
        np.testing.assert_allclose(numpy_of(my), numpy_of(ty), **tolerance(dtype), err_msg=str(where))
        tg = torch.randn(ty.shape, generator=gen, dtype=dtype)
        (ty * tg).sum().backward()
        (my * from_torch(mg, tg).to(device)).sum().backward()
        np.testing.assert_allclose(numpy_of(mx.grad), numpy_of(tx.grad), **tolerance(dtype),
                                   err_msg=str(where))


def test_second_derivatives_match_torch(device):
    rng = random.Random(23)
    gen = torch.Generator().manual_seed(5)
    for make in CASES:
        for _ in range(4):
            name, shape, kwargs, transposed = random_case(rng, make)
            kwargs = {k: v for k, v in kwargs.items() if k != "return_indices"}
            tx, mx = pair(mg, shape, transposed, torch.float64, gen, device)
            results = []
            for lib, F, x in ((torch, TF, tx), (mg, MF, mx)):
                y = getattr(F, name)(x, **kwargs)
                (gx,) = lib.autograd.grad((y * y * y).sum(), (x,), create_graph=True)
                results.append(lib.autograd.grad((gx * gx).sum(), (x,))[0])
            np.testing.assert_allclose(numpy_of(results[1]), numpy_of(results[0]), rtol=1e-10,
                                       atol=1e-10, err_msg=str((name, shape, kwargs)))


def test_gradcheck_and_gradgradcheck(device):
    x = mg.randn(2, 2, 5, 6, dtype=mg.float64).to(device).requires_grad_()
    x1 = mg.randn(2, 3, 7, dtype=mg.float64).to(device).requires_grad_()
    cols = mg.randn(2, 2 * 6, 9, dtype=mg.float64).to(device).requires_grad_()
    fns = [
        (lambda a: MF.max_pool1d(a, 3, 2, 1, 2, ceil_mode=True), x1),
        (lambda a: MF.avg_pool1d(a, 3, 2, 1, True, False), x1),
        (lambda a: MF.avg_pool2d(a, (3, 2), (2, 1), 1, True, False), x),
        (lambda a: MF.avg_pool2d(a, 2, padding=1, divisor_override=3), x),
        (lambda a: MF.adaptive_avg_pool1d(a, 4), x1),
        (lambda a: MF.adaptive_avg_pool2d(a, (3, 4)), x),
        (lambda a: MF.adaptive_max_pool2d(a, (4, 3)), x),
        (lambda a: MF.unfold(a, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), x),
        (lambda a: MF.fold(a, (5, 6), (2, 3), padding=1, stride=2), cols),
    ]
    for f, a in fns:
        assert mg.autograd.gradcheck(f, (a,))
        assert mg.autograd.gradgradcheck(f, (a,))


# (op, keyword arguments, the node of its backward under create_graph: torch 1.13's names).
DOUBLE_BACKWARD = [
    ("max_pool2d", dict(kernel_size=3, stride=2, padding=1),
     "MaxPool2DWithIndicesBackwardBackward0"),
    ("avg_pool2d", dict(kernel_size=3, stride=1, padding=1, count_include_pad=False),
     "AvgPool2DBackwardBackward0"),
    ("adaptive_avg_pool2d", dict(output_size=(3, 4)), "AdaptiveAvgPool2DBackwardBackward0"),
    ("adaptive_max_pool2d", dict(output_size=(4, 3)), "AdaptiveMaxPool2DBackwardBackward0"),
]


@pytest.mark.parametrize("case", range(len(DOUBLE_BACKWARD)))
def test_backward_nodes_and_their_tangents_match_torch(device, case):
    """A pooling's backward under create_graph records torch's BackwardBackward0 node, and the
    tangent of the gradient (forward-over-reverse through the backward's kernel) is torch's
    Hessian-vector product. Overlapping windows, so an input element gathers several."""
    name, kwargs, node = DOUBLE_BACKWARD[case]
    gen = torch.Generator().manual_seed(11 + case)
    tx = torch.randn(2, 2, 7, 6, generator=gen, dtype=torch.float64)
    tv = torch.randn(tx.shape, generator=gen, dtype=torch.float64)

    def loss(F, x):
        y = getattr(F, name)(x, **kwargs)
        return (y * y * y).sum()

    t = tx.clone().requires_grad_()
    (tg,) = torch.autograd.grad(loss(TF, t), (t,), create_graph=True)
    mx = from_torch(mg, tx).to(device).requires_grad_()
    (mgx,) = mg.autograd.grad(loss(MF, mx), (mx,), create_graph=True)
    assert tg.grad_fn.name() == node
    assert mgx.grad_fn.name() == node
    np.testing.assert_allclose(numpy_of(mgx), tg.detach().numpy(), rtol=1e-12, atol=1e-12)
    _, t_hv = torch.autograd.functional.hvp(lambda x: loss(TF, x), (tx,), (tv,))
    _, fwd = mg._C._forward_over_reverse_hvp(lambda x: loss(MF, x),
                                              [from_torch(mg, tx).to(device)],
                                              [from_torch(mg, tv).to(device)], False)
    np.testing.assert_allclose(numpy_of(fwd[0]), t_hv[0].numpy(), rtol=1e-10, atol=1e-10)
    # Reverse-over-reverse gives the same product.
    (hv,) = mg.autograd.grad(mgx, (mx,), from_torch(mg, tv).to(device))
    np.testing.assert_allclose(numpy_of(hv), t_hv[0].numpy(), rtol=1e-10, atol=1e-10)


def test_torch_node_names_and_graph():
    """The node names checked above are torch 1.13's (this test asserts them on torch itself)."""
    x = torch.randn(1, 2, 6, 6, requires_grad=True)
    x1 = torch.randn(1, 2, 6, requires_grad=True)
    assert type(TF.avg_pool2d(x, 2).grad_fn).__name__ == "AvgPool2DBackward0"
    assert type(TF.adaptive_max_pool2d(x, 2).grad_fn).__name__ == "AdaptiveMaxPool2DBackward0"
    m = MF.max_pool1d(from_torch(mg, x1).requires_grad_(), 2)
    assert m.grad_fn.name() == "SqueezeBackward1"
    assert m.grad_fn.next_functions[0][0].name() == "MaxPool2DWithIndicesBackward0"
    a = MF.avg_pool1d(from_torch(mg, x1).requires_grad_(), 2)
    assert a.grad_fn.next_functions[0][0].name() == "AvgPool2DBackward0"
    g = MF.adaptive_avg_pool2d(from_torch(mg, x).requires_grad_(), 1)
    assert g.grad_fn.name() == type(TF.adaptive_avg_pool2d(x, 1).grad_fn).__name__ == "MeanBackward1"


def test_max_ties_are_the_first_in_window_order(device):
    """Equal values: the first maximum in row-major window order is the index and gets the
    gradient, as torch's CPU kernels; on every device."""
    tx = torch.ones(1, 1, 4, 5, dtype=torch.float64, requires_grad=True)
    mx = mg.ones(1, 1, 4, 5, dtype=mg.float64).to(device).requires_grad_()
    for tf, mf, kw in ((TF.adaptive_max_pool2d, MF.adaptive_max_pool2d, dict(output_size=3)),
                       (TF.max_pool1d, MF.max_pool1d, dict(kernel_size=3, stride=1))):
        t_in = tx[0] if tf is TF.max_pool1d else tx
        m_in = mx[0] if tf is TF.max_pool1d else mx
        ty, ti = tf(t_in, return_indices=True, **kw)
        my, mi = mf(m_in, return_indices=True, **kw)
        assert np.array_equal(numpy_of(mi), numpy_of(ti))
        tg = torch.autograd.grad(ty.sum(), tx)[0]
        mg_ = mg.autograd.grad(my.sum(), mx)[0]
        assert np.array_equal(numpy_of(mg_), numpy_of(tg))


BAD = [
    ("avg_pool2d", (1, 2, 5, 5), dict(kernel_size=6)),  # kernel larger than the padded input
    ("avg_pool2d", (1, 2, 5, 5), dict(kernel_size=3, padding=2)),  # pad > kernel / 2
    ("avg_pool2d", (1, 2, 5, 5), dict(kernel_size=2, stride=0)),
    ("avg_pool2d", (1, 2, 5, 5), dict(kernel_size=2, divisor_override=0)),
    ("avg_pool2d", (1, 2, 5, 5), dict(kernel_size=(1, 2, 3))),
    ("avg_pool1d", (1, 2, 5, 5), dict(kernel_size=2)),  # wrong rank
    ("avg_pool1d", (2, 4), dict(kernel_size=6)),
    ("avg_pool1d", (2, 4), dict(kernel_size=2, padding=2)),
    ("max_pool1d", (1, 2, 5, 5), dict(kernel_size=2)),
    ("max_pool1d", (2, 4), dict(kernel_size=2, padding=2)),
    ("max_pool1d", (2, 4), dict(kernel_size=2, stride=0)),
    ("adaptive_avg_pool2d", (1, 2, 5, 5), dict(output_size=(-1, 2))),
    ("adaptive_avg_pool2d", (1, 2, 5, 5), dict(output_size=(1, 2, 3))),
    ("adaptive_avg_pool2d", (2, 3, 0, 5), dict(output_size=2)),
    ("adaptive_avg_pool1d", (1, 2, 5, 5), dict(output_size=2)),
    ("adaptive_max_pool2d", (1, 2, 5, 5), dict(output_size=(-1, 2))),
    ("unfold", (1, 2, 4, 4), dict(kernel_size=6)),
    ("unfold", (1, 2, 4, 4), dict(kernel_size=2, stride=0)),
    ("unfold", (1, 2, 4, 4), dict(kernel_size=0)),
    ("unfold", (1, 2, 4, 4), dict(kernel_size=2, padding=-1)),
    ("unfold", (1, 2, 4, 4), dict(kernel_size=2, dilation=0)),
    ("fold", (2, 5, 4), dict(output_size=(3, 3), kernel_size=2)),  # channels not divisible
    ("fold", (2, 4, 5), dict(output_size=(3, 3), kernel_size=2)),  # wrong L
    ("fold", (2, 4, 4), dict(output_size=(0, 3), kernel_size=2)),
    ("fold", (2, 3, 4, 5), dict(output_size=(3, 3), kernel_size=2)),  # wrong rank
]


@pytest.mark.parametrize("name,shape,kwargs", BAD)
def test_refused_arguments_raise_torchs_kind(device, name, shape, kwargs):
    x = torch.randn(shape)
    with pytest.raises(Exception) as expected:
        getattr(TF, name)(x, **kwargs)
    mx = from_torch(mg, x).to(device).requires_grad_()
    with pytest.raises(Exception) as got:
        getattr(MF, name)(mx, **kwargs)
    assert isinstance(got.value, expected.type), (got.value, expected.value)
    assert mx._version == 0 and mx.grad is None


def test_integer_inputs_are_refused_with_the_dtype(device):
    x = mg.ones(1, 1, 4, 4, dtype=mg.int64).to(device)
    for f in (lambda: MF.avg_pool2d(x, 2), lambda: MF.adaptive_avg_pool2d(x, 2),
              lambda: MF.adaptive_max_pool2d(x, 2), lambda: MF.unfold(x, 2)):
        with pytest.raises(RuntimeError, match="Long"):
            f()


def module_pairs():
    return [
        (tnn.MaxPool1d(3), mnn.MaxPool1d(3)),
        (tnn.MaxPool1d(3, 2, 1, 2, True, True), mnn.MaxPool1d(3, 2, 1, 2, True, True)),
        (tnn.MaxPool2d((2, 3)), mnn.MaxPool2d((2, 3))),
        (tnn.MaxPool2d(3, 2, 1, ceil_mode=True), mnn.MaxPool2d(3, 2, 1, ceil_mode=True)),
        (tnn.AvgPool1d(3), mnn.AvgPool1d(3)),
        (tnn.AvgPool1d(3, 2, 1, True, False), mnn.AvgPool1d(3, 2, 1, True, False)),
        (tnn.AvgPool2d(3, divisor_override=2), mnn.AvgPool2d(3, divisor_override=2)),
        (tnn.AvgPool2d((2, 3), (1, 2), 1, True, False), mnn.AvgPool2d((2, 3), (1, 2), 1, True,
                                                                       False)),
        (tnn.AdaptiveAvgPool1d(3), mnn.AdaptiveAvgPool1d(3)),
        (tnn.AdaptiveAvgPool2d((None, 3)), mnn.AdaptiveAvgPool2d((None, 3))),
        (tnn.AdaptiveAvgPool2d(4), mnn.AdaptiveAvgPool2d(4)),
        (tnn.AdaptiveMaxPool2d((2, 3), True), mnn.AdaptiveMaxPool2d((2, 3), True)),
        (tnn.Unfold((2, 3), 2, 1, (1, 2)), mnn.Unfold((2, 3), 2, 1, (1, 2))),
        (tnn.Fold((4, 5), 2), mnn.Fold((4, 5), 2)),
    ]


def test_modules_repr_and_forward_match_torch(device):
    gen = torch.Generator().manual_seed(9)
    for tm, mm in module_pairs():
        assert repr(mm) == repr(tm)
        assert list(mm.parameters()) == []
        name = type(tm).__name__
        shape = (2, 3, 9) if name.endswith("1d") else (2, 2 * 4, 12) if name == "Fold" \
            else (2, 3, 7, 8)
        tx = torch.randn(shape, generator=gen, dtype=torch.float64)
        ty, my = tm(tx), mm(from_torch(mg, tx).to(device))
        if isinstance(ty, tuple):
            assert np.array_equal(numpy_of(my[1]), numpy_of(ty[1])), name
            ty, my = ty[0], my[0]
        np.testing.assert_allclose(numpy_of(my), numpy_of(ty), rtol=1e-12, atol=1e-12, err_msg=name)
    model = tnn.Sequential(tnn.MaxPool2d(2), tnn.AdaptiveAvgPool2d(1))
    mmodel = mnn.Sequential(mnn.MaxPool2d(2), mnn.AdaptiveAvgPool2d(1))
    assert repr(mmodel) == repr(model)


# --- inf and NaN, reduced dtypes, empty batches, huge geometry (torch 1.13 the oracle) ---

def max_pool2d_case(rng):
    k = [rng.randint(1, 4), rng.randint(1, 4)]
    return "max_pool2d", 2, dict(
        kernel_size=k, stride=maybe(rng, 0.7, [rng.randint(1, 3), rng.randint(1, 3)]),
        padding=[rng.randint(0, k[0] // 2), rng.randint(0, k[1] // 2)],
        dilation=[rng.choice([1, 2]), rng.choice([1, 2, 3])], ceil_mode=rng.random() < 0.5,
        return_indices=True)


def special(shape, gen, dtype=torch.float64):
    """Small integers (ties, exact sums) with NaN, inf and -inf sprinkled in."""
    pool = torch.tensor([float("nan"), float("inf"), -float("inf"), -2, -1, 0, 1, 2, 3, 1, 0, -1],
                        dtype=dtype)
    return pool[torch.randint(0, len(pool), shape, generator=gen)]


@pytest.mark.parametrize("make", CASES[:-1] + [max_pool2d_case], ids=lambda f: f.__name__[:-5])
def test_inf_and_nan_inputs_and_gradients_match_torch(device, make):
    """Every pooling op over inputs and grad_outs holding NaN and infinities: values, indices
    (the last NaN of a window, torch's kernels' `val > max || isnan(val)`) and input gradients
    equal torch's, NaN for NaN. One inf used to poison a whole plane of adaptive_avg_pool2d."""
    rng = random.Random(hash(make.__name__) % 1000 + 7)
    gen = torch.Generator().manual_seed(11)
    for _ in range(40):
        name, shape, kwargs, _ = random_case(rng, make)
        tx = special(shape, gen).requires_grad_()
        mx = from_torch(mg, tx.detach()).to(device).requires_grad_()
        ty, my = getattr(TF, name)(tx, **kwargs), getattr(MF, name)(mx, **kwargs)
        where = (name, shape, kwargs)
        if isinstance(ty, tuple):
            (ty, ti), (my, mi) = ty, my
            assert np.array_equal(numpy_of(mi), numpy_of(ti)), where
        np.testing.assert_allclose(numpy_of(my), numpy_of(ty), rtol=1e-12, atol=1e-12,
                                   err_msg=str(where))
        tg = special(ty.shape, gen)
        ty.backward(tg)
        my.backward(from_torch(mg, tg).to(device))
        np.testing.assert_allclose(numpy_of(mx.grad), numpy_of(tx.grad), rtol=1e-12, atol=1e-12,
                                   err_msg=str(where))


def test_several_nans_in_a_window_pick_the_last(device):
    nan = float("nan")
    tx = torch.tensor([[[1, nan, 3, nan]]], requires_grad=True)
    for name, kw in (("max_pool1d", dict(kernel_size=4)), ("max_pool2d", dict(kernel_size=(1, 4))),
                     ("adaptive_max_pool2d", dict(output_size=1))):
        t_in = tx if name == "max_pool1d" else tx.unsqueeze(0)
        mx = from_torch(mg, tx.detach()).to(device).requires_grad_()
        m_in = mx if name == "max_pool1d" else mx.unsqueeze(0)
        ty, ti = getattr(TF, name)(t_in, return_indices=True, **kw)
        my, mi = getattr(MF, name)(m_in, return_indices=True, **kw)
        assert numpy_of(mi).ravel().tolist() == numpy_of(ti).ravel().tolist() == [3], name
        (tgrad,) = torch.autograd.grad(ty.sum(), tx)
        (mgrad,) = mg.autograd.grad(my.sum(), mx)
        assert numpy_of(mgrad).tolist() == tgrad.tolist() == [[[0, 0, 0, 1]]], name


def test_bfloat16_sums_in_float_as_torch(device):
    """bfloat16 windows are summed and divided in float32, rounded once (torch's acc type):
    values equal torch's bit for bit (inputs k/8: every float sum is exact). Gradients are
    within a bfloat16 step: they are computed in float32 and rounded once, where torch 1.13's
    backward rounds the divisor and each accumulation to bfloat16."""
    gen = torch.Generator().manual_seed(12)
    x = (torch.randint(-16, 17, (2, 3, 7, 9), generator=gen) / 8).bfloat16()
    cases = [("avg_pool2d", dict(kernel_size=3, stride=2, padding=1)),
             ("avg_pool2d", dict(kernel_size=(2, 3), divisor_override=257)),
             ("avg_pool2d", dict(kernel_size=3, padding=1, count_include_pad=False, ceil_mode=True)),
             ("adaptive_avg_pool2d", dict(output_size=(1, 2))),
             ("adaptive_avg_pool2d", dict(output_size=(4, 5)))]
    for name, kw in cases:
        tx = x.clone().requires_grad_()
        mx = from_torch(mg, x).to(device).requires_grad_()
        ty, my = getattr(TF, name)(tx, **kw), getattr(MF, name)(mx, **kw)
        assert my.dtype == mg.bfloat16
        assert np.array_equal(numpy_of(my.float()), ty.detach().float().numpy()), (name, kw)
        ty.sum().backward()
        my.sum().backward()
        np.testing.assert_allclose(numpy_of(mx.grad.float()), tx.grad.float().numpy(),
                                   rtol=2 ** -7, atol=0, err_msg=str((name, kw)))
    one = torch.tensor([[[[1.0] + [1 / 256] * 5]]]).bfloat16()  # 1 + 1/256 is 1 in bfloat16
    my = MF.adaptive_avg_pool2d(from_torch(mg, one).to(device), (1, 2))
    assert numpy_of(my.float()).ravel().tolist() == [0.3359375, 0.00390625] == \
        TF.adaptive_avg_pool2d(one, (1, 2)).float().ravel().tolist()


EMPTY_OK = [("max_pool2d", dict(kernel_size=2, padding=1)), ("avg_pool2d", dict(kernel_size=2)),
            ("adaptive_avg_pool2d", dict(output_size=(2, 3))),
            ("adaptive_max_pool2d", dict(output_size=(2, 3)))]


@pytest.mark.parametrize("name,kwargs", EMPTY_OK)
def test_empty_batch_forward_and_backward_match_torch(device, name, kwargs):
    tx = torch.zeros(0, 3, 4, 5, requires_grad=True)
    mx = mg.zeros(0, 3, 4, 5).to(device).requires_grad_()
    ty, my = getattr(TF, name)(tx, **kwargs), getattr(MF, name)(mx, **kwargs)
    assert tuple(my.shape) == tuple(ty.shape)
    ty.sum().backward()
    my.sum().backward()
    assert tuple(mx.grad.shape) == tuple(tx.grad.shape) == (0, 3, 4, 5)
    if name != "adaptive_avg_pool2d":  # torch's refuses C = 0 in its backward only
        with pytest.raises(RuntimeError):
            getattr(TF, name)(torch.zeros(3, 0, 4, 5), **kwargs)
        with pytest.raises(RuntimeError, match=r"\[3, 0, 4, 5\]"):
            getattr(MF, name)(mg.zeros(3, 0, 4, 5).to(device), **kwargs)


def test_huge_kernel_and_padding_match_torch(device):
    """Windows are clipped to the input: memory follows the input, not the padding (on the
    CUDA device, whose allocator counts: the padded input was 1.6 GB)."""
    if device == "cuda":
        mg.cuda.reset_peak_memory_stats()
        base = mg.cuda.memory_allocated()
    gen = torch.Generator().manual_seed(13)
    tx = torch.randn(1, 1, 4, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    for name, kw in (("avg_pool2d", dict(count_include_pad=True)),
                     ("avg_pool2d", dict(count_include_pad=False)),
                     ("max_pool2d", dict(return_indices=True))):
        kw = dict(kw, kernel_size=(1, 100_000_000), padding=(0, 50_000_000))
        mx = from_torch(mg, tx.detach()).to(device).requires_grad_()
        ty, my = getattr(TF, name)(tx, **kw), getattr(MF, name)(mx, **kw)
        if isinstance(ty, tuple):
            (ty, ti), (my, mi) = ty, my
            assert np.array_equal(numpy_of(mi), numpy_of(ti))
        assert tuple(my.shape) == tuple(ty.shape) == (1, 1, 4, 1)
        np.testing.assert_allclose(numpy_of(my), ty.detach().numpy(), rtol=1e-12, atol=1e-20)
        (tgrad,) = torch.autograd.grad(ty.sum(), tx)
        (mgrad,) = mg.autograd.grad(my.sum(), mx)
        np.testing.assert_allclose(numpy_of(mgrad), tgrad.numpy(), rtol=1e-12, atol=1e-20)
    if device == "cuda":
        assert mg.cuda.max_memory_allocated() - base < 1 << 20


def test_overflowing_geometry_is_an_error(device):
    """C++ ValueError (RuntimeError here, torch's kind for bad pooling arguments) naming the
    values, where the window arithmetic was signed overflow."""
    x = mg.randn(1, 1, 4, 4).to(device)
    big, top = 1 << 62, (1 << 63) - 1
    with pytest.raises(RuntimeError, match="overflows int64"):
        MF.max_pool2d(x, (1, big), padding=(0, big // 2), dilation=(1, 4))
    with pytest.raises(RuntimeError, match="overflows int64"):
        MF.avg_pool2d(x, (top, 1), padding=(top // 2, 0))
    with pytest.raises(RuntimeError, match="divisor_override"):
        MF.avg_pool2d(x, 1 << 32, padding=1 << 31)
    assert x._version == 0
