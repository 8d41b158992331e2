"""mutagrad.nn's layers and loss modules against torch 1.13's: build torch's layer, copy its
state_dict into ours, and compare repr, state_dict keys, forward, the input and parameter
gradients and the running statistics, in train and eval mode, float64 (1e-12) and float32
(1e-6), on the CPU and the host-run CUDA device; 20 SGD steps of a small MLP; initialisation
(reset_parameters' bounds, nn.init with generator=); what the layers write (Dropout inplace,
BatchNorm's running statistics, Embedding max_norm) and their errors for bad input.
"""

import math

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import from_torch, numpy_of

DEVICE = "cpu"
TOL = {"float64": 1e-12, "float32": 1e-6}


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global DEVICE
    DEVICE = request.param
    yield
    DEVICE = "cpu"


def mgt(t, requires_grad=False):
    out = from_torch(mg, t.detach()).to(DEVICE)
    return out.requires_grad_() if requires_grad else out


def assert_close(m, t, tol, what):
    a, b = numpy_of(m), numpy_of(t)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    assert str(m.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], what
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=what)


def copy_state(t_module, m_module):
    m_module.load_state_dict({k: mgt(v) for k, v in t_module.state_dict().items()})


def differential(make, inputs, dtype="float64", modes=("train", "eval"), steps=2):
    """make(lib) in both libraries with torch's state copied into ours; for each mode, `steps`
    forwards and backwards on `inputs` (torch tensors; floating ones get gradients): outputs,
    input and parameter gradients, and every buffer after each step."""
    tol = TOL[dtype]
    torch.manual_seed(0)
    t = make(torch).to(getattr(torch, dtype))
    m = make(mg).to(getattr(mg, dtype)).to(DEVICE)
    assert repr(m) == repr(t)
    assert list(m.state_dict()) == list(t.state_dict())
    copy_state(t, m)
    for mode in modes:
        t.train(mode == "train")
        m.train(mode == "train")
        for step in range(steps):
            what = f"{type(t).__name__} {mode} step {step}"
            t_in = [x.detach().clone().to(getattr(torch, dtype)).requires_grad_()
                    if x.is_floating_point() else x for x in inputs]
            m_in = [mgt(x, x.is_floating_point()) for x in t_in]
            t_out = t(*t_in)
            m_out = m(*m_in)
            assert_close(m_out, t_out, tol, what + " output")
            if not t_out.requires_grad:
                continue
            r = torch.rand(t_out.shape, dtype=t_out.dtype)
            (t_out * r).sum().backward()
            (m_out * mgt(r)).sum().backward()
            for i, (mx, tx) in enumerate(zip(m_in, t_in)):
                if tx.is_floating_point():
                    assert_close(mx.grad, tx.grad, tol, f"{what} input {i} grad")
            for (name, tp), (mname, mp) in zip(t.named_parameters(), m.named_parameters()):
                assert name == mname
                if tp.grad is None:
                    assert mp.grad is None, name
                else:
                    assert_close(mp.grad, tp.grad, tol, f"{what} {name}.grad")
            for (name, tb), (_, mb) in zip(t.named_buffers(), m.named_buffers()):
                assert_close(mb, tb, tol, f"{what} buffer {name}")
    return t, m


LAYERS = {
    "Linear": (lambda lib: lib.nn.Linear(5, 3), lambda: [torch.randn(4, 5)]),
    "Linear_nobias_3d": (lambda lib: lib.nn.Linear(5, 3, bias=False),
                         lambda: [torch.randn(2, 4, 5)]),
    "Linear_1d": (lambda lib: lib.nn.Linear(5, 3), lambda: [torch.randn(5)]),
    "Identity": (lambda lib: lib.nn.Identity(3, k=2), lambda: [torch.randn(4, 5)]),
    "ReLU": (lambda lib: lib.nn.ReLU(), lambda: [torch.randn(4, 5)]),
    "Tanh": (lambda lib: lib.nn.Tanh(), lambda: [torch.randn(4, 5)]),
    "Sigmoid": (lambda lib: lib.nn.Sigmoid(), lambda: [torch.randn(4, 5)]),
    "Softmax": (lambda lib: lib.nn.Softmax(dim=1), lambda: [torch.randn(4, 5)]),
    "LogSoftmax": (lambda lib: lib.nn.LogSoftmax(dim=0), lambda: [torch.randn(4, 5)]),
    "Flatten": (lambda lib: lib.nn.Flatten(), lambda: [torch.randn(2, 3, 4)]),
    "Flatten_0_1": (lambda lib: lib.nn.Flatten(0, 1), lambda: [torch.randn(2, 3, 4)]),
    "Unflatten": (lambda lib: lib.nn.Unflatten(1, (2, 3)), lambda: [torch.randn(4, 6)]),
    "Sequential": (lambda lib: lib.nn.Sequential(lib.nn.Linear(5, 4), lib.nn.Tanh(),
                                                 lib.nn.Linear(4, 2)),
                   lambda: [torch.randn(3, 5)]),
}

# Layers over the functional ops of issue 36 (gelu, layer_norm, batch_norm, embedding, ...).
LAYERS.update({
    "LeakyReLU": (lambda lib: lib.nn.LeakyReLU(0.2), lambda: [torch.randn(4, 5)]),
    "ELU": (lambda lib: lib.nn.ELU(alpha=0.7), lambda: [torch.randn(4, 5)]),
    "GELU": (lambda lib: lib.nn.GELU(), lambda: [torch.randn(4, 5)]),
    "GELU_tanh": (lambda lib: lib.nn.GELU(approximate="tanh"), lambda: [torch.randn(4, 5)]),
    "SiLU": (lambda lib: lib.nn.SiLU(), lambda: [torch.randn(4, 5)]),
    "Softplus": (lambda lib: lib.nn.Softplus(beta=2, threshold=1.5), lambda: [torch.randn(4, 5)]),
    "LayerNorm": (lambda lib: lib.nn.LayerNorm((3, 4)), lambda: [torch.randn(2, 3, 4)]),
    "LayerNorm_noaffine": (lambda lib: lib.nn.LayerNorm(4, eps=1e-3, elementwise_affine=False),
                           lambda: [torch.randn(5, 4)]),
    "GroupNorm": (lambda lib: lib.nn.GroupNorm(2, 6), lambda: [torch.randn(3, 6, 4)]),
    "GroupNorm_noaffine": (lambda lib: lib.nn.GroupNorm(3, 6, affine=False),
                           lambda: [torch.randn(2, 6, 2, 2)]),
    "BatchNorm1d": (lambda lib: lib.nn.BatchNorm1d(4), lambda: [torch.randn(8, 4)]),
    "BatchNorm1d_3d": (lambda lib: lib.nn.BatchNorm1d(4, momentum=0.3),
                       lambda: [torch.randn(5, 4, 3)]),
    "BatchNorm1d_cumulative": (lambda lib: lib.nn.BatchNorm1d(4, momentum=None),
                               lambda: [torch.randn(8, 4)]),
    "BatchNorm1d_noaffine": (lambda lib: lib.nn.BatchNorm1d(4, affine=False),
                             lambda: [torch.randn(8, 4)]),
    "BatchNorm1d_nostats": (lambda lib: lib.nn.BatchNorm1d(4, track_running_stats=False),
                            lambda: [torch.randn(8, 4)]),
    "BatchNorm2d": (lambda lib: lib.nn.BatchNorm2d(3), lambda: [torch.randn(4, 3, 2, 5)]),
    "Bilinear": (lambda lib: lib.nn.Bilinear(3, 4, 2), lambda: [torch.randn(5, 3),
                                                              torch.randn(5, 4)]),
    "Embedding": (lambda lib: lib.nn.Embedding(10, 4, padding_idx=2),
                  lambda: [torch.tensor([[1, 2, 3], [2, 9, 1]])]),
    "Embedding_scale_grad": (lambda lib: lib.nn.Embedding(6, 3, scale_grad_by_freq=True),
                             lambda: [torch.tensor([1, 1, 4, 1, 0])]),
    "MLP_bn": (lambda lib: mlp(lib, batchnorm=True), lambda: [torch.randn(6, 6)]),
})

LOSSES = {
    "CrossEntropyLoss": (lambda lib: lib.nn.CrossEntropyLoss(),
                         lambda: [torch.randn(6, 4), torch.randint(0, 4, (6,))]),
    "CrossEntropyLoss_weight_ignore_smooth": (
        lambda lib: lib.nn.CrossEntropyLoss(weight=lib.tensor([1.0, 2.0, 0.5, 1.5]),
                                            ignore_index=2, label_smoothing=0.1),
        lambda: [torch.randn(6, 4), torch.tensor([0, 2, 1, 3, 2, 1])]),
    "CrossEntropyLoss_sum": (lambda lib: lib.nn.CrossEntropyLoss(reduction="sum"),
                             lambda: [torch.randn(6, 4), torch.randint(0, 4, (6,))]),
    "NLLLoss": (lambda lib: lib.nn.NLLLoss(weight=lib.tensor([1.0, 0.5, 2.0]),
                                           ignore_index=0),
                lambda: [torch.randn(5, 3).log_softmax(1), torch.tensor([0, 1, 2, 1, 2])]),
    "MSELoss": (lambda lib: lib.nn.MSELoss(), lambda: [torch.randn(4, 3), torch.randn(4, 3)]),
    "MSELoss_none": (lambda lib: lib.nn.MSELoss(reduction="none"),
                     lambda: [torch.randn(4, 3), torch.randn(4, 3)]),
    "BCEWithLogitsLoss": (
        lambda lib: lib.nn.BCEWithLogitsLoss(weight=lib.tensor([1.0, 2.0, 0.5]),
                                             pos_weight=lib.tensor([3.0, 1.0, 0.5])),
        lambda: [torch.randn(4, 3), torch.rand(4, 3)]),
    "L1Loss": (lambda lib: lib.nn.L1Loss(), lambda: [torch.randn(4, 3), torch.randn(4, 3)]),
    "SmoothL1Loss": (lambda lib: lib.nn.SmoothL1Loss(beta=0.5),
                     lambda: [torch.randn(4, 3), torch.randn(4, 3)]),
    "HuberLoss": (lambda lib: lib.nn.HuberLoss(reduction="sum", delta=0.7),
                  lambda: [torch.randn(4, 3), torch.randn(4, 3)]),
    "BCELoss": (lambda lib: lib.nn.BCELoss(weight=lib.tensor([1.0, 2.0, 0.5])),
                lambda: [torch.rand(4, 3) * 0.9 + 0.05, torch.rand(4, 3)]),
    "KLDivLoss": (lambda lib: lib.nn.KLDivLoss(reduction="batchmean"),
                  lambda: [torch.randn(4, 3).log_softmax(1), torch.rand(4, 3)]),
    "KLDivLoss_log_target": (lambda lib: lib.nn.KLDivLoss(reduction="sum", log_target=True),
                             lambda: [torch.randn(4, 3).log_softmax(1),
                                      torch.randn(4, 3).log_softmax(1)]),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_torch(name, dtype):
    make, inputs = LAYERS[name]
    torch.manual_seed(1)
    differential(make, inputs(), dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_module_matches_torch(name, dtype):
    make, inputs = LOSSES[name]
    torch.manual_seed(2)
    xs = inputs()
    if not xs[1].is_floating_point():
        differential(make, xs, dtype)
        return
    # A floating target: compare with the target as a constant (no gradient asked).
    torch.manual_seed(0)
    t = make(torch).to(getattr(torch, dtype))
    m = make(mg).to(getattr(mg, dtype)).to(DEVICE)
    assert repr(m) == repr(t) and list(m.state_dict()) == list(t.state_dict())
    x = xs[0].to(getattr(torch, dtype)).requires_grad_()
    y = xs[1].to(getattr(torch, dtype))
    mx = mgt(x, True)
    t_out, m_out = t(x, y), m(mx, mgt(y))
    assert_close(m_out, t_out, TOL[dtype], name)
    t_out.sum().backward()
    m_out.sum().backward()
    assert_close(mx.grad, x.grad, TOL[dtype], name + " grad")


def mlp(lib, batchnorm=False):
    nn = lib.nn
    layers = [nn.Linear(6, 16)]
    if batchnorm:
        layers.append(nn.BatchNorm1d(16))
    layers += [nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)]
    return nn.Sequential(*layers)


def train_both(dtype, batchnorm=False, steps=20):
    torch.manual_seed(3)
    t = mlp(torch, batchnorm).to(getattr(torch, dtype))
    m = mlp(mg, batchnorm).to(getattr(mg, dtype)).to(DEVICE)
    copy_state(t, m)
    t_opt = torch.optim.SGD(t.parameters(), lr=0.1, momentum=0.9)
    m_opt = mg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    t_loss_fn, m_loss_fn = torch.nn.CrossEntropyLoss(), mg.nn.CrossEntropyLoss()
    x = torch.randn(32, 6, dtype=getattr(torch, dtype))
    y = torch.randint(0, 3, (32,))
    losses = []
    for _ in range(steps):
        t_opt.zero_grad()
        m_opt.zero_grad()
        t_loss = t_loss_fn(t(x), y)
        m_loss = m_loss_fn(m(mgt(x)), mgt(y))
        t_loss.backward()
        m_loss.backward()
        t_opt.step()
        m_opt.step()
        losses.append((m_loss.item(), t_loss.item()))
    return t, m, losses


@pytest.mark.parametrize("batchnorm", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_mlp_20_sgd_steps_match_torch(dtype, batchnorm):
    t, m, losses = train_both(dtype, batchnorm)
    tol = TOL[dtype]
    for k, v in t.state_dict().items():
        assert_close(m.state_dict()[k], v, tol, k)
    assert losses[-1][1] < losses[0][1]
    np.testing.assert_allclose([a for a, _ in losses], [b for _, b in losses], rtol=tol)


def test_linear_reset_parameters_bounds_and_init_writes():
    mg.manual_seed(0)
    layer = mg.nn.Linear(50, 40).to(DEVICE)
    bound = 1 / math.sqrt(50)  # kaiming_uniform_(a=sqrt(5)): gain sqrt(2/6) * sqrt(3/fan_in)
    w = numpy_of(layer.weight)
    assert w.min() >= -bound and w.max() <= bound and w.max() > 0.9 * bound
    b = numpy_of(layer.bias)
    assert b.min() >= -bound and b.max() <= bound
    assert layer.weight._version == 1 and layer.bias._version == 1  # one write each
    emb = mg.nn.Embedding(5, 4, padding_idx=1)
    assert not numpy_of(emb.weight)[1].any() and numpy_of(emb.weight)[0].any()


def test_init_functions_with_generator():
    init = mg.nn.init
    shape = (64, 48)
    for fn, args in [(init.uniform_, (-0.5, 0.5)), (init.normal_, (0.0, 2.0)),
                     (init.trunc_normal_, (0.0, 1.0, -1.0, 1.5)), (init.xavier_uniform_, ()),
                     (init.xavier_normal_, ()), (init.kaiming_uniform_, ()),
                     (init.kaiming_normal_, ()), (init.orthogonal_, ())]:
        a = mg.empty(*shape, device=DEVICE)
        b = mg.empty(*shape, device=DEVICE)
        fn(a, *args, generator=mg.Generator(device=DEVICE).manual_seed(7))
        fn(b, *args, generator=mg.Generator(device=DEVICE).manual_seed(7))
        assert a._version == 1, fn.__name__  # one write
        np.testing.assert_array_equal(numpy_of(a), numpy_of(b), err_msg=fn.__name__)
    t = mg.empty(200, 300, device=DEVICE)
    init.trunc_normal_(t, mean=0.5, std=1.0, a=-1.0, b=1.5)
    v = numpy_of(t)
    assert v.min() >= -1.0 and v.max() <= 1.5
    init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    assert abs(numpy_of(t).std() - math.sqrt(2 / 200)) < 0.01
    init.xavier_uniform_(t, gain=init.calculate_gain("tanh"))
    bound = 5 / 3 * math.sqrt(6 / 500)
    assert abs(numpy_of(t)).max() <= bound
    for rows, cols in ((30, 20), (20, 30)):
        q = mg.empty(rows, cols, dtype=mg.float64, device=DEVICE)
        init.orthogonal_(q, gain=2.0)
        qn = numpy_of(q)
        gram = qn.T @ qn if rows >= cols else qn @ qn.T
        np.testing.assert_allclose(gram, 4 * np.eye(min(rows, cols)), atol=1e-10)
    e = mg.empty(3, 4, device=DEVICE)
    init.eye_(e)
    np.testing.assert_array_equal(numpy_of(e), np.eye(3, 4))
    init.constant_(e, 2.5)
    init.ones_(e)
    init.zeros_(e)
    assert e._version == 4 and not numpy_of(e).any()
    for fn in (lambda: init.eye_(mg.empty(3)), lambda: init.orthogonal_(mg.empty(3)),
               lambda: init.kaiming_uniform_(mg.empty(3, 3), mode="fan")):
        with pytest.raises(ValueError):
            fn()
    assert init.calculate_gain("leaky_relu", 0.2) == torch.nn.init.calculate_gain(
        "leaky_relu", 0.2)


def test_init_write_makes_a_saved_parameter_stale_naming_the_line():
    w = mg.nn.Parameter(mg.randn(3, 3, device=DEVICE))
    loss = (w * w).sum()
    mg.nn.init.zeros_(w)  # the line the error names
    with pytest.raises(RuntimeError, match=r"zero_ at [^ ]*nn_layers_test.py:\d+"):
        loss.backward()


def test_dropout_modes_and_inplace_write():
    d = mg.nn.Dropout(0.5)
    x = mg.ones(1000, device=DEVICE, requires_grad=True)
    y = d(x)
    v = numpy_of(y)
    assert set(np.unique(v)) <= {0.0, 2.0} and 0.35 < (v == 0).mean() < 0.65
    y.sum().backward()
    np.testing.assert_array_equal(numpy_of(x.grad), v)
    d.eval()
    assert d(x) is x
    d_inplace = mg.nn.Dropout(0.5, inplace=True)
    h = mg.ones(10, device=DEVICE)
    out = d_inplace(h)
    assert out is h and h._version == 1
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        mg.nn.Dropout(1.5)


def test_linear_wrong_in_features_is_refused():
    layer = mg.nn.Linear(4, 2).to(DEVICE)
    with pytest.raises(RuntimeError, match=r"in_features=4, got an input of shape \[3, 5\]"):
        layer(mg.randn(3, 5, device=DEVICE))
    with pytest.raises(RuntimeError):
        torch.nn.Linear(4, 2)(torch.randn(3, 5))


def test_embedding_padding_idx_out_of_range_is_refused():
    for bad in (5, -6, 9):
        with pytest.raises(AssertionError):
            torch.nn.Embedding(5, 3, padding_idx=bad)
        with pytest.raises(ValueError, match=f"padding_idx={bad} for num_embeddings=5"):
            mg.nn.Embedding(5, 3, padding_idx=bad)
    assert mg.nn.Embedding(5, 3, padding_idx=-1).padding_idx == 4
    assert repr(mg.nn.Embedding(5, 3, padding_idx=-1)) == repr(
        torch.nn.Embedding(5, 3, padding_idx=-1))


def test_parameters_to_vector_and_back():
    m = mg.nn.Sequential(mg.nn.Linear(3, 2), mg.nn.Linear(2, 1)).to(DEVICE)
    t = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    copy_state(t, m)
    vec = mg.nn.utils.parameters_to_vector(m.parameters())
    assert_close(vec, torch.nn.utils.parameters_to_vector(t.parameters()), 0, "vector")
    new = mg.arange(float(vec.numel()), device=DEVICE)
    mg.nn.utils.vector_to_parameters(new, m.parameters())
    torch.nn.utils.vector_to_parameters(torch.arange(float(vec.numel())), t.parameters())
    for k, v in t.state_dict().items():
        assert_close(m.state_dict()[k], v, 0, k)
    with pytest.raises(ValueError, match="11 elements"):
        mg.nn.utils.vector_to_parameters(mg.zeros(3, device=DEVICE), m.parameters())


def test_batchnorm_running_stats_are_one_tracked_write_each():
    bn = mg.nn.BatchNorm1d(3).to(DEVICE)
    versions = lambda: [bn.running_mean._version, bn.running_var._version,  # noqa: E731
                        bn.num_batches_tracked._version]
    before = versions()
    x = mg.randn(4, 3, device=DEVICE, requires_grad=True)
    bn(x)
    assert versions() == [v + 1 for v in before]
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    y = bn(x)  # eval: reads the running statistics, writes nothing
    assert versions() == [v + 1 for v in before]
    bn.train()
    bn(x)  # a training forward writes the statistics the eval graph saved
    now, then = before[0] + 2, before[0] + 1
    with pytest.raises(RuntimeError, match=rf"\(running_mean\) is at version {now}; expected "
                                           rf"version {then} .* batch_norm at module BatchNorm1d,"
                                           r" called from [^ ]*nn_layers_test.py:\d+"):
        y.sum().backward()


def test_batchnorm_bad_input_changes_nothing():
    bn = mg.nn.BatchNorm1d(3).to(DEVICE)
    state = {k: (numpy_of(v), v._version) for k, v in bn.state_dict().items()}
    with pytest.raises(ValueError, match=r"more than 1 value per channel when training, got "
                                         r"input size .*\[1, 3\]"):
        bn(mg.randn(1, 3, device=DEVICE))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        bn(mg.randn(2, 3, 1, 1, device=DEVICE))
    with pytest.raises(ValueError):
        torch.nn.BatchNorm1d(3)(torch.randn(1, 3))
    for k, v in bn.state_dict().items():
        np.testing.assert_array_equal(numpy_of(v), state[k][0], err_msg=k)
        assert v._version == state[k][1], k
    bn.eval()
    bn(mg.randn(1, 3, device=DEVICE))  # one sample is fine in eval mode, as torch


def test_inplace_activation_after_a_saved_output_is_refused_naming_the_layer():
    for act in (mg.nn.ReLU(inplace=True), mg.nn.LeakyReLU(inplace=True), mg.nn.ELU(inplace=True),
                mg.nn.SiLU(inplace=True), mg.nn.Dropout(0.3, inplace=True)):
        model = mg.nn.Sequential(mg.nn.Linear(3, 3), mg.nn.Tanh(), act).to(DEVICE)
        out = model(mg.randn(4, 3, device=DEVICE))
        with pytest.raises(RuntimeError) as err:
            out.sum().backward()
        msg = str(err.value)
        assert "TanhBackward0" in msg, msg
        assert f"at module 2 ({type(act).__name__}), called from {__file__}:" in msg, msg


def test_inplace_activation_after_linear_is_fine_and_matches_torch():
    torch.manual_seed(4)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(inplace=True),
                            torch.nn.Linear(4, 2)).double()
    m = mg.nn.Sequential(mg.nn.Linear(3, 4), mg.nn.ReLU(inplace=True),
                         mg.nn.Linear(4, 2)).double().to(DEVICE)
    copy_state(t, m)
    x = torch.randn(5, 3, dtype=torch.float64)
    t(x).sum().backward()
    m(mgt(x)).sum().backward()
    for (k, a), (_, b) in zip(t.named_parameters(), m.named_parameters()):
        assert_close(b.grad, a.grad, 1e-12, k)


def test_embedding_max_norm_renormalises_in_place_and_refuses_a_stale_graph():
    torch.manual_seed(5)
    t = torch.nn.Embedding(6, 3, max_norm=1.0).double()
    m = mg.nn.Embedding(6, 3, max_norm=1.0).double().to(DEVICE)
    with torch.no_grad():
        t.weight.mul_(3)
    copy_state(t, m)
    idx = torch.tensor([[0, 2], [2, 5]])
    v = m.weight._version
    assert_close(m(mgt(idx)), t(idx), 1e-12, "max_norm lookup")
    assert m.weight._version == v + 1  # one renormalising write
    assert_close(m.weight, t.weight, 1e-12, "renormalised rows")
    # A graph that saved the weight (a tied output projection) is refused after the renorm.
    h = mg.randn(2, 3, dtype=mg.float64, device=DEVICE, requires_grad=True)
    logits = h.matmul(m.weight.t())
    m(mgt(torch.tensor([1, 3])))
    with pytest.raises(RuntimeError, match=r"\((a view of )?weight\).*embedding_renorm_"):
        logits.sum().backward()


def test_dropout2d_zeroes_whole_channels():
    d = mg.nn.Dropout2d(0.5)
    x = mg.ones(4, 8, 3, 3, device=DEVICE)
    v = numpy_of(d(x))
    per_channel = v.reshape(4, 8, 9)
    assert all(len(set(c.tolist())) == 1 for row in per_channel for c in row)
    assert set(np.unique(v)) <= {0.0, 2.0}
    d.eval()
    assert d(x) is x
