"""Shared by the optimizer tests against torch (optim_test.py, adagrad_test.py): the same
parameters and gradients for both libraries, and the step-for-step comparison."""

import numpy as np

SHAPES = [(4, 3), (3,), ()]
RTOL = {"float32": 1e-6, "float64": 1e-12}


def make_params(lib, dtype, seed, device="cpu"):
    rng = np.random.default_rng(seed)
    out = []
    for shape in SHAPES:
        values = rng.uniform(-1, 1, size=shape).astype(dtype)
        out.append(lib.tensor(values.tolist(), dtype=getattr(lib, dtype), device=device,
                              requires_grad=True))
    return out


def grads_for(step, dtype):
    rng = np.random.default_rng(1000 + step)
    return [rng.normal(size=shape).astype(dtype) for shape in SHAPES]


def set_grads(lib, params, grads, dtype):
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g.tolist(), dtype=getattr(lib, dtype), device=p.device)


def numpy_of(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def assert_close(got, want, dtype, what):
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype] * 1e-3,
                               err_msg=what)


def step_alike(tlib, topt, tp, mlib, mopt, mp, dtype, steps):
    """`steps` steps of torch's and mutagrad's optimizer on the same gradients, halving the first
    group's lr half-way (a scheduler's write); each mutagrad step bumps every parameter once and
    leaves the parameters close to torch's."""
    for step in range(steps):
        grads = grads_for(step, dtype)
        set_grads(tlib, tp, grads, dtype)
        set_grads(mlib, mp, grads, dtype)
        if step == steps // 2:
            for opt in (topt, mopt):
                opt.param_groups[0]["lr"] *= 0.5
        versions = [p._version for p in mp]
        topt.step()
        mopt.step()
        assert [p._version for p in mp] == [v + 1 for v in versions]  # one bump each
        for i, (t, m) in enumerate(zip(tp, mp)):
            assert_close(numpy_of(m), numpy_of(t), dtype, "step %d param %d" % (step, i))
