"""mutagrad.optim.swa_utils.AveragedModel against torch.optim.swa_utils 1.13: the running mean
and a custom avg_fn (EMA) over 10 updates, with and without use_buffers, parameters and
buffers equal to torch's (float64 1e-12, float32 1e-6), n_averaged and state_dict keys as
torch's; multi_avg_fn (torch 2.x) against a hand-written EMA; each update writes each averaged
tensor once in place (one version bump) and leaves the model untouched; forward runs the copy;
SWALR's lrs equal torch's over 30 steps.
"""

import numpy as np
import pytest
import torch

import mutagrad as mg
from mutagrad.optim import swa_utils

RTOL = {"float32": 1e-6, "float64": 1e-12}


def net_class(lib):
    class Net(lib.nn.Module):
        def __init__(self, dtype):
            super().__init__()
            self.w = lib.nn.Parameter(lib.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=dtype))
            self.v = lib.nn.Parameter(lib.tensor([0.1, 0.2], dtype=dtype))
            self.register_buffer("stat", lib.tensor([1.0, 3.0], dtype=dtype))

        def forward(self, x):
            return x @ self.w + self.v
    return Net


def perturb(lib, model, k):
    with lib.no_grad():
        model.w.mul_(0.9).add_(0.1 * k)
        model.v.add_(-0.05 * k)
        model.stat.add_(k)


def numpy_of(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def ema(decay):
    def fn(avg, p, n):
        return decay * avg + (1 - decay) * p
    return fn


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("use_buffers", [False, True])
@pytest.mark.parametrize("avg", ["mean", "ema"])
def test_matches_torch(dtype, use_buffers, avg):
    tmodel = net_class(torch)(getattr(torch, dtype))
    mmodel = net_class(mg)(getattr(mg, dtype))
    kwargs = dict(use_buffers=use_buffers)
    if avg == "ema":
        kwargs["avg_fn"] = ema(0.9)
    tavg = torch.optim.swa_utils.AveragedModel(tmodel, **kwargs)
    mavg = swa_utils.AveragedModel(mmodel, **kwargs)
    assert list(mavg.state_dict()) == list(tavg.state_dict())
    for k in range(10):
        perturb(torch, tmodel, k)
        perturb(mg, mmodel, k)
        versions = [t._version for t in list(mavg.parameters()) + list(mavg.buffers())]
        model_versions = [t._version for t in list(mmodel.parameters()) + list(mmodel.buffers())]
        tavg.update_parameters(tmodel)
        mavg.update_parameters(mmodel)
        after = [t._version for t in list(mavg.parameters()) + list(mavg.buffers())]
        # [w, v, n_averaged, module.stat]: w, v and n_averaged once, stat with use_buffers.
        bumped = [a - b for a, b in zip(after, versions)]
        assert bumped == [1, 1, 1, 1 if use_buffers else 0]
        assert [t._version for t in list(mmodel.parameters()) + list(mmodel.buffers())] == \
            model_versions
        for (name, t), (mname, m) in zip(tavg.state_dict().items(), mavg.state_dict().items()):
            assert name == mname
            np.testing.assert_allclose(numpy_of(m), numpy_of(t), rtol=RTOL[dtype],
                                       atol=RTOL[dtype] * 1e-3, err_msg="%s step %d" % (name, k))
    assert int(mavg.n_averaged) == 10
    assert not mavg.module.w.requires_grad or mavg.module.w.grad_fn is None
    x = mg.tensor([[1.0, 2.0]], dtype=getattr(mg, dtype))
    np.testing.assert_allclose(numpy_of(mavg(x)),
                               numpy_of(tavg(torch.tensor([[1.0, 2.0]],
                                                          dtype=getattr(torch, dtype)))),
                               rtol=RTOL[dtype])


def test_multi_avg_fn_ema_against_a_hand_written_one():
    model = net_class(mg)(mg.float64)
    avg = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.8))
    want_w = numpy_of(model.w)
    for k in range(6):
        perturb(mg, model, k)
        avg.update_parameters(model)
        want_w = numpy_of(model.w) if k == 0 else 0.8 * want_w + 0.2 * numpy_of(model.w)
        np.testing.assert_allclose(numpy_of(avg.module.w), want_w, rtol=1e-12)
    single = swa_utils.AveragedModel(net_class(mg)(mg.float64),
                                     avg_fn=swa_utils.get_ema_avg_fn(0.8))
    model2 = net_class(mg)(mg.float64)
    for k in range(6):
        perturb(mg, model2, k)
        single.update_parameters(model2)
    np.testing.assert_allclose(numpy_of(single.module.w), want_w, rtol=1e-12)
    mean = swa_utils.AveragedModel(net_class(mg)(mg.float64),
                                   multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    model3 = net_class(mg)(mg.float64)
    seen = []
    for k in range(5):
        perturb(mg, model3, k)
        seen.append(numpy_of(model3.v))
        mean.update_parameters(model3)
    # A running mean by lerp_ rounds at each step (one FMA each): where the mean is 0 it is
    # within rounding of 0 (4e-18), not 0.
    np.testing.assert_allclose(numpy_of(mean.module.v), np.mean(seen, axis=0), rtol=1e-12,
                               atol=1e-15)


def test_a_model_of_another_shape_is_refused_and_nothing_changes():
    avg = swa_utils.AveragedModel(net_class(mg)(mg.float64))
    avg.update_parameters(net_class(mg)(mg.float64))
    other = net_class(mg)(mg.float64)
    with mg.no_grad():
        other.w = mg.nn.Parameter(mg.zeros(3, 3, dtype=mg.float64))
    before = [t._version for t in avg.parameters()]
    with pytest.raises(ValueError, match="same architecture"):
        avg.update_parameters(other)
    assert [t._version for t in avg.parameters()] == before
    assert int(avg.n_averaged) == 1


@pytest.mark.parametrize("kwargs", [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.2], anneal_epochs=5,
                                                              anneal_strategy="linear"),
                                    dict(swa_lr=0.01, anneal_epochs=0)])
def test_swalr_matches_torch(kwargs):
    lrs = []
    for lib in (torch, mg):
        groups = [{"params": [lib.zeros(2, requires_grad=True)]},
                  {"params": [lib.zeros(1, requires_grad=True)], "lr": 0.5}]
        opt = lib.optim.SGD(groups, lr=0.1)
        sched = (torch.optim.swa_utils if lib is torch else swa_utils).SWALR(opt, **kwargs)
        seq = [sched.get_last_lr()]
        for _ in range(30):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        lrs.append(seq)
    assert lrs[1] == lrs[0]


@pytest.mark.parametrize("kwargs", [dict(swa_lr=[0.1]), dict(swa_lr=0.1, anneal_strategy="x"),
                                    dict(swa_lr=0.1, anneal_epochs=-1)])
def test_swalr_bad_arguments_as_torch(kwargs):
    def error(lib, mod):
        opt = lib.optim.SGD([{"params": [lib.zeros(1, requires_grad=True)]},
                             {"params": [lib.zeros(1, requires_grad=True)]}], lr=0.1)
        with pytest.raises(ValueError) as err:
            mod.SWALR(opt, **kwargs)
        return str(err.value)
    assert error(mg, swa_utils) == error(torch, torch.optim.swa_utils)


def test_update_bn_matches_torch():
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                 torch.nn.ReLU(), torch.nn.BatchNorm1d(4, momentum=0.3))
    mmodel = mg.nn.Sequential(mg.nn.Linear(3, 4), mg.nn.BatchNorm1d(4), mg.nn.ReLU(),
                              mg.nn.BatchNorm1d(4, momentum=0.3))
    mmodel.load_state_dict({k: mg.tensor(v.tolist(), dtype=getattr(mg, str(v.dtype)[6:]))
                            for k, v in tmodel.state_dict().items()})
    rng = np.random.default_rng(3)
    batches = [rng.normal(size=(5, 3)).astype(np.float32) for _ in range(4)]
    tloader = [(torch.tensor(b), 0) for b in batches]
    mloader = [(mg.tensor(b.tolist()), 0) for b in batches]
    tmodel.eval()
    mmodel.eval()
    torch.optim.swa_utils.update_bn(tloader, tmodel)
    swa_utils.update_bn(mloader, mmodel)
    assert not mmodel.training and not mmodel[1].training
    assert mmodel[3].momentum == 0.3
    for (name, t), (mname, m) in zip(tmodel.state_dict().items(), mmodel.state_dict().items()):
        assert name == mname
        np.testing.assert_allclose(numpy_of(m), numpy_of(t), rtol=1e-5, atol=1e-6, err_msg=name)


def test_an_update_between_forward_and_backward_names_the_callers_line():
    import inspect
    model = mg.nn.Linear(2, 2)
    avg = swa_utils.AveragedModel(model)
    y = (avg(mg.ones(1, 2, requires_grad=True)) ** 2).sum()  # mm saves the averaged weight
    line = inspect.currentframe().f_lineno + 1
    avg.update_parameters(model)
    with pytest.raises(RuntimeError) as err:
        y.backward()
    assert "copy_ at %s:%d" % (__file__, line) in str(err.value), str(err.value)
