"""The autograd API of the mutagrad package against torch: grad/grad_fn/is_leaf/requires_grad,
backward, autograd.grad, autograd.functional, gradcheck, grad modes, and the call site of the
mutation (stale saved tensor) error, which must name the Python file:line of the mutating
statement (hand-derived: torch does not report it).
"""

import inspect
import os

import pytest
import torch
import torch.autograd.functional as TF

import mutagrad as mg
import mutagrad.autograd.functional as MF
from api_util import LIBS, same_ok, same_outcome


# ---- autograd attributes ---------------------------------------------------------------------

def test_grad_fn_name_and_next_functions_match_torch():
    def structure(fn, depth=0):
        if fn is None:
            return None
        name = fn.name().split("::")[-1]  # torch says torch::autograd::AccumulateGrad
        return name, tuple((structure(f, depth + 1), nr) for f, nr in fn.next_functions)

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        y = ((x * w).exp() + 2 * x - w / 2)[0] * lib.ones(1)
        assert isinstance(y.grad_fn.next_functions, tuple)
        return structure(y.grad_fn)

    same_ok(run)


@LIBS
def test_accumulate_grad_variable_is_the_leaf(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    acc = (x * 2).grad_fn.next_functions[0][0]
    assert acc.name().endswith("AccumulateGrad")
    assert acc.variable.tolist() == x.tolist()
    acc.variable.detach().add_(0)  # the very leaf: shares its version counter
    assert x._version == 1
    assert lib.tensor([1.0]).grad_fn is None and x.grad_fn is None


def test_is_leaf_matches_torch():
    def run(lib):
        x = lib.tensor([1.0], requires_grad=True)
        return (x.is_leaf, (x * 2).is_leaf, lib.ones(1).is_leaf, (lib.ones(1) * 2).is_leaf,
                x.detach().is_leaf, x[0].is_leaf, x.clone().detach().is_leaf)

    same_ok(run)


def test_grad_setter_and_none_match_torch():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.grad = lib.tensor([5.0, 6.0])
        (x * 2).sum().backward()
        accumulated = x.grad.clone()
        x.grad = None
        (x * 3).sum().backward()
        fresh = x.grad.clone()
        x.grad = None
        return accumulated, fresh, x.grad

    same_ok(run)


@pytest.mark.parametrize("bad", [lambda lib: lib.ones(3), lambda lib: lib.ones(2, dtype=lib.float64),
                                 lambda lib: lib.ones(2, 1)])
def test_grad_setter_errors_match_torch(bad):
    assert same_outcome(lambda lib: setattr(lib.zeros(2, requires_grad=True), "grad", bad(lib))) \
        == "RuntimeError"


def test_retain_grad_matches_torch():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        h.retain_grad()
        k = h * h
        (k.sum()).backward()
        return x.grad, h.grad, h.retains_grad, k.retains_grad, k.grad

    same_ok(run)


@pytest.mark.parametrize("bad", [lambda lib: lib.ones(2).retain_grad(),
                                 lambda lib: (lib.ones(2, requires_grad=True) * 2).backward(),
                                 lambda lib: lib.ones(2).sum().backward(),
                                 lambda lib: (lib.ones(2, requires_grad=True) * 2).backward(lib.ones(3))])
def test_backward_errors_match_torch(bad):
    assert same_outcome(bad) == "RuntimeError"


def test_backward_gradient_retain_graph_create_graph_inputs():
    def run(lib):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        w = lib.tensor([2.0, 3.0], requires_grad=True)
        y = (x ** 3) * w
        y.backward(gradient=lib.tensor([1.0, 10.0]), retain_graph=True)
        g1 = x.grad.clone()
        y.backward(lib.tensor([1.0, 1.0]), inputs=[w])  # only w accumulates
        g2 = (x.grad.clone(), w.grad.clone())
        x.grad = None
        (x ** 3).sum().backward(create_graph=True)
        gx = x.grad
        gx_info = (gx.requires_grad, gx.grad_fn is not None)
        x.grad = None
        gx.sum().backward()
        return g1, g2, gx_info, x.grad

    same_ok(run)


def test_backward_twice_without_retain_graph_raises():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp().sum()
        y.backward()
        y.backward()

    assert same_outcome(run) == "RuntimeError"
    with pytest.raises(RuntimeError, match="(?i)backward through the graph a second time"):
        run(mg)


def test_autograd_backward_function():
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        lib.autograd.backward([(a * b).sum(), a * 2], [None, lib.tensor([1.0, -1.0])])
        first = (a.grad.clone(), b.grad.clone())
        lib.autograd.backward((a * b).sum(), inputs=[b])
        return first, a.grad, b.grad

    same_ok(run)


# ---- autograd.grad ---------------------------------------------------------------------------

def test_autograd_grad_forms_match_torch():
    def run(lib):
        x = lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        u = lib.tensor([1.0], requires_grad=True)
        y = (x.tanh() * w ** 2).sum()
        g = lib.autograd.grad(y, x, retain_graph=True)
        gw = lib.autograd.grad([y], [x, w], retain_graph=True)
        gu = lib.autograd.grad(y, (x, u), allow_unused=True, retain_graph=True)
        v = lib.autograd.grad(x * w, x, grad_outputs=lib.tensor([1.0, 0.0, 2.0], dtype=lib.float64))
        (d1,) = lib.autograd.grad((x ** 3).sum(), x, create_graph=True)
        (d2,) = lib.autograd.grad(d1.sum(), x)
        return g, gw, gu, v, d1.requires_grad, d1, d2, x.grad

    same_ok(run, tol=1e-12)


@pytest.mark.parametrize("bad", [
    lambda lib, x: lib.autograd.grad((x * 2).sum(), [x, lib.ones(1, requires_grad=True)]),
    lambda lib, x: lib.autograd.grad(lib.ones(2).sum(), x),
    lambda lib, x: lib.autograd.grad(x * 2, x),
    lambda lib, x: (lambda y: (lib.autograd.grad(y, x), lib.autograd.grad(y, x)))(x.exp().sum()),
    lambda lib, x: lib.autograd.grad((x * 2).sum(), x * 1),
])
def test_autograd_grad_errors_match_torch(bad):
    assert same_outcome(lambda lib: bad(lib, lib.tensor([1.0, 2.0], requires_grad=True))) == "RuntimeError"


# ---- autograd.functional ---------------------------------------------------------------------

def _f1(x):
    return (x.sin() * x ** 3).sum()


def _f2(x, y):
    return (x.exp() * y).sum() + (x * x * y).sum()


def _vec(x, y):
    return x * y.sum(), x.exp()


def _writes_through_views(a, b):
    """Writes into views of an intermediate (a slice, a reshaped view) and an indexed write of
    a dual: forward mode carries each into the base's tangent."""
    y = a.clone()
    y[1:].mul_(b[:2])
    y.view(3, 1).add_(b.unsqueeze(1).sin())
    y[0] = b[2] * a[0]
    return y.exp(), (y * b).sum()


def _tuples(x):
    return tuple(_tuples(e) for e in x) if isinstance(x, (list, tuple)) else x


def _args(lib, *values):
    return tuple(lib.tensor(v, dtype=lib.float64) for v in values)


FUNCTIONAL = {
    "vjp tensor": lambda F, lib: F.vjp(lambda x: x.tanh() * 2, *_args(lib, [0.2, -0.4], [1.0, 3.0])),
    "vjp tuple": lambda F, lib: F.vjp(_vec, _args(lib, [0.2, -0.4], [1.5, 0.5]),
                                      _args(lib, [1.0, 2.0], [0.5, -1.0])),
    "vjp scalar v None": lambda F, lib: F.vjp(_f1, *_args(lib, [0.2, -0.4])),
    "vjp create_graph": lambda F, lib: (lambda r: (r, r[1].requires_grad))(
        F.vjp(lambda x: x ** 2, *_args(lib, [1.0, 2.0], [1.0, 1.0]), create_graph=True)),
    "jvp tensor": lambda F, lib: F.jvp(lambda x: x.exp() * x, *_args(lib, [0.1, 0.7], [1.0, -1.0])),
    "jvp tuple": lambda F, lib: F.jvp(_vec, _args(lib, [0.2, -0.4], [1.5, 0.5]),
                                      _args(lib, [1.0, 2.0], [0.5, -1.0])),
    "jvp 1-elt v None": lambda F, lib: F.jvp(lambda x: x * 3, *_args(lib, [2.0])),
    "hvp": lambda F, lib: F.hvp(_f1, *_args(lib, [0.4, -0.8, 1.3], [1.0, 0.5, -2.0])),
    "hvp tuple": lambda F, lib: F.hvp(_f2, _args(lib, [0.4, -0.8], [1.0, 2.0]),
                                      _args(lib, [1.0, 0.5], [-1.0, 3.0])),
    "vhp": lambda F, lib: F.vhp(_f1, *_args(lib, [0.4, -0.8, 1.3], [1.0, 0.5, -2.0])),
    "vhp tuple": lambda F, lib: F.vhp(_f2, _args(lib, [0.4, -0.8], [1.0, 2.0]),
                                      _args(lib, [1.0, 0.5], [-1.0, 3.0])),
    "jacobian": lambda F, lib: F.jacobian(lambda x: x.exp() * x.sum(), *_args(lib, [1.0, 2.0, -0.5])),
    "jacobian tuple in": lambda F, lib: F.jacobian(lambda a, b: a * b, _args(lib, [1.0, 2.0], [3.0, 4.0])),
    "jacobian tuple out": lambda F, lib: F.jacobian(lambda a: (a * 2, a.sum()), *_args(lib, [1.0, 2.0])),
    "jacobian tuples": lambda F, lib: F.jacobian(_vec, _args(lib, [1.0, 2.0], [3.0, 4.0])),
    "jacobian 2d": lambda F, lib: F.jacobian(lambda x: x.t() ** 2, *_args(lib, [[1.0, 2.0], [3.0, 4.0]])),
    "jacobian create_graph": lambda F, lib: F.jacobian(
        lambda x: x ** 3, *_args(lib, [1.0, 2.0]), create_graph=True).requires_grad,
    "jacobian vectorize": lambda F, lib: F.jacobian(lambda x: x ** 3, *_args(lib, [1.0, 2.0]),
                                                    vectorize=True),
    "hessian": lambda F, lib: F.hessian(_f1, *_args(lib, [0.4, -0.8, 1.3])),
    "hessian tuple": lambda F, lib: F.hessian(_f2, _args(lib, [0.4, -0.8], [1.0, 2.0])),
    "hessian 2d": lambda F, lib: F.hessian(lambda x: (x ** 3).sum(), *_args(lib, [[1.0, 2.0], [3.0, 4.0]])),
    # Forward mode (issue 40): jvp per input element, and forward-over-reverse.
    # torch 1.13 returns lists of lists here (tuples in reverse mode); ours are tuples in both.
    "jacobian forward-mode": lambda F, lib: _tuples(F.jacobian(
        lambda a, b: (a.exp() * b.sum(), (a * b).softmax(0)), _args(lib, [1.0, 2.0, -0.5], [0.3, 0.1, 2.0]),
        vectorize=True, strategy="forward-mode")),
    "jacobian forward-mode 2d": lambda F, lib: F.jacobian(
        lambda x: x.t().cumsum(0) ** 2, *_args(lib, [[1.0, 2.0], [3.0, 4.0]]), vectorize=True,
        strategy="forward-mode"),
    # torch 1.13 batches these columns with vmap; ours are one dual pass each (docs/forward-ad.md).
    "jacobian forward-mode writes through views": lambda F, lib: _tuples(F.jacobian(
        _writes_through_views, _args(lib, [1.0, 2.0, -0.5], [0.3, 0.1, 2.0]), vectorize=True,
        strategy="forward-mode")),
    "hessian forward-over-reverse writes through views": lambda F, lib: _tuples(F.hessian(
        lambda a, b: _writes_through_views(a, b)[1], _args(lib, [1.0, 2.0, -0.5], [0.3, 0.1, 2.0]),
        vectorize=True, outer_jacobian_strategy="forward-mode")),
    "hessian forward-over-reverse": lambda F, lib: _tuples(F.hessian(
        _f2, _args(lib, [0.4, -0.8], [1.0, 2.0]), vectorize=True,
        outer_jacobian_strategy="forward-mode")),
    "hessian forward-over-reverse 2d": lambda F, lib: F.hessian(
        lambda x: (x.tanh() ** 3).sum(), *_args(lib, [[1.0, 2.0], [3.0, 4.0]]), vectorize=True,
        outer_jacobian_strategy="forward-mode"),
}


@pytest.mark.parametrize("name", list(FUNCTIONAL), ids=list(FUNCTIONAL))
def test_functional_transforms_match_torch(name):
    def run(lib):
        return FUNCTIONAL[name](TF if lib is torch else MF, lib)

    same_ok(run, tol=1e-10)


FUNCTIONAL_ERRORS = {
    "list inputs": lambda F, lib: F.vjp(lambda a: a * 2, [lib.ones(2)], lib.ones(2)),
    "list outputs": lambda F, lib: F.vjp(lambda a: [a * 2], lib.ones(2), lib.ones(2)),
    "jvp v None": lambda F, lib: F.jvp(lambda a: a * 2, lib.ones(2)),
    "vjp v None": lambda F, lib: F.vjp(lambda a: a * 2, lib.ones(2)),
    "hvp non-scalar": lambda F, lib: F.hvp(lambda a: a * 2, lib.ones(2), lib.ones(2)),
    "vjp bad v size": lambda F, lib: F.vjp(lambda a: a * 2, lib.ones(2), lib.ones(3)),
    # torch 1.13 computes forward-mode Jacobians only with vectorize=True.
    "jacobian forward-mode default vectorize": lambda F, lib: F.jacobian(
        lambda a: a.sin(), lib.ones(2), strategy="forward-mode"),
    "jacobian forward-mode vectorize=False": lambda F, lib: F.jacobian(
        lambda a: a.sin(), (lib.ones(2), lib.ones(2)), vectorize=False, strategy="forward-mode"),
    "hessian forward-mode vectorize=False": lambda F, lib: F.hessian(
        lambda a: a.sin().sum(), lib.ones(2), outer_jacobian_strategy="forward-mode"),
}


@pytest.mark.parametrize("name", list(FUNCTIONAL_ERRORS), ids=list(FUNCTIONAL_ERRORS))
def test_functional_errors_match_torch(name):
    assert same_outcome(lambda lib: FUNCTIONAL_ERRORS[name](TF if lib is torch else MF, lib)) != "ok"


def test_forward_mode_jacobian_without_vectorize_message_matches_torch():
    calls = [lambda F, lib: F.jacobian(lambda a: a * 2, lib.ones(2), strategy="forward-mode"),
             lambda F, lib: F.hessian(lambda a: (a * a).sum(), lib.ones(2), vectorize=False,
                                      outer_jacobian_strategy="forward-mode")]
    for call in calls:
        with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
            call(TF, torch)
        with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
            call(MF, mg)


def test_functional_signatures_match_torch():
    for name in ["vjp", "jvp", "hvp", "vhp", "jacobian", "hessian"]:
        assert str(inspect.signature(getattr(MF, name))) == str(inspect.signature(getattr(TF, name)))


def test_hvp_after_mutation_between_passes():
    """The HVP of f at x, then x is mutated in place and the HVP is taken again: the second
    result is the HVP at the new point (the transforms re-run f; nothing stale is reused)."""
    def run(lib):
        F = TF if lib is torch else MF
        x, v = _args(lib, [0.4, -0.8, 1.3], [1.0, 0.5, -2.0])
        _, first = F.hvp(_f1, x, v)
        x.mul_(2)
        _, second = F.hvp(_f1, x, v)
        return first, second, x._version

    same_ok(run, tol=1e-10)


def test_hvp_through_view_writes_is_forward_over_reverse_and_matches_torch():
    """hvp without create_graph runs func inside a dual level (forward-over-reverse), with
    create_graph outside one (the double vjp); both give torch's (output, H v) on a program
    writing in place through views of intermediates, and the create_graph result is
    differentiable again."""
    def f(a, b):
        h = a.tanh() * b
        h[:, 1:3].mul_(a[:, 0:2])
        w = b.exp() * 1.0
        w.t()[0:2].copy_(h.t()[2:4])
        w[[2, 0]] += h[0:2].sin()
        return (w * h).sum() + (h * h).mean()

    levels = []

    def run(lib, create_graph):
        F = TF if lib is torch else MF

        def g(a, b):
            if lib is mg:
                levels.append(mg._C._current_dual_level())
            return f(a, b)

        a, b, va, vb = (lib.tensor([[0.1 * (i + 4 * j) - 0.5 + k for i in range(4)]
                                    for j in range(3)], dtype=lib.float64)
                        for k in (0.0, 0.3, 1.0, -0.7))
        if create_graph:
            a.requires_grad_()
        out, (ha, hb) = F.hvp(g, (a, b), (va, vb), create_graph=create_graph)
        again = lib.autograd.grad(ha.sum(), a)[0] if create_graph else None
        return out, ha, hb, again

    same_ok(lambda lib: run(lib, False), tol=1e-10)
    assert levels and all(level is not None for level in levels)
    levels.clear()
    same_ok(lambda lib: run(lib, True), tol=1e-10)
    assert levels and all(level is None for level in levels)


# ---- gradcheck -------------------------------------------------------------------------------

@LIBS
def test_gradcheck_and_gradgradcheck_pass(lib):
    x = lib.tensor([0.3, 0.7, -1.1], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([[1.0, 2.0, 0.5]], dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(lambda a, b: (a.sigmoid() * b).sum(1), (x, w)) is True
    assert lib.autograd.gradgradcheck(lambda a, b: (a.tanh() * b ** 2).sum(), (x, w)) is True
    assert lib.autograd.gradcheck(lambda a: a.exp(), x, eps=1e-6, atol=1e-5, rtol=1e-3) is True


def _wrong_backward(lib):
    """a * a whose backward is wrong: (a * a.detach()) has half the true gradient."""
    return lambda a: a * a.detach()


@LIBS
def test_gradcheck_failure_raises_gradcheck_error(lib):
    x = lib.tensor([0.3, 0.7], dtype=lib.float64, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        lib.autograd.gradcheck(_wrong_backward(lib), (x,))
    assert type(info.value).__name__ == "GradcheckError"
    assert "output 0 with respect to input 0" in str(info.value)
    assert lib.autograd.gradcheck(_wrong_backward(lib), (x,), raise_exception=False) is False
    y = lib.tensor([0.3, 0.7], dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradgradcheck(lambda a: a * a.detach() ** 2, (y,), raise_exception=False) is False


# ---- grad modes ------------------------------------------------------------------------------

def test_grad_mode_context_managers_and_functions_match_torch():
    def run(lib):
        x = lib.ones(1, requires_grad=True)
        out = []
        with lib.no_grad() as ctx:
            out.append(ctx)
            out.append((x * 2).requires_grad)
            with lib.enable_grad():
                out.append((x * 2).requires_grad)
            out.append(lib.is_grad_enabled())
        out.append((x * 2).requires_grad)
        with lib.set_grad_enabled(False):
            out.append(lib.is_grad_enabled())
        out.append(lib.is_grad_enabled())
        lib.set_grad_enabled(False)
        out.append((x * 2).requires_grad)
        lib.set_grad_enabled(True)
        out.append(lib.no_grad()(lambda: (x * 2).requires_grad)())
        out.append((x * 2).requires_grad)
        return out

    same_ok(run)


def test_no_grad_restores_mode_after_exception():
    with pytest.raises(KeyError):
        with mg.no_grad():
            raise KeyError("boom")
    assert mg.is_grad_enabled()


# ---- call sites of the mutation (stale saved tensor) error -----------------------------------

MUTATIONS = [
    "y.add_(1)", "y.add_(x, alpha=2)", "y.sub_(1)", "y.mul_(2)", "y.div_(2)", "y.zero_()",
    "y.fill_(1)", "y.fill_(mg.tensor(1.))", "y.neg_()", "y.relu_()", "y.sigmoid_()", "y.tanh_()",
    "y.exp_()", "y.clamp_(0, 1)", "y.clamp_(min=0)", "y.masked_fill_(m, 1.)",
    "y.masked_fill_(m, mg.tensor(1.))", "y.copy_(x)", "y[0] = 1", "y[m] = mg.tensor(3.)",
    "y[[0, 1]] = 2.", "y += 1", "y -= 1", "y *= 2", "y /= 2",
    "y.index_put_((mg.tensor([0]),), mg.tensor(1.))",
    "y.index_put_((mg.tensor([0]),), mg.tensor(1.), accumulate=True)", "y[0:1].mul_(2)",
    "y.detach().add_(1)", "y.view(2, 1)[1] = 4.", "y.detach()[0] = 1.", "y.unsqueeze(0).squeeze(0).exp_()",
]


@pytest.mark.parametrize("statement", MUTATIONS)
def test_mutation_error_names_the_python_line(statement, tmp_path):
    """y = x.exp() saves y; the statement mutates y; backward must fail naming the file:line
    of the statement (hand-derived: torch does not report the mutating line). torch raises
    the same exception type for the same program."""
    path = tmp_path / "user_script.py"
    path.write_text(
        "def program(lib, mg, x, m):\n"
        "    y = x.exp()\n"
        "    unrelated = x * 2\n"
        f"    {statement}\n"
        "    return y.sum() + unrelated.sum()\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    program = namespace["program"]

    for lib in (torch, mg):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        m = lib.tensor([True, False])
        with pytest.raises(RuntimeError) as info:
            program(lib, lib, x, m).backward()
        assert "modified by an inplace operation" in str(info.value)
    assert f"{path}:4" in str(info.value), str(info.value)
    assert "user_script.py:2" not in str(info.value)


def test_mutation_error_call_site_in_this_file():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x.sigmoid()  # saves its result
    line = inspect.currentframe().f_lineno + 1
    y[1] = 0.0
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert f"{os.path.basename(__file__)}:{line}" in str(info.value)


def test_view_grad_fn_after_inplace_write_replay_switch():
    """After an in-place write to the base, a view's grad_fn is regenerated: by replaying its
    view op (mutagrad's default, documented) or as AsStridedBackward0 (torch 1.13, and mutagrad
    with the switch off). Gradients agree either way."""
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x * 2
        v = h[1:]
        h.mul_(2)
        name = v.grad_fn.name()
        (v * v).sum().backward()
        return name, x.grad

    (t_name, t_grad), (m_name, m_grad) = run(torch), run(mg)
    assert (t_name, m_name) == ("AsStridedBackward0", "SliceBackward0")
    assert m_grad.tolist() == t_grad.tolist()
    assert mg.autograd._is_view_replay_enabled()
    mg.autograd._set_view_replay_enabled(False)
    try:
        same_ok(run)
    finally:
        mg.autograd._set_view_replay_enabled(True)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_dim_gradient_goes_to_the_returned_index_like_torch(op, keepdim):
    # Ties in every row and column: the gradient goes to the first extremum only.
    data = [[1.0, 3.0, 3.0, 1.0], [2.0, 2.0, 0.0, 0.0], [3.0, 3.0, 3.0, 3.0]]
    grads = {}
    for lib in (torch, mg):
        for dim in (0, 1, -1):
            x = lib.tensor(data, dtype=lib.float64, requires_grad=True)
            values, indices = getattr(x, op)(dim, keepdim=keepdim)
            weights = lib.arange(values.numel(), dtype=lib.float64).reshape(values.shape) + 1
            (values * weights).sum().backward()
            grads[(lib.__name__, dim)] = (values.grad_fn.name(), indices.tolist(), x.grad.tolist())
    for dim in (0, 1, -1):
        assert grads[("mutagrad", dim)] == grads[("torch", dim)]
