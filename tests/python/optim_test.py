"""mutagrad.optim and mutagrad.nn.utils.clip_grad_* against torch 1.13: every optimizer and
option combination over 25 steps with the same parameters and gradients (two param groups,
an lr change mid-run as a scheduler makes it), parameters equal to 1e-6 relative in float32 and
1e-12 in float64, the state tensors too; state_dict round trips; the optimizer-between-forward-
and-backward mistake naming the step and this file's line; addcmul/addcdiv/lerp values,
gradients and node names; clip_grad_norm_/clip_grad_value_; refused options with torch's
exception kind.
"""

import inspect
import itertools

import numpy as np
import pytest
import torch

import mutagrad as mg
from optim_util import (RTOL, assert_close, grads_for, make_params, numpy_of, set_grads,
                        step_alike)

STEPS = 25


def configs():
    out = [("SGD", dict(lr=0.1))]
    for momentum, dampening, wd, nesterov, maximize in itertools.product(
            (0.0, 0.9), (0.0, 0.2), (0.0, 0.05), (False, True), (False, True)):
        if nesterov and (momentum == 0 or dampening != 0):
            continue
        out.append(("SGD", dict(lr=0.05, momentum=momentum, dampening=dampening,
                                weight_decay=wd, nesterov=nesterov, maximize=maximize)))
    for kind in ("Adam", "AdamW"):
        for amsgrad, wd, maximize in itertools.product((False, True), (0.0, 0.1),
                                                       (False, True)):
            out.append((kind, dict(lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=wd,
                                   amsgrad=amsgrad, maximize=maximize)))
        out.append((kind, dict()))  # the defaults (AdamW: weight_decay=1e-2)
    for centered, momentum, wd, maximize in itertools.product((False, True), (0.0, 0.9),
                                                              (0.0, 0.1), (False, True)):
        out.append(("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, centered=centered,
                                    momentum=momentum, weight_decay=wd, maximize=maximize)))
    return out


CONFIGS = configs()


def config_id(c):
    return c[0] + "-" + ",".join("%s=%s" % kv for kv in sorted(c[1].items()))


def build(lib, kind, kwargs, params):
    cls = getattr(lib.optim, kind)
    # Two groups: the first with the config's options, the second with its own lr.
    groups = [{"params": params[:2]}, {"params": params[2:], "lr": 0.003}]
    if kind == "SGD" and "lr" not in kwargs:
        kwargs = dict(kwargs, lr=0.1)
    return cls(groups, foreach=False, **kwargs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_matches_torch_step_for_step(config, dtype):
    kind, kwargs = config
    tp = make_params(torch, dtype, 7)
    mp = make_params(mg, dtype, 7)
    topt = build(torch, kind, kwargs, tp)
    mopt = build(mg, kind, kwargs, mp)
    step_alike(torch, topt, tp, mg, mopt, mp, dtype, STEPS)
    tstate, mstate = topt.state_dict(), mopt.state_dict()
    assert mstate["param_groups"] == tstate["param_groups"]
    # torch keeps {'momentum_buffer': None} for SGD without momentum; mutagrad keeps nothing.
    tstates = {i: {k: v for k, v in s.items() if v is not None}
               for i, s in tstate["state"].items()}
    assert sorted(mstate["state"]) == sorted(i for i, s in tstates.items() if s)
    for index, ts in tstates.items():
        if not ts:
            continue
        ms = mstate["state"][index]
        tkeys = set(ts)
        assert set(ms) == tkeys, index
        for key in tkeys:
            if key == "step":
                assert float(ms[key]) == float(ts[key])
            else:
                assert_close(numpy_of(ms[key]), numpy_of(ts[key]), dtype, key)


@pytest.mark.parametrize("kind,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)),
                                         ("Adam", dict(amsgrad=True)),
                                         ("AdamW", dict()),
                                         ("RMSprop", dict(centered=True, momentum=0.5))])
def test_state_dict_round_trip(kind, kwargs):
    a_params = make_params(mg, "float64", 3)
    b_params = make_params(mg, "float64", 3)
    a = build(mg, kind, kwargs, a_params)
    for step in range(5):
        set_grads(mg, a_params, grads_for(step, "float64"), "float64")
        a.step()
    saved = a.state_dict()
    with mg.no_grad():
        for pa, pb in zip(a_params, b_params):
            pb.copy_(pa)
    b = build(mg, kind, dict(kwargs, lr=0.5), b_params)
    b.load_state_dict(saved)
    assert b.param_groups[0]["lr"] == a.param_groups[0]["lr"]
    for step in range(5, 10):
        for params, opt in ((a_params, a), (b_params, b)):
            set_grads(mg, params, grads_for(step, "float64"), "float64")
            opt.step()
        for pa, pb in zip(a_params, b_params):
            np.testing.assert_array_equal(numpy_of(pb), numpy_of(pa))
    # The snapshot did not move with the later steps.
    if kind != "SGD":
        step = saved["state"][0]["step"]
        assert (step if isinstance(step, int) else step.item()) == 5
    else:
        assert not np.array_equal(numpy_of(saved["state"][0]["momentum_buffer"]),
                                  numpy_of(a.state[a_params[0]]["momentum_buffer"]))
    with pytest.raises(ValueError):
        b.load_state_dict({"state": {}, "param_groups": saved["param_groups"][:1]})


@pytest.mark.parametrize("kind", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_step_between_forward_and_backward_names_step_and_line(kind):
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    opt = getattr(mg.optim, kind)([w], lr=0.1)
    loss = (w * w).sum()  # MulBackward0 saves w
    w.grad = mg.ones(2)
    line = inspect.currentframe().f_lineno + 1
    opt.step()
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    msg = str(err.value)
    assert "%s.step at %s:%d" % (kind, __file__, line) in msg, msg
    assert "MulBackward0" in msg


def test_zero_grad_and_closure():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    opt = mg.optim.SGD([w], lr=0.5)
    w.grad = mg.tensor([3.0, 4.0])
    g = w.grad
    opt.zero_grad(set_to_none=False)
    assert g.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 5.0
    assert w.tolist() == [0.0, 0.0]  # w -= 0.5 * 2w


def test_refused_options_as_torch():
    def kinds(make):
        out = []
        for lib in (torch, mg):
            try:
                make(lib)
                out.append(None)
            except Exception as e:  # noqa: BLE001 - the kind is the outcome
                out.append(type(e).__name__)
        return out

    w = ([torch.zeros(2, requires_grad=True)], [mg.zeros(2, requires_grad=True)])
    cases = [
        lambda lib: lib.optim.SGD(w[lib is mg], lr=-1),
        lambda lib: lib.optim.SGD(w[lib is mg], lr=0.1, nesterov=True),
        lambda lib: lib.optim.SGD(w[lib is mg]),
        lambda lib: lib.optim.Adam(w[lib is mg], betas=(0.9, 1.0)),
        lambda lib: lib.optim.AdamW(w[lib is mg], eps=-1),
        lambda lib: lib.optim.RMSprop(w[lib is mg], alpha=-0.5),
        lambda lib: lib.optim.Adam([]),
        lambda lib: lib.optim.SGD([w[lib is mg][0] * 2], lr=0.1),
        lambda lib: lib.optim.SGD(w[lib is mg][0], lr=0.1),
    ]
    for i, make in enumerate(cases):
        t, m = kinds(make)
        assert t is not None and t == m, (i, t, m)
    # torch 1.13 only warns about a parameter given twice (and would step it twice); mutagrad
    # refuses it.
    with pytest.raises(ValueError, match="more than once"):
        mg.optim.SGD(w[1] + w[1], lr=0.1)


def test_param_groups_readable_and_added():
    a = mg.zeros(2, requires_grad=True)
    b = mg.zeros(3, requires_grad=True)
    opt = mg.optim.Adam([a], lr=0.01)
    opt.add_param_group({"params": b, "lr": 0.1, "amsgrad": True})
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.1]
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    a.grad = mg.ones(2)
    b.grad = mg.ones(3)
    opt.step()
    assert set(opt.state[b]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert set(opt.state[a]) == {"step", "exp_avg", "exp_avg_sq"}


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    rng = np.random.default_rng(5)
    grads = [rng.normal(size=s).astype("float32") for s in [(4, 3), (5,), ()]]
    outs = []
    for lib in (torch, mg):
        params = [lib.zeros(g.shape, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g.tolist())
        nograd = lib.zeros(2, requires_grad=True)
        total = lib.nn.utils.clip_grad_norm_(params + [nograd], max_norm, norm_type=norm_type)
        outs.append((total.item(), [numpy_of(p.grad) for p in params], nograd.grad))
    (tt, tg, tn), (mt, mgr, mn) = outs
    np.testing.assert_allclose(mt, tt, rtol=1e-6)
    for a, b in zip(mgr, tg):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert tn is None and mn is None


def test_clip_grad_value_and_nonfinite_as_torch():
    g = [[0.5, -3.0, 2.0], [-0.1, 7.0, -0.2]]
    outs = []
    for lib in (torch, mg):
        p = lib.zeros(2, 3, requires_grad=True)
        p.grad = lib.tensor(g)
        lib.nn.utils.clip_grad_value_(p, 1.5)
        q = lib.zeros(2, requires_grad=True)
        q.grad = lib.tensor([float("nan"), 1.0])
        try:
            lib.nn.utils.clip_grad_norm_([q], 1.0, error_if_nonfinite=True)
            kind = None
        except RuntimeError as e:
            kind = type(e).__name__
        outs.append((p.grad.tolist(), kind))
    assert outs[0][0] == outs[1][0]
    assert outs[0][1] is not None and outs[1][1] is not None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_addcmul_addcdiv_lerp_match_torch(dtype):
    rng = np.random.default_rng(11)
    x, a, b = (rng.normal(size=(3, 4)).astype(dtype) for _ in range(3))
    b = np.abs(b) + 0.5
    w = rng.uniform(-0.5, 1.5, size=(3, 4)).astype(dtype)
    results = []
    for lib in (torch, mg):
        dt = getattr(lib, dtype)
        tx, ta, tb, tw = (lib.tensor(v.tolist(), dtype=dt, requires_grad=True)
                          for v in (x, a, b, w))
        outs = [lib.addcmul(tx, ta, tb, value=0.3), tx.addcdiv(ta, tb, value=-1.7),
                lib.lerp(tx, ta, 0.3), lib.lerp(tx, ta, 0.7), tx.lerp(ta, tw)]
        names = [o.grad_fn.name() for o in outs]
        loss = sum((o * (i + 1)).sum() for i, o in enumerate(outs))
        loss.backward()
        inplace = tx.detach().clone()
        inplace.addcmul_(ta.detach(), tb.detach(), value=2.0).addcdiv_(ta.detach(), tb.detach())
        inplace.lerp_(ta.detach(), 0.6).lerp_(tb.detach(), tw.detach())
        results.append(([numpy_of(o) for o in outs], names,
                        [numpy_of(t.grad) for t in (tx, ta, tb, tw)], numpy_of(inplace),
                        inplace._version))
    (to, tn, tg, ti, tv), (mo, mn, mgr, mi, mv) = results
    assert mn == tn
    for got, want in zip(mo + mgr + [mi], to + tg + [ti]):
        np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype])
    assert mv == tv == 4


def test_inplace_math_records_the_python_line():
    x = mg.zeros(3, requires_grad=True)
    y = x * 1.0
    z = y.sigmoid()  # SigmoidBackward0 saves its output
    line = inspect.currentframe().f_lineno + 1
    z.addcdiv_(mg.ones(3), mg.ones(3), value=0.5)
    with pytest.raises(RuntimeError) as err:
        z.sum().backward()
    assert "addcdiv_ at %s:%d" % (__file__, line) in str(err.value)
