"""mutagrad.optim.lr_scheduler against torch.optim.lr_scheduler 1.13: every scheduler in several
configurations over 50 steps on two param groups, the lrs (and OneCycleLR's momentum or betas)
equal to torch's bit for bit after each step, get_last_lr(), last_epoch, state_dict() keys and
values and a load_state_dict() resume; the warnings torch gives (scheduler.step() before
optimizer.step(), get_lr() outside step(), step(epoch)); bad arguments with torch's exception
kind and message; the optimizer steps with the scheduled lr, and its bumps still name the
caller's line when a scheduler has wrapped optimizer.step.
"""

import inspect
import math
import warnings

import pytest
import torch

import mutagrad as mg

STEPS = 50


def make_opt(lib, kind="SGD", **kwargs):
    groups = [{"params": [lib.zeros(2, requires_grad=True)]},
              {"params": [lib.zeros(3, requires_grad=True)], "lr": 0.5}]
    if kind == "SGD":
        kwargs.setdefault("momentum", 0.9)
        return lib.optim.SGD(groups, lr=0.1, **kwargs)
    return getattr(lib.optim, kind)(groups, lr=0.1, **kwargs)


def make_sched(lib, name, opt, args, kwargs):
    mod = lib.optim.lr_scheduler
    if name == "SequentialLR":
        inner = [make_sched(lib, n, opt, a, k) for n, a, k in args[0]]
        return mod.SequentialLR(opt, inner, *args[1:], **kwargs)
    if name == "ChainedScheduler":
        return mod.ChainedScheduler([make_sched(lib, n, opt, a, k) for n, a, k in args[0]])
    return getattr(mod, name)(opt, *args, **kwargs)


def lam(e):
    return 0.95 ** e


def lam2(e):
    return 1.0 / (1 + e // 3)


CASES = [
    ("StepLR", (10,), {}),
    ("StepLR", (3,), dict(gamma=0.5)),
    ("StepLR", (1,), dict(gamma=0.97)),
    ("MultiStepLR", ([30, 5, 20, 20],), dict(gamma=0.5)),
    ("MultiStepLR", ([10, 40],), {}),
    ("ExponentialLR", (0.93,), {}),
    ("ExponentialLR", (0.5,), {}),
    ("CosineAnnealingLR", (10,), {}),
    ("CosineAnnealingLR", (7,), dict(eta_min=0.01)),
    ("CosineAnnealingLR", (50,), dict(eta_min=1e-3)),
    ("LinearLR", (), {}),
    ("LinearLR", (), dict(start_factor=1.0, end_factor=0.1, total_iters=20)),
    ("LinearLR", (), dict(start_factor=0.25, end_factor=0.75, total_iters=60)),
    ("ConstantLR", (), dict(factor=0.5, total_iters=4)),
    ("LambdaLR", (lam,), {}),
    ("LambdaLR", ([lam, lam2],), {}),
    ("MultiplicativeLR", (lambda e: 0.9,), {}),
    ("OneCycleLR", (1.0,), dict(total_steps=STEPS)),
    ("OneCycleLR", ([1.0, 2.0],), dict(epochs=5, steps_per_epoch=10, pct_start=0.25,
                                       anneal_strategy="linear")),
    ("OneCycleLR", (0.3,), dict(total_steps=STEPS, three_phase=True, div_factor=10.0,
                                final_div_factor=100.0)),
    ("OneCycleLR", (0.3,), dict(total_steps=STEPS, cycle_momentum=False)),
    ("SequentialLR", ([("LinearLR", (), dict(start_factor=0.1, total_iters=5)),
                       ("CosineAnnealingLR", (45,), {})], [5]), {}),
    ("SequentialLR", ([("ConstantLR", (), dict(factor=0.5, total_iters=3)),
                       ("ExponentialLR", (0.9,), {}),
                       ("StepLR", (4,), {})], [10, 30]), {}),
    ("ChainedScheduler", ([("ConstantLR", (), dict(factor=0.5, total_iters=3)),
                           ("ExponentialLR", (0.9,), {})],), {}),
]


def case_id(case):
    return "%s-%s-%s" % (case[0], len(case[1]), ",".join(sorted(case[2])))


def group_values(opt):
    out = []
    for g in opt.param_groups:
        out.append((g["lr"], g.get("momentum"), g.get("betas"), g.get("initial_lr")))
    return out


def comparable(state):
    """A state_dict with functions and bound methods replaced by their names."""
    if isinstance(state, dict):
        return {k: comparable(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(comparable(v) for v in state)
    if callable(state):
        return getattr(state, "__name__", "callable")
    return state


RUNS = [(case, "SGD") for case in CASES] + [(case, "Adam") for case in CASES
                                             if case[0] == "OneCycleLR"]  # betas[0] cycles


@pytest.mark.parametrize("case,kind", RUNS, ids=lambda x: x if isinstance(x, str) else case_id(x))
def test_lrs_match_torch_for_50_steps(case, kind):
    name, args, kwargs = case
    topt, mopt = make_opt(torch, kind), make_opt(mg, kind)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tsched = make_sched(torch, name, topt, args, kwargs)
    with warnings.catch_warnings(record=True) as mw:
        warnings.simplefilter("always")
        msched = make_sched(mg, name, mopt, args, kwargs)
    assert [str(w.message) for w in mw] == [str(w.message) for w in tw]
    assert group_values(mopt) == group_values(topt)
    assert msched.get_last_lr() == tsched.get_last_lr()
    for step in range(STEPS - 1):
        topt.step()
        mopt.step()
        tsched.step()
        msched.step()
        assert group_values(mopt) == group_values(topt), step
        assert msched.get_last_lr() == tsched.get_last_lr(), step
        assert getattr(msched, "last_epoch", None) == getattr(tsched, "last_epoch", None)
    tstate, mstate = comparable(tsched.state_dict()), comparable(msched.state_dict())
    assert sorted(mstate) == sorted(tstate)
    for key in tstate:
        if key in ("_schedulers", "lr_lambdas", "anneal_func", "_with_counter"):
            continue
        assert mstate[key] == tstate[key], key


@pytest.mark.parametrize("case", [c for c in CASES if c[0] not in ("ChainedScheduler",)],
                         ids=case_id)
def test_load_state_dict_resumes_the_schedule(case):
    name, args, kwargs = case
    a_opt, b_opt = make_opt(mg), make_opt(mg)
    a = make_sched(mg, name, a_opt, args, kwargs)
    for _ in range(17):
        a_opt.step()
        a.step()
    b = make_sched(mg, name, b_opt, args, kwargs)
    b.load_state_dict(a.state_dict())
    for g_a, g_b in zip(a_opt.param_groups, b_opt.param_groups):
        g_b["lr"] = g_a["lr"]  # the optimizer's own state_dict carries it in practice
    for _ in range(20):
        for opt, s in ((a_opt, a), (b_opt, b)):
            opt.step()
            s.step()
        assert b.get_last_lr() == a.get_last_lr()


def test_reduce_lr_on_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.8, 0.8, 0.8, 0.85, 0.7, 0.7, 0.7, 0.7, 0.7]
    configs = [dict(), dict(patience=2, cooldown=1, min_lr=[0.05, 0.0]),
               dict(mode="max", patience=1, factor=0.5, threshold=0.01, threshold_mode="abs"),
               dict(patience=0, factor=0.5, eps=0.2)]
    for cfg in configs:
        topt, mopt = make_opt(torch), make_opt(mg)
        ts = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **cfg)
        ms = mg.optim.lr_scheduler.ReduceLROnPlateau(mopt, **cfg)
        for i in range(40):
            m = metrics[i % len(metrics)] * (1 + 0.001 * (i // len(metrics)))
            ts.step(torch.tensor(m) if i % 2 else m)
            ms.step(mg.tensor(m) if i % 2 else m)
            assert group_values(mopt) == group_values(topt), (cfg, i)
            assert ms.get_last_lr() == ts._last_lr
            assert (ms.best, ms.num_bad_epochs, ms.cooldown_counter, ms.last_epoch) == \
                (ts.best, ts.num_bad_epochs, ts.cooldown_counter, ts.last_epoch)
        assert sorted(ms.state_dict()) == sorted(ts.state_dict())
        other = mg.optim.lr_scheduler.ReduceLROnPlateau(make_opt(mg), **cfg)
        other.load_state_dict(ms.state_dict())
        assert other.best == ms.best and other.num_bad_epochs == ms.num_bad_epochs


def record(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(w_.category, str(w_.message)) for w_ in w]


def test_warnings_as_torch():
    def scheduler_before_optimizer(lib):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        return record(lambda: (sched.step(), opt.step(), sched.step()))

    def get_lr_outside_step(lib):
        sched = lib.optim.lr_scheduler.ExponentialLR(make_opt(lib), 0.9)
        return record(sched.get_lr)

    def lambda_get_lr_outside_step(lib):
        sched = lib.optim.lr_scheduler.LambdaLR(make_opt(lib), lam)
        return record(sched.get_lr)

    def step_with_epoch(lib):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        opt.step()
        return record(lambda: sched.step(5))

    def overridden_step(lib):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        opt.step = lambda closure=None: None
        return record(sched.step)

    def right_order(lib):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        return record(lambda: [(opt.step(), sched.step()) for _ in range(3)])

    for case in (scheduler_before_optimizer, get_lr_outside_step, lambda_get_lr_outside_step,
                 step_with_epoch, overridden_step, right_order):
        want = case(torch)
        assert case(mg) == want, case.__name__
        if case is not right_order:
            assert want, case.__name__  # the case does warn


def test_step_with_epoch_uses_the_closed_form():
    for name, args in (("StepLR", (3, 0.5)), ("MultiStepLR", ([2, 5, 5], 0.5)),
                       ("ExponentialLR", (0.9,)), ("CosineAnnealingLR", (10,)),
                       ("LinearLR", (0.2, 1.0, 8)), ("ConstantLR", (0.3, 4)),
                       ("LambdaLR", (lam,))):
        results = []
        for lib in (torch, mg):
            opt = make_opt(lib)
            sched = getattr(lib.optim.lr_scheduler, name)(opt, *args)
            out = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for epoch in (4, 1, 9, 6, 20):
                    opt.step()
                    sched.step(epoch)
                    out.append(sched.get_last_lr())
            results.append(out)
        assert results[1] == results[0], name


def errors(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the kind is what is compared
        return type(e), str(e)
    return None


BAD = [
    lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, start_factor=1.5),
    lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, end_factor=-0.1),
    lambda lib, opt: lib.optim.lr_scheduler.ConstantLR(opt, factor=2.0),
    lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, [lam]),
    lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, 3, last_epoch=5),
    lambda lib, opt: lib.optim.lr_scheduler.StepLR(object(), 3),
    lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 1.0),
    lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=0),
    lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, epochs=2, steps_per_epoch=-1),
    lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=5, pct_start=1.5),
    lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=5,
                                                       anneal_strategy="exp"),
    lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, [1.0], total_steps=5),
    lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0),
    lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="avg"),
    lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="x"),
    lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1]),
    lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt, [lib.optim.lr_scheduler.StepLR(opt, 2)], [3]),
    lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt, [lib.optim.lr_scheduler.StepLR(make_opt(lib), 2)], []),
]


@pytest.mark.parametrize("index", range(len(BAD)))
def test_bad_arguments_as_torch(index):
    want = errors(lambda: BAD[index](torch, make_opt(torch)))
    got = errors(lambda: BAD[index](mg, make_opt(mg)))
    assert want is not None
    assert got == want


def test_onecycle_past_total_steps_raises_as_torch():
    out = []
    for lib in (torch, mg):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=3)
        for _ in range(3):
            opt.step()
            sched.step()
        out.append(errors(sched.step))
    assert out[0] is not None and out[1] == out[0]


def test_optimizer_steps_with_scheduled_lr_and_names_the_line():
    w = mg.tensor([0.0, 0.0], requires_grad=True)
    opt = mg.optim.SGD([w], lr=1.0)
    sched = mg.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    for _ in range(3):
        w.grad = mg.ones(2)
        opt.step()
        sched.step()
    assert w.tolist() == [-1.75, -1.75]
    loss = (w * w).sum()
    w.grad = mg.ones(2)
    line = inspect.currentframe().f_lineno + 1
    opt.step()  # through the scheduler's counting wrapper
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    assert "SGD.step at %s:%d" % (__file__, line) in str(err.value)
    assert opt._step_count == 4


def test_cosine_formula_sanity():
    # The chainable recurrence agrees with the closed form to rounding (and torch, above).
    opt = make_opt(mg)
    sched = mg.optim.lr_scheduler.CosineAnnealingLR(opt, 10)
    for e in range(1, 30):
        opt.step()
        sched.step()
        want = 0.1 * (1 + math.cos(math.pi * e / 10)) / 2
        assert abs(sched.get_last_lr()[0] - want) < 1e-15
