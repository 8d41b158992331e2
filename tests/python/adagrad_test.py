"""mutagrad.optim.Adagrad against torch.optim.Adagrad 1.13: every option combination over 20
steps with the same parameters and gradients (two param groups, an lr change mid-run),
parameters and state equal to 1e-12 relative in float64 and 1e-6 in float32, on the CPU and
the host-run CUDA device (torch on the CPU); one version bump per parameter per step; state
from the constructor on (torch 1.13 creates it there); state_dict round trips; the stale-tensor
error naming Adagrad.step and this file's line; refused options with torch's messages.
"""

import inspect
import itertools

import numpy as np
import pytest
import torch

import mutagrad as mg
from optim_util import (assert_close, grads_for, make_params, numpy_of, set_grads,
                        step_alike)

STEPS = 20

CONFIGS = [dict()] + [
    dict(lr=0.05, lr_decay=lr_decay, weight_decay=wd, initial_accumulator_value=init,
         eps=eps, maximize=maximize)
    for lr_decay, wd, init, eps, maximize in itertools.product(
        (0.0, 0.1), (0.0, 0.05), (0.0, 0.3), (1e-10, 1e-3), (False, True))]


def config_id(c):
    return ",".join("%s=%s" % kv for kv in sorted(c.items())) or "defaults"


def build(lib, kwargs, params):
    groups = [{"params": params[:2]}, {"params": params[2:], "lr": 0.003}]
    return lib.optim.Adagrad(groups, **kwargs)


def assert_states_equal(mstate, tstate, dtype):
    assert mstate["param_groups"] == tstate["param_groups"]
    assert sorted(mstate["state"]) == sorted(tstate["state"])
    for index, ts in tstate["state"].items():
        ms = mstate["state"][index]
        assert set(ms) == set(ts)
        assert float(ms["step"]) == float(ts["step"])
        assert str(ms["step"].dtype).split(".")[-1] == str(ts["step"].dtype).split(".")[-1]
        assert_close(numpy_of(ms["sum"]), numpy_of(ts["sum"]), dtype, "sum %d" % index)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_matches_torch_step_for_step(config, dtype, device):
    tp = make_params(torch, dtype, 7)
    mp = make_params(mg, dtype, 7, device)
    topt = build(torch, config, tp)
    mopt = build(mg, config, mp)
    assert_states_equal(mopt.state_dict(), topt.state_dict(), dtype)  # before any step
    step_alike(torch, topt, tp, mg, mopt, mp, dtype, STEPS)
    assert_states_equal(mopt.state_dict(), topt.state_dict(), dtype)
    for p in mp:
        assert mopt.state[p]["sum"].device == p.device


def test_parameters_without_grad_keep_their_state():
    tp = make_params(torch, "float64", 1)
    mp = make_params(mg, "float64", 1)
    topt = torch.optim.Adagrad(tp, lr=0.1, initial_accumulator_value=0.5)
    mopt = mg.optim.Adagrad(mp, lr=0.1, initial_accumulator_value=0.5)
    for step in range(3):
        grads = grads_for(step, "float64")
        set_grads(torch, tp[:1], grads[:1], "float64")
        set_grads(mg, mp[:1], grads[:1], "float64")
        topt.step()
        mopt.step()
    assert mp[1]._version == 0
    assert_states_equal(mopt.state_dict(), topt.state_dict(), "float64")


def test_state_dict_round_trip():
    a_params = make_params(mg, "float64", 3)
    b_params = make_params(mg, "float64", 3)
    kwargs = dict(lr=0.1, lr_decay=0.2, initial_accumulator_value=0.1)
    a = build(mg, kwargs, a_params)
    for step in range(5):
        set_grads(mg, a_params, grads_for(step, "float64"), "float64")
        a.step()
    saved = a.state_dict()
    with mg.no_grad():
        for pa, pb in zip(a_params, b_params):
            pb.copy_(pa)
    b = build(mg, dict(kwargs, lr=0.5, lr_decay=0.0), b_params)
    b.load_state_dict(saved)
    assert b.param_groups[0]["lr"] == 0.1 and b.param_groups[0]["lr_decay"] == 0.2
    for step in range(5, 10):
        for params, opt in ((a_params, a), (b_params, b)):
            set_grads(mg, params, grads_for(step, "float64"), "float64")
            opt.step()
        for pa, pb in zip(a_params, b_params):
            np.testing.assert_array_equal(numpy_of(pb), numpy_of(pa))
    assert saved["state"][0]["step"].item() == 5  # a snapshot


def test_step_between_forward_and_backward_names_step_and_line():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    opt = mg.optim.Adagrad([w], lr=0.1)
    loss = (w * w).sum()  # MulBackward0 saves w
    w.grad = mg.ones(2)
    line = inspect.currentframe().f_lineno + 1
    opt.step()
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    msg = str(err.value)
    assert "Adagrad.step at %s:%d" % (__file__, line) in msg, msg


@pytest.mark.parametrize("kwargs", [dict(lr=-1.0), dict(lr_decay=-0.1),
                                    dict(weight_decay=-1e-3),
                                    dict(initial_accumulator_value=-0.5), dict(eps=-1e-9)])
def test_refused_options_as_torch(kwargs):
    with pytest.raises(ValueError) as want:
        torch.optim.Adagrad([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as got:
        mg.optim.Adagrad([mg.zeros(2, requires_grad=True)], **kwargs)
    assert str(got.value) == str(want.value)


def test_repr_and_defaults_as_torch():
    t = torch.optim.Adagrad([torch.zeros(2, requires_grad=True)])
    m = mg.optim.Adagrad([mg.zeros(2, requires_grad=True)])
    assert m.defaults == t.defaults
    assert sorted(m.param_groups[0]) == sorted(t.param_groups[0])
