"""The functional ops nn layers call (mutagrad.nn.functional, issue 36) against torch 1.13:
values, input and weight gradients, node names, running statistics and their versions,
embedding's max_norm write, dropout's masks and in-place forms, and refused calls (torch's
exception kind, nothing changed). Runs mutagrad on the CPU and on the host-run CUDA device.
"""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import mutagrad as mg
import mutagrad.nn.functional as MF
from lib_util import capture, from_torch, numpy_of, same_kind

MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def node_name(t):
    if t.grad_fn is None:
        return None
    return type(t.grad_fn).__name__ if isinstance(t, torch.Tensor) else t.grad_fn.name()


def to_mg(t, requires_grad=None):
    m = from_torch(mg, t).to(MG_DEVICE)
    rg = t.requires_grad if requires_grad is None else requires_grad
    return m.requires_grad_() if rg else m


def close(m, t, rtol=1e-9, atol=1e-11):
    a, b = numpy_of(m), numpy_of(t)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert str(m.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (m.dtype, t.dtype)
    assert np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True), f"\n{a}\n{b}"


def rand(*shape, lo=-2.0, hi=2.0, seed=0, grad=True):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(*shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    return t.requires_grad_(grad)


# Each case: name, a function of (F, inputs) giving a tensor, and the torch inputs (leaves that
# require grad get gradients compared). Node names are compared with torch's except where the
# docs say otherwise (NODE_DIFFERS).
CASES = [
    ("gelu", lambda F, x: F.gelu(x), [rand(3, 4)]),
    ("gelu_tanh", lambda F, x: F.gelu(x, approximate="tanh"), [rand(3, 4)]),
    ("silu", lambda F, x: F.silu(x), [rand(3, 4)]),
    ("leaky_relu", lambda F, x: F.leaky_relu(x, 0.2), [rand(3, 4)]),
    ("leaky_relu_inplace", lambda F, x: F.leaky_relu(x * 1, 0.2, inplace=True), [rand(3, 4)]),
    ("elu", lambda F, x: F.elu(x, 0.5), [rand(3, 4)]),
    ("elu_inplace", lambda F, x: F.elu(x * 1, 0.5, inplace=True), [rand(3, 4)]),
    ("softplus", lambda F, x: F.softplus(x, beta=2, threshold=3), [rand(3, 4)]),
    ("layer_norm", lambda F, x, w, b: F.layer_norm(x, (3, 4), w, b),
     [rand(2, 3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2)]),
    ("layer_norm_plain", lambda F, x: F.layer_norm(x, [4]), [rand(2, 3, 4)]),
    ("group_norm", lambda F, x, w, b: F.group_norm(x, 2, w, b, eps=1e-3),
     [rand(2, 4, 3, 2), rand(4, seed=1), rand(4, seed=2)]),
    ("batch_norm_train", lambda F, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     [rand(4, 3, 2), rand(3, seed=1), rand(3, seed=2)]),
    ("batch_norm_eval",
     lambda F, x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-3),
     [rand(4, 3), rand(3, seed=1), rand(3, seed=2), rand(3, seed=3, grad=False),
      rand(3, lo=0.5, hi=2.0, seed=4, grad=False)]),
    ("normalize", lambda F, x: F.normalize(x), [rand(3, 4)]),
    ("normalize_p1", lambda F, x: F.normalize(x, p=1, dim=0), [rand(3, 4)]),
    ("embedding", lambda F, w, i: F.embedding(i, w, padding_idx=2),
     [rand(5, 3), torch.tensor([[0, 2, 4], [2, 1, 0]])]),
    ("embedding_freq", lambda F, w, i: F.embedding(i, w, scale_grad_by_freq=True),
     [rand(5, 3), torch.tensor([0, 2, 2, 0, 0])]),
    ("pad_constant", lambda F, x: F.pad(x, (1, 2, -1, 1), value=0.5), [rand(2, 3, 4)]),
    ("pad_reflect1", lambda F, x: F.pad(x, (2, 1), mode="reflect"), [rand(2, 3, 4)]),
    ("pad_reflect_crop", lambda F, x: F.pad(x, (-1, 2), mode="reflect"), [rand(2, 3, 4)]),
    ("pad_replicate_crop", lambda F, x: F.pad(x, (1, -2), mode="replicate"), [rand(2, 3, 4)]),
    ("pad_reflect2", lambda F, x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [rand(2, 3, 4)]),
    ("pad_replicate1", lambda F, x: F.pad(x, (3, 1), mode="replicate"), [rand(2, 3, 4)]),
    ("pad_replicate2", lambda F, x: F.pad(x, (0, 3, 2, 1), mode="replicate"), [rand(1, 2, 3, 4)]),
    ("pad_circular", lambda F, x: F.pad(x, (1, 2), mode="circular"), [rand(2, 3, 4)]),
    ("bilinear", lambda F, a, b, w, c: F.bilinear(a, b, w, c),
     [rand(2, 3), rand(2, 4, seed=1), rand(5, 3, 4, seed=2), rand(5, seed=3)]),
    ("l1_loss", lambda F, x, t: F.l1_loss(x, t), [rand(3, 4), rand(3, 4, seed=1)]),
    ("l1_loss_none", lambda F, x, t: F.l1_loss(x, t, reduction="none"),
     [rand(3, 4), rand(3, 4, seed=1)]),
    ("l1_loss_sum", lambda F, x, t: F.l1_loss(x, t, reduction="sum"),
     [rand(3, 4), rand(3, 4, seed=1)]),
    ("smooth_l1", lambda F, x, t: F.smooth_l1_loss(x, t, beta=0.5),
     [rand(3, 4), rand(3, 4, seed=1)]),
    ("smooth_l1_none", lambda F, x, t: F.smooth_l1_loss(x, t, reduction="none"),
     [rand(3, 4), rand(3, 4, seed=1)]),
    ("huber", lambda F, x, t: F.huber_loss(x, t, delta=0.7, reduction="sum"),
     [rand(3, 4), rand(3, 4, seed=1)]),
    ("bce", lambda F, x, t, w: F.binary_cross_entropy(x, t, w),
     [rand(3, 4, lo=0.05, hi=0.95), rand(3, 4, lo=0, hi=1, seed=1), rand(4, seed=2, grad=False)]),
    ("bce_none", lambda F, x, t: F.binary_cross_entropy(x, t, reduction="none"),
     [rand(3, 4, lo=0.05, hi=0.95), rand(3, 4, lo=0, hi=1, seed=1, grad=False)]),
    ("bce_logits_pos_weight",
     lambda F, x, t, w, p: F.binary_cross_entropy_with_logits(x, t, w, pos_weight=p),
     [rand(3, 4), rand(3, 4, lo=0, hi=1, seed=1), rand(4, seed=2, grad=False),
      rand(4, lo=0.5, hi=3, seed=3, grad=False)]),
    ("kl_div_batchmean", lambda F, x, t: F.kl_div(x, t, reduction="batchmean"),
     [rand(3, 4), rand(3, 4, lo=0.0, hi=1.0, seed=1)]),
    ("kl_div_none", lambda F, x, t: F.kl_div(x, t, reduction="none"),
     [rand(3, 4), torch.tensor([[0.0, 0.5, 0.2, 0.3]] * 3, dtype=torch.float64)]),
    ("kl_div_log_target", lambda F, x, t: F.kl_div(x, t, reduction="sum", log_target=True),
     [rand(3, 4), rand(3, 4, seed=1)]),
]

NODE_DIFFERS = {
    "pad_circular": ("CopySlices", "CatBackward0"),
}


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_values_gradients_and_node_names_match_torch(name, fn, inputs):
    t_in = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    m_in = [to_mg(t) for t in t_in]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_out = fn(TF, *t_in)
        m_out = fn(MF, *m_in)
    close(m_out, t_out)
    if name in NODE_DIFFERS:
        assert (node_name(t_out), node_name(m_out)) == NODE_DIFFERS[name]
    else:
        assert node_name(m_out) == node_name(t_out)
    g = torch.rand(t_out.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    t_out.backward(g)
    m_out.backward(to_mg(g, False))
    for i, (a, b) in enumerate(zip(m_in, t_in)):
        if b.requires_grad:
            assert a.grad is not None, f"input {i} got no gradient"
            close(a.grad, b.grad, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_float32_matches_torch(name, fn, inputs):
    """The same cases in float32: values and gradients within float32 rounding."""
    t_in = [(t.detach().float() if t.is_floating_point() else t.detach().clone())
            .requires_grad_(t.requires_grad) for t in inputs]
    m_in = [to_mg(t) for t in t_in]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_out = fn(TF, *t_in)
        m_out = fn(MF, *m_in)
    close(m_out, t_out, rtol=1e-5, atol=1e-5)
    g = torch.rand(t_out.shape, generator=torch.Generator().manual_seed(9))
    t_out.backward(g)
    m_out.backward(to_mg(g, False))
    for a, b in zip(m_in, t_in):
        if b.requires_grad:
            close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


def test_second_derivatives_match_torch():
    """Double backward through the dedicated nodes (gradient of a gradient's norm)."""
    cases = [
        (lambda F, x: F.gelu(x), [rand(5)]),
        (lambda F, x, w, b: F.layer_norm(x, (4,), w, b), [rand(3, 4), rand(4, seed=1),
                                                         rand(4, seed=2)]),
        (lambda F, x, w, b: F.batch_norm(x, None, None, w, b, True),
         [rand(4, 3), rand(3, seed=1), rand(3, seed=2)]),
        (lambda F, x, w: F.group_norm(x, 2, w), [rand(2, 4, 2), rand(4, seed=1)]),
        (lambda F, x, t: F.smooth_l1_loss(x, t), [rand(6), rand(6, seed=1)]),
        (lambda F, x: F.pad(x, (1, 2), mode="reflect"), [rand(2, 4)]),
    ]
    for fn, inputs in cases:
        results = []
        for F, lib, conv in ((TF, torch, lambda t: t.detach().clone().requires_grad_()),
                             (MF, mg, lambda t: to_mg(t.detach(), True))):
            xs = [conv(t) for t in inputs]
            out = fn(F, *xs)
            w = conv(torch.linspace(0.5, 1.5, out.numel(), dtype=torch.float64)
                     .reshape(out.shape)).detach()
            (gx,) = lib.autograd.grad((out * out * w).sum(), [xs[0]], create_graph=True)
            (gx * gx).sum().backward()
            results.append([x.grad for x in xs])
        for a, b in zip(results[1], results[0]):
            close(a, b, rtol=1e-8, atol=1e-10)


def test_batch_norm_running_stats_and_versions():
    x = rand(5, 3, 2, grad=False)
    outs = {}
    for F, conv in ((TF, lambda t: t.clone()), (MF, lambda t: to_mg(t, False))):
        rm = conv(torch.tensor([0.5, -1.0, 0.0], dtype=torch.float64))
        rv = conv(torch.tensor([2.0, 1.0, 0.5], dtype=torch.float64))
        y = F.batch_norm(conv(x), rm, rv, training=True, momentum=0.3)
        versions = (rm._version, rv._version)
        F.batch_norm(conv(x) * 2, rm, rv, training=True, momentum=0.3)
        e = F.batch_norm(conv(x), rm, rv, training=False)
        outs[F] = (y, e, rm, rv, versions, (rm._version, rv._version))
    (ty, te, trm, trv, tv1, tv2), (my, me, mrm, mrv, mv1, mv2) = outs[TF], outs[MF]
    for a, b in ((my, ty), (me, te), (mrm, trm), (mrv, trv)):
        close(a, b)
    # torch 1.13 updates the statistics inside its kernel without a version bump; mutagrad
    # writes them as tracked writes: one bump each per training forward, none in eval.
    assert (tv1, tv2) == ((0, 0), (0, 0))
    assert (mv1, mv2) == ((1, 1), (2, 2))


def test_batch_norm_write_names_the_line_and_stales_an_eval_graph():
    rm = mg.zeros(2, dtype=mg.float64).to(MG_DEVICE)
    rv = mg.ones(2, dtype=mg.float64).to(MG_DEVICE)
    x = to_mg(rand(3, 2), True)
    e = MF.batch_norm(x, rm, rv, training=False)  # saves rm and rv
    MF.batch_norm(x.detach(), rm, rv, training=True)
    out = capture(lambda: e.sum().backward())
    assert out.kind == "RuntimeError", out
    assert "batch_norm" in out.message and "nn_functional_ops_test.py" in out.message, out.message


def test_bad_batch_norm_is_torchs_error_and_changes_nothing():
    for F, conv in ((TF, lambda t: t.clone()), (MF, lambda t: to_mg(t, False))):
        rm = conv(torch.zeros(3, dtype=torch.float64))
        rv = conv(torch.ones(3, dtype=torch.float64))
        one = capture(lambda: F.batch_norm(conv(torch.ones(1, 3, dtype=torch.float64)), rm, rv,
                                           training=True))
        assert one.kind == "ValueError", one
        assert one.message.startswith(
            "Expected more than 1 value per channel when training, got input size")
        for bad in (lambda: F.batch_norm(conv(torch.ones(2, 4, dtype=torch.float64)), rm, rv,
                                         training=True),
                    lambda: F.batch_norm(conv(torch.ones(2, 3, dtype=torch.float64)), None, None,
                                         training=False)):
            assert capture(bad).kind == "RuntimeError"
        assert rm._version == 0 and rv._version == 0
        assert numpy_of(rm).tolist() == [0, 0, 0] and numpy_of(rv).tolist() == [1, 1, 1]


def test_embedding_max_norm_renormalises_in_place():
    w0 = torch.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], dtype=torch.float64)
    ids = torch.tensor([0, 1, 0])
    res = {}
    for F, conv, ci in ((TF, lambda t: t.clone(), lambda t: t),
                        (MF, lambda t: to_mg(t, False), lambda t: to_mg(t, False))):
        w = conv(w0)
        y = F.embedding(ci(ids), w, max_norm=1.0)
        res[F] = (y, w, w._version)
    close(res[MF][0], res[TF][0])
    close(res[MF][1], res[TF][1])
    assert res[MF][2] == 1  # torch bumps too (embedding_renorm_ is an in-place op)
    assert res[TF][2] == 1
    # A graph that saved the weight before is refused at backward, naming the write.
    p = to_mg(w0, True)
    saved = p * p
    MF.embedding(to_mg(ids, False), p, max_norm=1.0)
    out = capture(lambda: saved.sum().backward())
    assert out.kind == "RuntimeError" and "embedding_renorm_" in out.message, out


@pytest.mark.parametrize("call", [
    lambda F, w, i: F.embedding(i + 10, w),
    lambda F, w, i: F.embedding(i, w, padding_idx=7),
    lambda F, w, i: F.embedding(i, w, padding_idx=-7),
    lambda F, w, i: F.embedding(i.double(), w),
    lambda F, w, i: F.embedding(i + 10, w, max_norm=1.0),
])
def test_bad_embedding_is_torchs_error_and_changes_nothing(call):
    w0 = rand(5, 3, grad=False)
    ids = torch.tensor([0, 4, 1])
    tw, mw = w0.clone(), to_mg(w0, False)
    t, m = capture(call, TF, tw, ids), capture(call, MF, mw, to_mg(ids, False))
    assert t.kind != "ok" and same_kind(t.kind, m.kind), (t, m)
    assert mw._version == 0
    close(mw, w0, rtol=0, atol=0)


def test_one_hot_matches_torch():
    ids = torch.tensor([[0, 3], [2, 1]])
    for n in (-1, 5):
        t, m = TF.one_hot(ids, n), MF.one_hot(to_mg(ids, False), n)
        assert numpy_of(m).tolist() == t.tolist() and str(m.dtype) == "mutagrad.int64"
    for bad in (torch.tensor([4]), torch.tensor([-1])):
        t = capture(TF.one_hot, bad, 3)
        m = capture(MF.one_hot, to_mg(bad, False), 3)
        assert t.kind == m.kind == "RuntimeError", (t, m)


@pytest.mark.parametrize("args", [((3, 3), "reflect"), ((1,), "constant"), ((1, 1), "wrap"),
                                  ((4, 0), "circular"), ((1, 1, 1, 1, 1, 1), "reflect")])
def test_bad_pad_is_refused(args):
    pad, mode = args
    x = rand(2, 3, grad=False)
    t = capture(TF.pad, x, pad, mode)
    m = capture(MF.pad, to_mg(x, False), pad, mode)
    assert t.kind != "ok" and m.kind != "ok", (t, m)


def test_non_constant_pad_of_other_ranks_is_not_implemented_as_torch():
    x = rand(1, 2, 3, 4, grad=False)
    for F, v in ((TF, x), (MF, to_mg(x, False))):
        assert capture(F.pad, v, (1, 1), "reflect").kind == "NotImplementedError"


def test_empty_batch_norm_is_a_copy_and_writes_nothing():
    for F, conv in ((TF, lambda t: t.clone()), (MF, lambda t: to_mg(t, False))):
        rm, rv = conv(torch.zeros(3)), conv(torch.ones(3))
        x = conv(torch.zeros(0, 3)).requires_grad_()
        y = F.batch_norm(x, rm, rv, training=True)
        assert tuple(y.shape) == (0, 3) and node_name(y) == "CloneBackward0"
        assert rm._version == 0 and numpy_of(rm).tolist() == [0, 0, 0]


def test_dropout_masks_inplace_and_errors():
    x = mg.ones(400, dtype=mg.float64).to(MG_DEVICE)
    mg.manual_seed(3)
    a = MF.dropout(x, 0.25)
    mg.manual_seed(3)
    b = MF.dropout(x, 0.25)
    av = numpy_of(a)
    assert np.array_equal(av, numpy_of(b))
    assert set(np.unique(av).tolist()) <= {0.0, 1 / 0.75}
    assert 50 < int((av == 0).sum()) < 150
    assert MF.dropout(x, 0.5, training=False) is x
    h = to_mg(rand(4, 3), True) * 1
    y = MF.dropout(h, 0.5, inplace=True)
    assert y is h and h._version == 1 and node_name(h) == "MulBackward0"
    assert node_name(MF.dropout(to_mg(rand(3), True), 0.5)) == node_name(
        TF.dropout(rand(3), 0.5)) == "MulBackward0"
    c = numpy_of(MF.dropout2d(mg.ones(4, 6, 3, 2, dtype=mg.float64).to(MG_DEVICE), 0.5))
    assert all(len(np.unique(c[n, ch])) == 1 for n in range(4) for ch in range(6))
    for F in (TF, MF):
        assert capture(F.dropout, x if F is MF else torch.ones(3), 1.5).kind == "ValueError"


def test_inplace_activation_after_a_saving_op_is_refused():
    """leaky_relu_/elu_ write their input: a graph that saved it raises at backward, naming
    the write; on a leaf that requires grad they are refused before writing."""
    for F in (TF, MF):
        conv = (lambda t: t) if F is TF else (lambda t: to_mg(t.detach(), True))
        x = conv(rand(4))
        h = x.exp()  # saves its result h
        F.elu(h, inplace=True)
        out = capture(lambda: h.sum().backward())
        assert out.kind == "RuntimeError", out
        leaf = conv(rand(4))
        before = numpy_of(leaf)
        assert capture(F.leaky_relu, leaf, 0.1, True).kind == "RuntimeError"
        assert np.array_equal(numpy_of(leaf), before) and leaf._version == 0


@pytest.mark.parametrize("call", [
    lambda F, x, t: F.binary_cross_entropy(x * 3, t),
    lambda F, x, t: F.binary_cross_entropy(x, t[:2]),
    lambda F, x, t: F.huber_loss(x, t, delta=0.0),
    lambda F, x, t: F.smooth_l1_loss(x, t, beta=-1.0),
    lambda F, x, t: F.l1_loss(x, t, reduction="avg"),
    lambda F, x, t: F.kl_div(x, t, reduction="avg"),
    lambda F, x, t: F.layer_norm(x, (5,)),
    lambda F, x, t: F.group_norm(x.reshape(2, 3, 2), 2),
    lambda F, x, t: F.gelu(x, approximate="fast"),
])
def test_bad_arguments_are_torchs_error_kind(call):
    x, t = rand(3, 4, lo=0.1, hi=0.9, grad=False), rand(3, 4, lo=0, hi=1, seed=1, grad=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = capture(call, TF, x, t)
        b = capture(call, MF, to_mg(x, False), to_mg(t, False))
    assert a.kind != "ok" and same_kind(a.kind, b.kind), (a, b)
