"""Custom autograd Functions and saved-tensor hooks against torch 1.13: the same Function
written once per library (torch.autograd.Function / mutagrad.autograd.Function) gives the same
outputs, gradients, node names, needs_input_grad, gradcheck/gradgradcheck verdicts and error
kinds. Deliberate differences (docs/extending.md) are asserted as such: one version bump per
custom in-place op (torch: two), mark_dirty refusing before the write, and the version check of
saved tensors packed as aliases.
"""

import traceback

import pytest
import torch

import mutagrad as mg
from lib_util import assert_same_outcome, run_both


def functions(lib):
    """The test Functions, defined on lib.autograd.Function."""
    F = lib.autograd.Function

    class MulAdd(F):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_backward(x, y)
            ctx.k = k
            return x * y * k + y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y * ctx.k, g * (x * ctx.k + 1), None

    class SinCos(F):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x.sin(), x.cos() * y

        @staticmethod
        def backward(ctx, ga, gb):
            x, y = ctx.saved_tensors
            return ga * x.cos() - gb * x.sin() * y, gb * x.cos()

    class WithMask(F):
        @staticmethod
        def forward(ctx, x, materialize, log):
            ctx.set_materialize_grads(materialize)
            ctx.log = log
            mask = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(mask)
            return x * 2, mask, "label"

        @staticmethod
        def backward(ctx, g, gmask, glabel):
            ctx.log.append(None if gmask is None else float(gmask.abs().sum()))
            return g * 2, None, None

    class Needs(F):
        @staticmethod
        def forward(ctx, a, flag, b):
            ctx.log = [ctx.needs_input_grad]
            return a * b

        @staticmethod
        def backward(ctx, g):
            ctx.log.append(ctx.needs_input_grad)
            return g, None, g

    class ClampMin_(F):
        @staticmethod
        def forward(ctx, x, lo):
            ctx.mark_dirty(x)
            x.clamp_(min=lo)
            ctx.save_for_backward(x)
            ctx.lo = lo
            return x

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g.masked_fill(out <= ctx.lo, 0), None

    class Square(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    class ForgetsMarkDirty(F):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class OnceSquare(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    class WrongCount(F):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g

    class Raises(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise KeyError("raised in backward")

    return {c.__name__: c for c in (MulAdd, SinCos, WithMask, Needs, ClampMin_, Square,
                                    ForgetsMarkDirty, OnceSquare, WrongCount, Raises)}


def leaf(lib, values):
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


X = [0.5, -1.25, 2.0]
Y = [1.5, 0.75, -0.5]


def test_gradients_names_and_non_tensor_arguments():
    def scenario(lib):
        f = functions(lib)
        x, y = leaf(lib, X), leaf(lib, Y)
        out = f["MulAdd"].apply(x, y, 2.5)
        out.sum().backward()
        a, b = f["SinCos"].apply(x, y)
        gx, gy = lib.autograd.grad((a * 3 + b).sum(), (x, y))
        return out, x.grad, y.grad, out.grad_fn.name(), a.grad_fn.name(), gx, gy
    assert_same_outcome(*run_both(scenario), exact=False)


def test_gradcheck_and_gradgradcheck():
    def scenario(lib):
        f = functions(lib)
        x, y = leaf(lib, X), leaf(lib, Y)
        checks = []
        for fn in (lambda a, b: f["MulAdd"].apply(a, b, 1.5),
                   lambda a, b: f["SinCos"].apply(a, b)):
            checks.append(lib.autograd.gradcheck(fn, (x, y)))
            checks.append(lib.autograd.gradgradcheck(fn, (x, y)))
        clamp = lambda a: f["ClampMin_"].apply(a * 1, 0.1)  # noqa: E731
        checks.append(lib.autograd.gradcheck(clamp, (x,)))
        checks.append(lib.autograd.gradgradcheck(clamp, (x,)))
        return checks
    assert_same_outcome(*run_both(scenario))


def test_non_differentiable_outputs_materialize_grads_and_non_tensor_outputs():
    def scenario(lib):
        f = functions(lib)
        x = leaf(lib, X)
        log = []
        out, mask, label = f["WithMask"].apply(x, True, log)
        out.sum().backward()
        out2, _, _ = f["WithMask"].apply(x, False, log)
        out2.sum().backward()
        return (mask, mask.requires_grad, out.requires_grad, label, log, x.grad)
    assert_same_outcome(*run_both(scenario))


def test_needs_input_grad():
    def scenario(lib):
        f = functions(lib)
        a, b = leaf(lib, X), leaf(lib, Y)
        out = f["Needs"].apply(a, 3, lib.tensor(Y, dtype=lib.float64))
        out_ab = f["Needs"].apply(a, 3, b)
        for o in (out, out_ab):
            o.sum().backward()
        return a.grad, b.grad
    assert_same_outcome(*run_both(scenario))

    # The tuples themselves (ctx is not reachable from the node in either library's API).
    for lib in (torch, mg):
        seen = []

        class Probe(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, flag, b):
                seen.append(ctx.needs_input_grad)
                return a * b

            @staticmethod
            def backward(ctx, g):
                seen.append(ctx.needs_input_grad)
                return g, None, g

        Probe.apply(leaf(lib, X), "flag", lib.tensor(Y, dtype=lib.float64)).sum().backward()
        assert seen == [(True, False, False), (True, False, False)], (lib.__name__, seen)


def test_mark_dirty_gradients_identity_and_history():
    def scenario(lib):
        f = functions(lib)
        x = leaf(lib, X)
        a = x * 1
        out = f["ClampMin_"].apply(a, 0.0)
        (out * out).sum().backward()
        return out is a, a.grad_fn.name(), out, x.grad
    assert_same_outcome(*run_both(scenario))


def test_mark_dirty_bumps_once():
    # torch 1.13 bumps a second time in mark_dirty (2); mutagrad counts the op's write once.
    for lib, expected in ((torch, 2), (mg, 1)):
        a = leaf(lib, X) * 1
        functions(lib)["ClampMin_"].apply(a, 0.0)
        assert a._version == expected, lib.__name__


def test_mark_dirty_on_leaf_requiring_grad_is_refused():
    def scenario(lib):
        functions(lib)["ClampMin_"].apply(leaf(lib, [-1.0, 2.0]), 0.0)
    ot, om = run_both(scenario)
    assert_same_outcome(ot, om)
    assert "leaf Variable that requires grad" in om.message
    # mutagrad refuses in mark_dirty, before the forward writes (torch after the write).
    x = leaf(mg, [-1.0, 2.0])
    with pytest.raises(RuntimeError):
        functions(mg)["ClampMin_"].apply(x, 0.0)
    assert x.tolist() == [-1.0, 2.0] and x._version == 0


def test_mark_dirty_on_view_of_non_leaf():
    def scenario(lib):
        f = functions(lib)
        x, w = leaf(lib, X + [1.0, -3.0]), leaf(lib, Y + [2.0, 0.25])
        base = x * 2
        f["ClampMin_"].apply(base[1:4], 0.0)
        (base * w).sum().backward()
        return base, base.grad_fn.name().split("::")[-1], x.grad, w.grad
    assert_same_outcome(*run_both(scenario))  # torch's name is "torch::autograd::CopySlices"


def test_view_made_in_no_grad_is_refused():
    def scenario(lib):
        base = leaf(lib, X) * 1
        with lib.no_grad():
            v = base[:2]
        functions(lib)["ClampMin_"].apply(v, 0.0)
    ot, om = run_both(scenario)
    assert not om.ok and ot.kind == om.kind


def test_stale_saved_tensors_name_the_write():
    def stale_output(lib):
        a = leaf(lib, X) * 1
        out = functions(lib)["ClampMin_"].apply(a, 0.0)
        loss = (out * 2).sum()
        a.add_(1)
        loss.backward()

    def stale_input(lib):
        h = leaf(lib, X) * 1
        y = functions(lib)["Square"].apply(h)
        h.mul_(2)
        y.sum().backward()

    for scenario, write, node in ((stale_output, "add_", "ClampMin_Backward"),
                                  (stale_input, "mul_", "SquareBackward")):
        ot, om = run_both(scenario)
        assert_same_outcome(ot, om)
        assert "modified by an inplace operation" in om.message
        assert write in om.message and f"{node} saved it" in om.message, om.message


def test_forgotten_mark_dirty_is_detected_by_earlier_savers():
    def scenario(lib):
        h = leaf(lib, X) * 1
        p = h * h
        out = functions(lib)["ForgetsMarkDirty"].apply(h)
        same = out is h
        try:
            p.sum().backward()
        except RuntimeError as e:
            return same, "modified by an inplace operation" in str(e)
        return same, False
    assert_same_outcome(*run_both(scenario))


def test_once_differentiable():
    def scenario(lib):
        f = functions(lib)
        x = leaf(lib, X)
        v = lib.ones(3, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(f["OnceSquare"].apply(x).sum(), x, v, create_graph=True)
        first = g.detach().clone()
        try:
            g.sum().backward()
        except RuntimeError as e:
            return first, "differentiate twice" in str(e)
        return first, False
    assert_same_outcome(*run_both(scenario))


def test_backward_errors():
    def wrong_count(lib):
        functions(lib)["WrongCount"].apply(leaf(lib, X), 2.0).sum().backward()
    ot, om = run_both(wrong_count)
    assert_same_outcome(ot, om)
    assert "incorrect number of gradients (expected 2, got 1)" in om.message

    def raises(lib):
        functions(lib)["Raises"].apply(leaf(lib, X)).sum().backward()
    ot, om = run_both(raises)
    assert_same_outcome(ot, om)
    assert om.kind == "KeyError"
    frames = [fr.name for fr in traceback.extract_tb(om.error.__traceback__)]
    assert frames[-1] == "backward", frames


def test_backward_twice_and_no_grad():
    def scenario(lib):
        f = functions(lib)
        x = leaf(lib, X)
        with lib.no_grad():
            y0 = f["Square"].apply(x)
        y = f["Square"].apply(x).sum()
        y.backward()
        try:
            y.backward()
        except RuntimeError as e:
            return y0.requires_grad, y0.grad_fn, "second time" in str(e)
        return y0.requires_grad, y0.grad_fn, False
    assert_same_outcome(*run_both(scenario))


# ---- saved-tensor hooks --------------------------------------------------------------------


def test_saved_tensors_hooks_pack_and_unpack():
    def scenario(lib):
        log = []
        a = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(
                lambda t: log.append(("pack", tuple(t.shape))) or t,
                lambda t: log.append("unpack") or t):
            y = a.exp()
            z = (y * a).sum()
            s = functions(lib)["Square"].apply(a)
        packed = list(log)
        (z + s.sum()).backward()
        return packed, log[len(packed):], a.grad
    assert_same_outcome(*run_both(scenario))


@pytest.mark.parametrize("compact", ["float16", "bfloat16", "float32"])
def test_saved_tensors_hooks_compressed(compact):
    def scenario(lib):
        a, b = leaf(lib, X), leaf(lib, Y)
        dtype = getattr(lib, compact)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.to(dtype),
                                                   lambda t: t.to(lib.float64)):
            loss = (a * b).sin().sum()
            (g,) = lib.autograd.grad(loss, a, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), b)
        return g, gg
    assert_same_outcome(*run_both(scenario), exact=False)


def test_saved_tensors_hooks_version_check():
    def copy(lib):
        a = leaf(lib, X)
        b = a * 1
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = (b * b).sum()
        b.add_(1)
        y.backward()
        return a.grad
    assert_same_outcome(*run_both(copy))

    def alias(lib):
        a = leaf(lib, X)
        b = a * 1
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = (b * b).sum()
        b.add_(1)
        y.backward()
        return a.grad
    ot, om = run_both(alias)
    # torch 1.13 silently uses the written values; mutagrad raises, naming the write.
    assert ot.ok and om.kind == "RuntimeError" and "add_" in om.message


def test_save_on_cpu():
    def scenario(lib):
        a = leaf(lib, X)
        with lib.autograd.graph.save_on_cpu():
            y = (a * a.exp()).sum()
        y.backward()
        return a.grad
    assert_same_outcome(*run_both(scenario), exact=False)


def test_view_outputs_cannot_be_written_in_place():
    def scenario(lib):
        class IdAndView(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x, x[:2]

            @staticmethod
            def backward(ctx, ga, gb):
                g = ga.clone()
                g[:2] += gb
                return g

        class Single(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        x = leaf(lib, X)
        h = x * 1
        a, b = IdAndView.apply(h)
        errors = []
        for out in (a, b):
            try:
                out.mul_(2)
            except RuntimeError as e:
                errors.append(["created inside a custom Function" in str(e),
                               "returns multiple views" in str(e)])
        c = b.clone()
        c.mul_(2)
        (c.sum() + a.sum()).backward()
        try:
            single = Single.apply(h * 1)
            single.mul_(2)
        except RuntimeError as e:
            errors.append(["created inside a custom Function" in str(e),
                           "returns multiple views" in str(e)])
        return a is h, a.grad_fn.name(), h.grad_fn.name(), errors, x.grad
    assert_same_outcome(*run_both(scenario))


def test_save_on_cpu_with_a_cuda_tensor():
    # mutagrad's host-run CUDA device: saved tensors go to the CPU and come back to cuda:0.
    a = mg.tensor(X, dtype=mg.float64, device="cuda", requires_grad=True)
    packed = []
    on_cpu = mg.autograd.graph.save_on_cpu()
    pack = on_cpu.pack_hook
    on_cpu.pack_hook = lambda t: packed.append(pack(t)) or packed[-1]
    with on_cpu:
        y = (a * a.exp()).sum()
    assert packed and all(str(t.device) == "cpu" and str(d) == "cuda:0" for d, t in packed)
    y.backward()
    t = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    (t * t.exp()).sum().backward()
    assert str(a.grad.device) == "cuda:0"
    assert a.grad.cpu().tolist() == pytest.approx(t.grad.tolist())
