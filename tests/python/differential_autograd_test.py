"""Seeded randomized differential tests of autograd with in-place ops: the same programs run
on torch 1.13 and on mutagrad, comparing values, _version, gradients and exception kinds.

- random programs: in-place ops (add_, sub_, mul_, div_, clamp_, relu_, tanh_, sigmoid_, neg_,
  x[idx] = v, masked_fill_, index_put_, copy_, fill_, zero_) on views of a non-leaf tensor
  (chains of slices, select, narrow, t, unsqueeze, diagonal, reshape, and views kept from
  earlier steps), mixed with ops that save tensors; then backward. Where torch raises (stale
  saved tensor, leaf or view of a leaf written, output of unbind/split/chunk written, view
  made under no_grad written with grad on), mutagrad must raise the same kind, at the same
  step, for the same reason (key phrase of torch's message);
- HVPs (autograd.grad with create_graph then grad again; autograd.functional.hvp/vhp/hessian)
  with and without a write to a saved tensor between the passes;
- the check_inplace cases, with torch's key phrases;
- gradients of duplicate writes, asserted by hand: with accumulate=False only the winning (last)
  occurrence gets gradient (docs/mutation-semantics.md, section 4); torch gives every
  duplicate the gradient, so the random programs use duplicate-free indices there.
"""

import os
import random

import numpy as np
import pytest
import torch
import torch.autograd.functional as TF

import mutagrad as mg
import mutagrad.autograd.functional as MF
from lib_util import assert_phrases, assert_same_outcome, assert_same_value, capture, run_both

SEEDS = (1, 2, 3)
PROGRAMS_PER_SEED = 150
MAX_REPORTED = 6
RTOL, ATOL = 1e-9, 1e-11
THIS_FILE = os.path.basename(__file__)

STALE = "modified by an inplace operation"
PHRASES = {  # the key phrases of torch's check_inplace and saved-variable messages
    "leaf": "a leaf Variable that requires grad is being used in an in-place operation",
    "leaf_view": "a view of a leaf Variable that requires grad is being used in an in-place",
    "no_grad_view": "A view was created in no_grad mode and is being modified inplace with grad "
                    "mode enabled",
    "multi_output": "This view is the output of a function that returns multiple views",
    "stale": "one of the variables needed for gradient computation has been " + STALE,
}


def reason(message):
    """Which of torch's autograd errors a message is, by its key phrase ('other' if none)."""
    for name in ("leaf_view", "leaf", "no_grad_view", "multi_output", "stale"):
        if PHRASES[name] in message:
            return name
    return "other"


def f64(lib, values, requires_grad=False):
    values = np.asarray(values, dtype=np.float64)
    # From a flat list (keeps empty shapes), then cloned: a fresh leaf, not a view.
    t = lib.tensor(values.reshape(-1).tolist(), dtype=lib.float64).reshape(values.shape).clone()
    return t.requires_grad_() if requires_grad else t


# ---------------------------------------------------------------------------------------------
# Random programs. A program is plain data; `run_program(lib, spec)` executes it. Parameters
# that depend on a view's shape are drawn at run time from a per-step Random(seed), so both
# libraries draw the same ones as long as the shapes agree (which is compared).

SHAPE = (3, 4)
INITS = ("a * b + 1", "a.exp() * 1.5", "a.tanh() + b", "(a - b) * 2")
VIEW_KINDS = ("slice", "slice", "select", "narrow", "t", "unsqueeze", "diagonal", "reshape",
              "permute")
OPS = ("add_s", "add_v", "sub_v", "mul_s", "mul_v", "div_v", "clamp", "clamp", "relu_",
       "tanh_", "sigmoid_", "neg_", "setitem", "setitem", "setitem", "masked_fill",
       "index_put", "index_put", "copy", "fill", "zero_")
TARGETS = ["h"] * 4 + ["view"] * 10 + ["old"] * 4 + ["detach", "nograd_write", "leaf",
                                                     "leaf_view", "multi", "nograd_view"]


def random_program(rng):
    steps = []
    for _ in range(rng.randint(1, 5)):
        r = rng.random()
        seed = rng.randrange(1 << 30)
        if r < 0.15:
            steps.append({"kind": "save", "fn": rng.choice(["square", "exp", "sigmoid", "mul_h"]),
                          "chain": random_chain(rng), "seed": seed})
        elif r < 0.25:
            steps.append({"kind": "extra", "chain": random_chain(rng), "seed": seed})
        else:
            target = rng.choice(TARGETS)
            if rng.random() < 0.3:
                target = "view"
            steps.append({"kind": "inplace", "target": target, "chain": random_chain(rng),
                          "op": rng.choice(OPS), "seed": seed,
                          "old": rng.randrange(8)})
    rs = np.random.RandomState(rng.randrange(1 << 30))
    return {"init": rng.choice(INITS), "a": rs.normal(size=SHAPE) * 0.8,
            "b": rs.normal(size=SHAPE) * 0.8, "w": rs.normal(size=SHAPE), "steps": steps}


def random_chain(rng):
    return [rng.choice(VIEW_KINDS) for _ in range(rng.choice([1, 1, 1, 2, 2, 3]))]


def apply_view(t, kind, r):
    """One view op on t with parameters drawn from r for t's shape (t itself if none fits)."""
    shape = tuple(t.shape)
    nd = len(shape)
    if nd == 0:
        return t.unsqueeze(0) if kind == "unsqueeze" else t
    d = r.randrange(nd)
    size = shape[d]
    if kind == "slice" and size > 0:
        start = r.randrange(size)
        step = r.choice([1, 1, 2])
        index = [slice(None)] * d + [slice(start, r.randint(start + 1, size), step)]
        return t[tuple(index)]
    if kind == "select" and size > 0:
        return t.select(d, r.randrange(-size, size))
    if kind == "narrow" and size > 0:
        start = r.randrange(size)
        return t.narrow(d, start, r.randint(1, size - start))
    if kind == "t" and nd == 2:
        return t.t()
    if kind == "unsqueeze":
        return t.unsqueeze(r.randint(0, nd))
    if kind == "diagonal" and nd == 2:
        return t.diagonal()
    if kind == "reshape" and t.is_contiguous():
        return t.reshape(-1)
    if kind == "permute" and nd >= 2:
        dims = list(range(nd))
        r.shuffle(dims)
        return t.permute(*dims)
    return t


def view_of(t, chain, r):
    for kind in chain:
        t = apply_view(t, kind, r)
    return t


def random_index(r, shape):
    """A duplicate-free index for a tensor of `shape`: an int, a slice, a unique index tensor
    or a mask on the first dim (Ellipsis for a 0-dim tensor)."""
    if not shape:
        return "ellipsis", None
    size = shape[0]
    kind = r.choice(["int", "slice", "tensor", "mask", "tensor2"])
    if kind == "int":
        return kind, r.randrange(-size, size)
    if kind == "slice":
        return kind, (r.randrange(size), None, r.choice([1, 2]))
    if kind == "mask":
        return kind, [r.random() < 0.6 for _ in range(size)]
    if kind == "tensor2" and len(shape) >= 2:
        n = min(size, shape[1], r.randint(1, 3))
        return kind, (r.sample(range(size), n), r.sample(range(shape[1]), n))
    return "tensor", r.sample(range(-size, 0), r.randint(1, size)) if r.random() < 0.3 else \
        r.sample(range(size), r.randint(1, size))


def build_index(lib, kind, data):
    if kind == "ellipsis":
        return Ellipsis
    if kind == "int":
        return data
    if kind == "slice":
        return slice(*data)
    if kind == "mask":
        return lib.tensor(data, dtype=lib.bool)
    if kind == "tensor2":
        return (lib.tensor(data[0]), lib.tensor(data[1]))
    return lib.tensor(data)


def values_for(lib, r, shape, leaves, lo=-1.0, hi=1.0):
    """A new leaf requiring grad with random values in [lo, hi) of `shape`."""
    n = int(np.prod(shape, dtype=np.int64))
    v = f64(lib, np.array([r.uniform(lo, hi) for _ in range(n)]).reshape(shape), True)
    leaves.append(v)
    return v


def apply_op(lib, t, op, r, leaves):
    shape = tuple(t.shape)
    if op == "add_s":
        t.add_(r.uniform(-1, 1))
    elif op == "add_v":
        t.add_(values_for(lib, r, shape, leaves))
    elif op == "sub_v":
        t.sub_(values_for(lib, r, shape, leaves), alpha=r.choice([1, 2, -0.5]))
    elif op == "mul_s":
        t.mul_(r.uniform(-2, 2))
    elif op == "mul_v":
        t.mul_(values_for(lib, r, shape, leaves))
    elif op == "div_v":
        t.div_(values_for(lib, r, shape, leaves, 1.0, 2.0))
    elif op == "clamp":
        lo, hi = r.choice([(-0.3, 0.6), (None, 0.2), (-0.1, None), (0.05, 1.3)])
        t.clamp_(min=lo, max=hi)
    elif op in ("relu_", "tanh_", "sigmoid_", "neg_", "zero_"):
        getattr(t, op)()
    elif op == "fill":
        t.fill_(r.uniform(-1, 1))
    elif op == "copy":
        t.copy_(values_for(lib, r, shape, leaves))
    elif op == "masked_fill":
        t.masked_fill_(lib.tensor(np.array([r.random() < 0.5 for _ in range(int(np.prod(
            shape, dtype=np.int64)))]).reshape(shape).tolist(), dtype=lib.bool), r.uniform(-1, 1))
    elif op == "setitem":
        kind, data = random_index(r, shape)
        index = build_index(lib, kind, data)
        if r.random() < 0.3:
            t[index] = r.uniform(-1, 1)
        else:
            t[index] = values_for(lib, r, tuple(t[index].shape), leaves)
    elif op == "index_put":
        if not shape:
            t.add_(1.0)
            return
        accumulate = r.random() < 0.5
        kind, data = random_index(r, shape)
        if kind not in ("tensor", "tensor2"):
            kind, data = "tensor", r.sample(range(shape[0]), min(shape[0], 2))
        if accumulate and kind == "tensor":
            data = data + data[:1]  # a duplicate: each occurrence adds, and gets gradient
        index = build_index(lib, kind, data)
        index = index if isinstance(index, tuple) else (index,)
        result_shape = tuple(t[index].shape)
        t.index_put_(index, values_for(lib, r, result_shape, leaves), accumulate=accumulate)
    else:
        raise AssertionError(op)


def node_kind(fn):
    """A grad_fn's name without the namespace torch gives CopySlices
    ("torch::autograd::CopySlices")."""
    if fn is None:
        return None
    return fn.name().rsplit("::", 1)[-1]


def run_program(lib, spec, before_backward=None):
    """Runs a program; returns what it computed, or where and how it failed. before_backward
    (check_backward_test.py) is called with the loss just before backward."""
    a, b = f64(lib, spec["a"], True), f64(lib, spec["b"], True)
    leaves = [a, b]
    h = eval(spec["init"], {}, {"a": a, "b": b})  # noqa: S307 (fixed expressions above)
    views, extras = [], []
    for i, step in enumerate(spec["steps"]):
        r = random.Random(step["seed"])
        try:
            if step["kind"] == "save":
                t = view_of(h, step["chain"], r)
                fn = step["fn"]
                out = {"square": lambda: t * t, "exp": lambda: t.exp(),
                       "sigmoid": lambda: t.sigmoid(), "mul_h": lambda: t * 2.0 + t.tanh()}[fn]()
                extras.append(out.sum())
                views.append(t)
                continue
            if step["kind"] == "extra":
                t = view_of(h, step["chain"], r)
                extras.append(t.sum() * 0.5)
                views.append(t)
                continue
            target = step["target"]
            if target == "h":
                t = h
            elif target == "view":
                t = view_of(h, step["chain"], r)
            elif target == "old":
                t = views[step["old"] % len(views)] if views else h
            elif target == "detach":
                t = view_of(h.detach(), step["chain"], r)
            elif target == "leaf":
                t = a
            elif target == "leaf_view":
                t = view_of(a, step["chain"][:1] + ["slice"], r)
            elif target == "multi":
                parts = r.choice([lambda: h.unbind(0), lambda: h.split(2, 1),
                                  lambda: h.chunk(2, 0), lambda: h.split([1, 3], 1)])()
                t = parts[r.randrange(len(parts))]
            elif target == "nograd_view":
                with lib.no_grad():
                    t = view_of(h, step["chain"], r)
            elif target == "nograd_write":
                t = view_of(h, step["chain"], r)
            else:
                raise AssertionError(target)
            views.append(t)
            if lib is torch:
                # torch 1.13 regenerates a view's grad_fn lazily, and its leaf check can run
                # before that: after `t = h.detach().diagonal(); t[2:] = v` (v requiring grad),
                # `t.fill_(0.5)` raises "a leaf Variable that requires grad ..." unless t.grad_fn
                # was read first. Reading it gives torch's intended answer (mutagrad's).
                t.grad_fn  # noqa: B018
            if target == "nograd_write":
                with lib.no_grad():
                    apply_op(lib, t, step["op"], r, leaves)
            else:
                apply_op(lib, t, step["op"], r, leaves)
        except RuntimeError as e:
            return {"error": type(e).__name__, "reason": reason(str(e)), "at": f"step {i}",
                    "h": h.detach().clone(), "version": h._version}
    loss = (h * f64(lib, spec["w"])).sum()
    for e in extras:
        loss = loss + e
    result = {"h": h.detach().clone(), "version": h._version, "loss": loss.item(),
              "grad_fn": node_kind(h.grad_fn)}
    if before_backward is not None:
        before_backward(loss)
    try:
        loss.backward()
    except RuntimeError as e:
        result.update(error=type(e).__name__, reason=reason(str(e)), at="backward")
        return result
    result["grads"] = [leaf.grad for leaf in leaves]
    return result


@pytest.mark.parametrize("seed", SEEDS)
def test_random_inplace_programs_match_torch(seed):
    rng = random.Random(seed)
    failures = []
    for n in range(PROGRAMS_PER_SEED):
        spec = random_program(rng)
        ot, om = run_both(run_program, spec)
        try:
            assert_same_outcome(ot, om, exact=False, rtol=RTOL, atol=ATOL,
                                what=f"program {n}")
        except AssertionError as e:
            failures.append(f"{e}\nprogram: init {spec['init']!r}, steps {spec['steps']}")
    assert not failures, f"{len(failures)} of {PROGRAMS_PER_SEED} programs differ:\n" + \
        "\n\n".join(failures[:MAX_REPORTED])


# ---------------------------------------------------------------------------------------------
# HVPs: grad(create_graph=True) then grad again, and autograd.functional, with and without a
# write to a saved tensor between the passes.

UNARY = ("sin", "cos", "tanh", "sigmoid", "exp", "square", "cube", "times_x")


def random_function(rng):
    """A smooth scalar function of a float64 vector, as data: unary ops and a weight vector."""
    return {"ops": [rng.choice(UNARY) for _ in range(rng.randint(1, 4))],
            "w": [rng.uniform(-1, 1) for _ in range(4)]}


def evaluate(lib, fspec, x):
    h = x
    for op in fspec["ops"]:
        if op == "square":
            h = h * h
        elif op == "cube":
            h = h ** 3
        elif op == "times_x":
            h = h * x
        elif op == "exp":
            h = (h * 0.5).exp()
        else:
            h = getattr(h, op)()
    return (h * f64(lib, fspec["w"])).sum()


def hvp_passes(lib, fspec, x0, v0):
    x = f64(lib, x0, True)
    v = f64(lib, v0)
    y = evaluate(lib, fspec, x)
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    (hv,) = lib.autograd.grad(g, x, grad_outputs=v, retain_graph=True)
    (g * v).sum().backward()
    return y, g, hv, x.grad


def functional_products(lib, fspec, x0, v0):
    functional = TF if lib is torch else MF
    x, v = f64(lib, x0), f64(lib, v0)
    f = lambda t: evaluate(lib, fspec, t)  # noqa: E731
    return (functional.hvp(f, x, v), functional.vhp(f, x, v), functional.hessian(f, x),
            functional.vjp(f, x))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_hvps_match_torch(seed):
    rng = random.Random(1000 + seed)
    for n in range(25):
        fspec = random_function(rng)
        x0 = [rng.uniform(-1.2, 1.2) for _ in range(4)]
        v0 = [rng.uniform(-1, 1) for _ in range(4)]
        what = f"function {fspec}, x {x0}, v {v0}"
        assert_same_outcome(*run_both(hvp_passes, fspec, x0, v0), exact=False, rtol=1e-9,
                            atol=1e-11, what=what)
        assert_same_outcome(*run_both(functional_products, fspec, x0, v0), exact=False,
                            rtol=1e-9, atol=1e-11, what=what)


def marked_line(marker):
    """The line of this file that carries `# <marker>` (a mutating statement)."""
    with open(__file__.replace(".pyc", ".py")) as f:
        lines = [i for i, text in enumerate(f, 1) if text.rstrip().endswith("# " + marker)]
    assert len(lines) == 1, marker
    return lines[0]


def mutate(lib, kind, x, h):
    """Writes to a tensor the first pass saved; each statement carries its marker."""
    if kind == "add_":
        h.add_(1.0)  # MUTATE add_
    elif kind == "setitem":
        h[0] = 2.0  # MUTATE setitem
    elif kind == "view_mul_":
        h[1:].mul_(2.0)  # MUTATE view_mul_
    elif kind == "disjoint":
        h[3] = 0.5  # MUTATE disjoint
    elif kind == "index_put_":
        h.index_put_((lib.tensor([1, 2]),), f64(lib, [0.0, 1.0]))  # MUTATE index_put_
    elif kind == "detach_zero_":
        h.detach().zero_()  # MUTATE detach_zero_
    elif kind == "no_grad_leaf":
        with lib.no_grad():
            x.mul_(1.5)  # MUTATE no_grad_leaf
    elif kind is not None:
        raise AssertionError(kind)


MUTATIONS = (None, "add_", "setitem", "view_mul_", "disjoint", "index_put_", "detach_zero_",
             "no_grad_leaf")


def hvp_with_mutation(lib, kind):
    """The graph of the first pass (built with create_graph) saves h[:3] (from h[:3] ** 3) and x
    (3 * x ** 2 of x ** 3); `kind` writes to one of them between the passes."""
    x = f64(lib, [0.3, -0.4, 0.8, 0.1], True)
    h = x.exp() * 1.0
    y = (h[:3] ** 3).sum() + (x ** 3).sum()
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    mutate(lib, kind, x, h)
    (hv,) = lib.autograd.grad(g, x, grad_outputs=f64(lib, [1.0, -1.0, 0.5, 2.0]))
    return g, hv


@pytest.mark.parametrize("kind", MUTATIONS)
def test_hvp_with_a_write_between_the_passes(kind):
    ot, om = run_both(hvp_with_mutation, kind)
    if kind is None:
        assert ot.ok
        assert_same_outcome(ot, om, exact=False, rtol=1e-12, atol=1e-12)
        return
    assert ot.kind == om.kind == "RuntimeError", f"torch {ot!r}\nmutagrad {om!r}"
    assert_phrases(ot.message, [PHRASES["stale"]], "torch")
    assert_phrases(om.message, [PHRASES["stale"], f"{THIS_FILE}:{marked_line('MUTATE ' + kind)}"],
                   "mutagrad")


def functional_hvp_with_mutation(lib):
    functional = TF if lib is torch else MF

    def f(x):
        h = x.exp()
        out = (h ** 3).sum()
        h.mul_(0.5)  # MUTATE functional
        return out

    return functional.hvp(f, f64(lib, [0.2, 0.4]), f64(lib, [1.0, 1.0]))


def test_functional_hvp_with_a_write_to_a_saved_tensor():
    ot, om = run_both(functional_hvp_with_mutation)
    assert ot.kind == om.kind == "RuntimeError", f"torch {ot!r}\nmutagrad {om!r}"
    site = f"{THIS_FILE}:{marked_line('MUTATE functional')}"
    assert_phrases(om.message, [PHRASES["stale"], site])


# ---------------------------------------------------------------------------------------------
# check_inplace cases: both raise RuntimeError with torch's key phrase; nothing is written and
# no version moves (compared between the libraries).


def leaf_and_intermediate(lib):
    a = f64(lib, [[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]], True)
    return a, a * 2.0


CHECK_INPLACE_CASES = {
    "leaf add_": ("leaf", lambda lib, a, h: a.add_(1.0)),
    "leaf setitem advanced": ("leaf", lambda lib, a, h: a.__setitem__([0], 1.0)),
    "leaf index_put_": ("leaf", lambda lib, a, h: a.index_put_((lib.tensor([1]),),
                                                                f64(lib, [1.0, 2.0, 3.0]))),
    "view of leaf mul_": ("leaf_view", lambda lib, a, h: a[0].mul_(2.0)),
    "view of leaf setitem": ("leaf_view", lambda lib, a, h: a.__setitem__((0, 1), 5.0)),
    "view of leaf clamp_": ("leaf_view", lambda lib, a, h: a.t().narrow(0, 1, 2).clamp_(0, 1)),
    "no_grad view mul_": ("no_grad_view", lambda lib, a, h: no_grad_view(lib, h).mul_(2.0)),
    "no_grad view relu_": ("no_grad_view", lambda lib, a, h: no_grad_view(lib, h).relu_()),
    "no_grad view add_ of grad value": (
        "no_grad_view", lambda lib, a, h: no_grad_view(lib, h).add_(a[1])),
    "unbind output mul_": ("multi_output", lambda lib, a, h: h.unbind(0)[1].mul_(2.0)),
    "split output setitem": ("multi_output",
                             lambda lib, a, h: h.split(1, 1)[2].__setitem__(0, 5.0)),
    "split_with_sizes output zero_": ("multi_output", lambda lib, a, h: h.split([1, 2], 1)[1]
                                      .zero_()),
    "chunk output add_": ("multi_output", lambda lib, a, h: h.chunk(2, 0)[0].add_(1.0)),
}


def no_grad_view(lib, h):
    with lib.no_grad():
        return h[0]


def check_inplace_case(lib, name):
    a, h = leaf_and_intermediate(lib)
    outcome = capture(CHECK_INPLACE_CASES[name][1], lib, a, h)
    return outcome.kind, outcome.message, a.detach(), h.detach(), a._version, h._version


@pytest.mark.parametrize("name", sorted(CHECK_INPLACE_CASES))
def test_check_inplace_cases_match_torch(name):
    expected = CHECK_INPLACE_CASES[name][0]
    ot, om = run_both(check_inplace_case, name)
    (kt, mt, *state_t), (km, mm, *state_m) = ot.value, om.value
    assert kt == km == "RuntimeError", f"torch {kt}: {mt}\nmutagrad {km}: {mm}"
    assert reason(mt) == reason(mm) == expected, f"torch: {mt}\nmutagrad: {mm}"
    assert_phrases(mm, [PHRASES[expected]])
    if expected == "multi_output":
        # "Output 1 of UnbindBackward0 is a view and is being modified inplace." as torch.
        assert mm.split(".")[0] == mt.split(".")[0]
    assert_same_value(state_m, state_t, what=f"{name}: values and versions after the error")


def saved_then_written(lib, how):
    a = f64(lib, [0.5, -1.0, 2.0], True)
    h = a.exp()  # ExpBackward0 saves its output h
    y = (h * 3.0).sum()
    if how == "detach":
        h.detach().zero_()  # MUTATE saved detach
    elif how == "no_grad":
        with lib.no_grad():
            h.mul_(2.0)  # MUTATE saved no_grad
    elif how == "no_grad view":
        with lib.no_grad():
            h[1:].add_(1.0)  # MUTATE saved no_grad view
    y.backward()


@pytest.mark.parametrize("how", ["detach", "no_grad", "no_grad view"])
def test_writes_outside_autograd_are_caught_at_backward(how):
    ot, om = run_both(saved_then_written, how)
    assert ot.kind == om.kind == "RuntimeError", f"torch {ot!r}\nmutagrad {om!r}"
    for message in (ot.message, om.message):
        assert_phrases(message, [PHRASES["stale"], "output 0 of ExpBackward0",
                                 "is at version 1; expected version 0 instead"])
    assert_phrases(om.message, [f"{THIS_FILE}:{marked_line('MUTATE saved ' + how)}"])


# ---------------------------------------------------------------------------------------------
# Gradients of duplicate writes (docs/mutation-semantics.md, section 4): with accumulate=False
# only the winning, last occurrence of each destination gets gradient. Hand-computed.

W = [0.5, -1.0, 2.0, 3.0, -0.25]


def test_duplicate_setitem_gradient_goes_to_the_last_occurrence():
    a = mg.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=mg.float64, requires_grad=True)
    v = mg.tensor([10.0, 20.0, 30.0, 40.0], dtype=mg.float64, requires_grad=True)
    h = a * 1.0
    h[mg.tensor([0, 2, 0, 2])] = v  # destination 0 gets v[2], destination 2 gets v[3]
    assert h.tolist() == [30.0, 2.0, 40.0, 4.0, 5.0]
    (h * mg.tensor(W, dtype=mg.float64)).sum().backward()
    assert v.grad.tolist() == [0.0, 0.0, W[0], W[2]]
    assert a.grad.tolist() == [0.0, W[1], 0.0, W[3], W[4]]

    # torch gives every duplicate the gradient (pytorch/pytorch#146299), hence the hand oracle.
    at = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64, requires_grad=True)
    vt = torch.tensor([10.0, 20.0, 30.0, 40.0], dtype=torch.float64, requires_grad=True)
    ht = at * 1.0
    ht[torch.tensor([0, 2, 0, 2])] = vt
    (ht * torch.tensor(W, dtype=torch.float64)).sum().backward()
    assert vt.grad.tolist() == [W[0], W[2], W[0], W[2]]
    assert at.grad.tolist() == a.grad.tolist()


def test_duplicate_columns_and_broadcast_scalar_gradients():
    a = mg.ones(3, 4, dtype=mg.float64, requires_grad=True)
    vals = mg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=mg.float64, requires_grad=True)
    h = a * 2.0
    h[:, [1, 1]] = vals  # column 1 gets vals[:, 1]
    weights = mg.arange(12, dtype=mg.float64).reshape(3, 4)
    (h * weights).sum().backward()
    assert vals.grad.tolist() == [[0.0, 1.0], [0.0, 5.0], [0.0, 9.0]]
    assert a.grad.tolist() == [[0.0, 0.0, 4.0, 6.0], [8.0, 0.0, 12.0, 14.0],
                               [16.0, 0.0, 20.0, 22.0]]

    # A 0-dim value broadcast over duplicate destinations: one gradient per destination.
    s = mg.tensor(7.0, dtype=mg.float64, requires_grad=True)
    b = mg.zeros(5, dtype=mg.float64, requires_grad=True)
    g = b * 1.0
    g[[1, 1, 3, 1]] = s
    (g * mg.tensor(W, dtype=mg.float64)).sum().backward()
    assert s.grad.item() == W[1] + W[3]
    assert b.grad.tolist() == [W[0], 0.0, W[2], 0.0, W[4]]


def index_put_duplicates(lib, accumulate):
    a = f64(lib, [1.0, 2.0, 3.0, 4.0, 5.0], True)
    v = f64(lib, [10.0, 20.0, 30.0, 40.0, 50.0], True)
    h = a * 1.0
    h.index_put_((lib.tensor([4, 1, 4, 1, 4]),), v, accumulate=accumulate)
    (h * f64(lib, W)).sum().backward()
    return h.detach(), a.grad, v.grad


def test_index_put_duplicate_gradients():
    # accumulate=True: every occurrence adds, and gets the gradient, as in torch.
    assert_same_outcome(*run_both(index_put_duplicates, True))
    # accumulate=False: the last occurrences (v[3] to 1, v[4] to 4) win and get the gradient.
    h, a_grad, v_grad = index_put_duplicates(mg, False)
    assert h.tolist() == [1.0, 40.0, 3.0, 4.0, 50.0]
    assert v_grad.tolist() == [0.0, 0.0, 0.0, W[1], W[4]]
    assert a_grad.tolist() == [W[0], 0.0, W[2], W[3], 0.0]


def test_mask_writes_have_no_duplicates_and_match_torch():
    def scenario(lib):
        a = f64(lib, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], True)
        v = f64(lib, [7.0, 8.0, 9.0], True)
        h = a.tanh() * 1.0
        h[lib.tensor([[True, False, True], [False, True, False]])] = v
        h.masked_fill_(lib.tensor([[False, False, True], [True, False, False]]), 0.5)
        (h * h).sum().backward()
        return h.detach(), a.grad, v.grad

    assert_same_outcome(*run_both(scenario), exact=False, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Errors of in-place ops and of backward: torch's exception kind; mutagrad changes nothing.


def inplace_error(lib, name):
    x = f64(lib, [4.0, -2.0, 0.5])
    i = lib.tensor([4, 2, 1])
    op = {
        "int mul_ by a float": lambda: i.mul_(0.5),
        "int div_": lambda: i.div_(2),
        "int clamp_ with float bounds": lambda: i.clamp_(0.5, 1.5),
        "int sigmoid_": lambda: i.sigmoid_(),
        "bool relu_": lambda: lib.tensor([True, False]).relu_(),
        "add_ that would broadcast self": lambda: x.add_(lib.zeros(2, 3, dtype=lib.float64)),
        "copy_ from a non-broadcastable source": lambda: x.copy_(lib.zeros(2, dtype=lib.float64)),
        "masked_fill_ with a mask of another shape": lambda: x.masked_fill_(
            lib.tensor([True, False]), 1.0),
        "index_put_ with another dtype": lambda: x.index_put_((lib.tensor([0]),),
                                                              lib.tensor([1.0])),
    }[name]
    outcome = capture(op)
    return outcome.kind, x, x._version, i, i._version


INPLACE_ERRORS = ("int mul_ by a float", "int div_", "int sigmoid_", "int clamp_ with float bounds",
                  "bool relu_", "add_ that would broadcast self",
                  "copy_ from a non-broadcastable source",
                  "masked_fill_ with a mask of another shape", "index_put_ with another dtype")


@pytest.mark.parametrize("name", INPLACE_ERRORS)
def test_inplace_validation_errors_match_torch(name):
    ot, om = run_both(inplace_error, name)
    assert ot.value[0] == "RuntimeError"
    assert_same_outcome(ot, om, what=name)


def backward_error(lib, name):
    a = f64(lib, [1.0, 2.0], True)
    b = f64(lib, [3.0, 4.0], True)
    if name == "backward twice":
        y = (a * a).sum()
        y.backward()
        y.backward()
    elif name == "non-scalar without gradient":
        (a * 2.0).backward()
    elif name == "unused input":
        lib.autograd.grad((a * 2.0).sum(), [a, b])
    elif name == "nothing requires grad":
        (f64(lib, [1.0]) * 2.0).sum().backward()
    elif name == "grad twice without retain_graph":
        y = (a.exp() * b).sum()
        lib.autograd.grad(y, a)
        lib.autograd.grad(y, b)


@pytest.mark.parametrize("name", ["backward twice", "non-scalar without gradient",
                                  "unused input", "nothing requires grad",
                                  "grad twice without retain_graph"])
def test_backward_errors_match_torch(name):
    ot, om = run_both(backward_error, name)
    assert ot.kind == "RuntimeError"
    assert_same_outcome(ot, om, what=name)


def test_masked_fill_with_an_integer_mask_is_an_error():
    # Documented difference (docs/mutation-semantics.md, E7): torch 1.13 accepts an int64 mask.
    x = mg.zeros(3)
    with pytest.raises(RuntimeError, match="expected a bool mask"):
        x.masked_fill_(mg.tensor([1, 0, 1]), 1.0)
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0


def test_clamp_without_bounds_is_runtime_error():
    ot, om = run_both(lambda lib: lib.zeros(2).clamp_())
    assert ot.kind == "RuntimeError"
    assert_same_outcome(ot, om)
