"""Differential autograd tests of the Python module against torch."""

import inspect
import os

import pytest
import torch
import torch.autograd.functional as TF

import mutagrad as mg
import mutagrad.autograd.functional as MF

DATA = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]


def close(a, b, tol=1e-5):
    av, bv = torch.tensor(a.tolist(), dtype=torch.float64), b.detach().double()
    return torch.allclose(av, bv, atol=tol, rtol=tol)


def program(lib, x, w):
    h = x * w + 1           # intermediate
    v = h[:, 1:]            # view of the intermediate
    v.mul_(2)               # in-place on the view: rebases h's history
    h.narrow(0, 0, 1).tanh_()
    return (h.sigmoid() * h).sum() + (v ** 2).mean()


def test_inplace_on_view_of_intermediate_gradients_match_torch():
    xt = torch.tensor(DATA, requires_grad=True)
    wt = torch.tensor(DATA, requires_grad=True)
    xm = mg.tensor(DATA, requires_grad=True)
    wm = mg.tensor(DATA, requires_grad=True)
    lt = program(torch, xt, wt)
    lm = program(mg, xm, wm)
    assert lm.item() == pytest.approx(lt.item(), rel=1e-5)
    lt.backward()
    lm.backward()
    assert close(xm.grad, xt.grad, 1e-4)
    assert close(wm.grad, wt.grad, 1e-4)


def test_autograd_grad_create_graph_second_derivative_matches_torch():
    xt = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    xm = mg.tensor([0.3, -1.2, 2.0], dtype=mg.float64, requires_grad=True)
    (gt,) = torch.autograd.grad((xt.tanh() * xt ** 2).sum(), xt, create_graph=True)
    (gm,) = mg.autograd.grad((xm.tanh() * xm ** 2).sum(), xm, create_graph=True)
    assert close(gm, gt)
    (ggt,) = torch.autograd.grad(gt.sum(), xt)
    (ggm,) = mg.autograd.grad(gm.sum(), xm)
    assert close(ggm, ggt)


def test_hvp_matches_torch():
    def f(lib):
        return lambda x: (x.sin() * x ** 3).sum()

    x = [0.4, -0.8, 1.3]
    v = [1.0, 0.5, -2.0]
    xt, vt = torch.tensor(x, dtype=torch.float64), torch.tensor(v, dtype=torch.float64)
    xm, vm = mg.tensor(x, dtype=mg.float64), mg.tensor(v, dtype=mg.float64)
    out_t, hv_t = TF.hvp(f(torch), xt, vt)
    out_m, hv_m = MF.hvp(f(mg), xm, vm)
    assert abs(out_m.item() - out_t.item()) < 1e-10
    assert close(hv_m, hv_t, 1e-10)
    assert close(MF.hessian(f(mg), xm), TF.hessian(f(torch), xt), 1e-10)


def test_jacobian_and_vjp_match_torch():
    xt = torch.tensor([1.0, 2.0, -0.5], dtype=torch.float64)
    xm = mg.tensor([1.0, 2.0, -0.5], dtype=mg.float64)
    assert close(MF.jacobian(lambda x: x.exp() * x, xm), TF.jacobian(lambda x: x.exp() * x, xt))
    vt = torch.tensor([1.0, -1.0, 2.0], dtype=torch.float64)
    vm = mg.tensor([1.0, -1.0, 2.0], dtype=mg.float64)
    _, rt = TF.vjp(lambda x: x.tanh(), xt, vt)
    _, rm = MF.vjp(lambda x: x.tanh(), xm, vm)
    assert close(rm, rt)


def test_gradcheck_passes_and_fails():
    x = mg.tensor([0.3, 0.7], dtype=mg.float64, requires_grad=True)
    assert mg.autograd.gradcheck(lambda t: (t * t.exp()).sum(), (x,))
    assert mg.autograd.gradgradcheck(lambda t: (t * t.exp()).sum(), (x,))


def test_stale_saved_tensor_error_names_python_line():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()  # ExpBackward saves its result y
    line = inspect.currentframe().f_lineno + 1
    y.add_(1.0)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "modified by an inplace operation" in msg
    assert f"{os.path.basename(__file__)}:{line}" in msg, msg

    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    yt = xt.exp()
    yt.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        yt.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises_like_torch():
    xm = mg.tensor([1.0, 2.0], requires_grad=True)
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        xt.add_(1.0)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        xm.add_(1.0)
    assert xm.tolist() == [1.0, 2.0]
    assert xm._version == 0
    with mg.no_grad():
        xm.add_(1.0)
    assert xm.tolist() == [2.0, 3.0]
    assert xm._version == 1


def test_scalar_operators_and_properties_match_torch():
    at = torch.tensor([[1, 2], [3, 4]])
    am = mg.tensor([[1, 2], [3, 4]])
    for fn in [lambda a: 2 - a, lambda a: a * 2.5, lambda a: 1 / (a + 1), lambda a: a ** 2,
               lambda a: 2 ** a, lambda a: -a, lambda a: (a > 2) & (a < 4), lambda a: a == 3,
               lambda a: a.t().contiguous(), lambda a: a.unsqueeze(0).expand(2, 2, 2)]:
        rt, rm = fn(at), fn(am)
        assert rm.dtype.is_floating_point == rt.dtype.is_floating_point
        assert rm.reshape(-1).tolist() == pytest.approx(rt.reshape(-1).tolist())
        assert rm.shape == tuple(rt.shape)
    assert am.stride() == at.stride()
    assert am.t().stride() == at.t().stride()
    assert repr(am).startswith("tensor(")
