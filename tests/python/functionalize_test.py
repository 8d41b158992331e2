"""mutagrad.func (capture, functionalize) against torch 1.13's functorch.functionalize: random
mutating programs (clone, slice/select/transpose/view/expand views, in-place element-wise ops,
setitem with basic and advanced indices, index_put_ with accumulate, masked_fill_, writes to
inputs) run four ways: torch eagerly, torch through functorch.functionalize, mutagrad eagerly,
mutagrad functionalized and captured-then-replayed. Every result and every input afterwards is
equal bit for bit; the functionalized graph has no in-place op but the final copy_ into each
written input. mutagrad runs on the CPU and the host-run CUDA device; torch on the CPU. The
element-wise ops are the exactly rounded ones (add, sub, mul, div, neg, relu), so the two
libraries agree bit for bit; the steps also apply clamp_, pow_(2), where, amax, unbind, split,
diagonal, index_add_/index_copy_/index_fill_ and scatter_/scatter_add_ (exact in both).
Gradients through mutagrad's functionalize equal its eager gradients bit for bit on every
program whose eager backward runs (programs that functorch 1.13 itself gets wrong, a stale
expand of a written base, are dropped)."""

import random
import struct

import pytest
import torch
from functorch import functionalize as torch_functionalize

import mutagrad as mg

DEVICES = ["cpu", "cuda"]
NUM_PROGRAMS = 40
VIEW_OPS = {"select", "slice", "narrow", "permute", "transpose", "t", "expand", "unsqueeze",
            "squeeze", "view", "reshape", "alias"}


def bits(lib, t):
    values = (t if lib is torch else t.cpu()).reshape(-1).tolist()
    return [struct.pack("<f", v) if isinstance(v, float) else v for v in values], list(t.shape)


STEP_KINDS = ["clone", "slice", "select", "transpose", "view", "expand", "add_", "mul_", "sub_", "div_",
              "neg_", "relu_", "copy_", "setitem_basic", "setitem_adv", "index_put_acc",
              "masked_fill_", "add_other", "clamp_", "pow_", "where", "amax", "unbind", "split",
              "diagonal", "index_add_", "index_copy_", "index_fill_", "scatter_", "scatter_add_"]


def make_step(rng):
    """One random step: a function (lib, pool, dev) that may append to the pool."""
    kind = rng.choice(STEP_KINDS)
    a = rng.randrange(1000)
    b = rng.randrange(1000)
    s = rng.choice([0.5, 2.0, -1.25, 3.0])
    i = rng.randrange(4)

    def step(lib, pool, dev):
        t = pool[a % len(pool)]
        u = pool[b % len(pool)]
        if kind == "clone":
            pool.append(t.clone())
        elif kind == "slice":
            pool.append(t[i % 2:i % 2 + 2] if i < 2 else t[:, ::2])
        elif kind == "select":
            pool.append(t[i % t.shape[0]] if i < 2 else t.select(-1, 0))
        elif kind == "transpose":
            pool.append(t.t() if i < 2 else t.transpose(0, 1))
        elif kind == "view":
            pool.append(t.view(-1))
        elif kind == "expand":  # read-only: a later write into it is refused (and dropped)
            pool.append(t[0:1].expand(2, *t.shape[1:]))
        elif kind == "add_":
            t.add_(s)
        elif kind == "mul_":
            t.mul_(s)
        elif kind == "sub_":
            t.sub_(u)
        elif kind == "div_":
            t.div_(s)
        elif kind == "neg_":
            t.neg_()
        elif kind == "relu_":
            t.relu_()
        elif kind == "copy_":
            t.copy_(u)
        elif kind == "add_other":
            t.add_(u * s)
        elif kind == "setitem_basic":
            if i < 2:
                t[i % t.shape[0]] = s
            else:
                t[..., :1] = u[..., :1]
        elif kind == "setitem_adv":
            idx = lib.tensor([i % t.shape[0], 0], **dev)
            t[idx] = s
        elif kind == "index_put_acc":
            idx = lib.tensor([0, i % t.shape[0], 0], **dev)
            t.index_put_((idx,), lib.tensor(s, **dev), accumulate=True)
        elif kind == "masked_fill_":
            t.masked_fill_(t > 0.25, s)
        elif kind == "clamp_":
            t.clamp_(-0.75, 1.5) if i < 2 else t.clamp_(min=-s)
        elif kind == "pow_":
            t.pow_(2.0)
        elif kind == "where":
            pool.append(lib.where(t > 0, t, u))
        elif kind == "amax":
            pool.append(t.amax(dim=-1, keepdim=i < 2))
        elif kind == "unbind":
            pool.append(t.unbind(i % 2)[i % 2])
        elif kind == "split":
            pool.append(t.split(2, dim=-1)[i % 2])
        elif kind == "diagonal":
            pool.append(t.diagonal(i % 2 - 1 if i < 2 else 0))
        elif kind in ("index_add_", "index_copy_"):
            if list(u[:2].shape) != [2] + list(t.shape[1:]):
                raise ValueError("a source of another shape (a step make_program drops)")
            if kind == "index_add_":
                t.index_add_(0, lib.tensor([i % 2 + 1, 0], **dev), u[:2])
            else:
                t.index_copy_(0, lib.tensor([0, i % 2 + 1], **dev), u[1:3])
        elif kind == "index_fill_":
            t.index_fill_(-1, lib.tensor([i % 2], **dev), s)
        elif kind == "scatter_":
            t.scatter_(0, lib.tensor([[1, 0], [0, 1]], **dev), u)
        elif kind == "scatter_add_":
            t.scatter_add_(-1, lib.tensor([[1, 0], [0, 1]], **dev), u)
    step.kind = kind
    return step


def make_program(seed):
    """A random program valid in torch (steps torch refuses are dropped)."""
    rng = random.Random(seed)
    steps = []
    for _ in range(12):
        candidate = steps + [make_step(rng)]
        x, w = inputs(torch, "cpu", seed)
        try:
            run(torch, candidate, "cpu", x, w)
            # functorch must take it too (its functionalize has no rule for a few cases), and
            # mutagrad (torch 1.13 lets a few shape mismatches through, e.g. in scatter_add_).
            fx, fw = inputs(torch, "cpu", seed)
            functional = torch_functionalize(lambda a, b: run(torch, candidate, "cpu", a, b))(
                fx, fw)
            run(mg, candidate, "cpu", *inputs(mg, "cpu", seed))
        except (RuntimeError, IndexError, ValueError, TypeError):
            continue
        # ... and give eager's results: functorch 1.13 reads a stale expand of a written base.
        eager = run(torch, candidate, "cpu", x := inputs(torch, "cpu", seed)[0],
                    w := inputs(torch, "cpu", seed)[1])
        if [bits(torch, t) for t in eager + (x, w)] != [bits(torch, t)
                                                         for t in functional + (fx, fw)]:
            continue
        steps = candidate
    return steps


def run(lib, steps, device, x, w):
    dev = {} if lib is torch else {"device": device}
    pool = [x, w]
    for step in steps:
        step(lib, pool, dev)
    return tuple(p * 1 for p in pool[2:]) + (x + w,)


def inputs(lib, device, seed):
    rng = random.Random(seed * 7919)
    data = [[round(rng.uniform(-2, 2), 3) for _ in range(4)] for _ in range(4)]
    data2 = [[round(rng.uniform(-2, 2), 3) for _ in range(4)] for _ in range(4)]
    dev = {} if lib is torch else {"device": device}
    return lib.tensor(data, dtype=lib.float32, **dev), lib.tensor(data2, dtype=lib.float32, **dev)


@pytest.mark.parametrize("device", DEVICES)
def test_random_programs_agree_with_functorch(device):
    checked_writes = 0
    checked_grads = 0
    kinds = set()
    for seed in range(NUM_PROGRAMS):
        steps = make_program(seed)
        kinds |= {step.kind for step in steps}

        def torch_f(x, w):
            return run(torch, steps, "cpu", x, w)

        def mg_f(x, w):
            return run(mg, steps, device, x, w)

        tx, tw = inputs(torch, "cpu", seed)
        torch_eager = torch_f(tx, tw)
        torch_after = (tx, tw)
        fx, fw = inputs(torch, "cpu", seed)
        torch_func = torch_functionalize(torch_f)(fx, fw)
        for a, b in zip(torch_eager + torch_after, torch_func + (fx, fw)):
            assert bits(torch, a) == bits(torch, b), f"functorch itself, seed {seed}"

        mx, mw = inputs(mg, device, seed)
        mg_eager = mg_f(mx, mw)
        for a, b in zip(torch_eager + torch_after, mg_eager + (mx, mw)):
            assert bits(torch, a) == bits(mg, b), f"mutagrad eager vs torch, seed {seed}"

        for remove in ("mutations", "mutations_and_views"):
            px, pw = inputs(mg, device, seed)
            pure = mg.func.functionalize(mg_f, remove=remove)(px, pw)
            for a, b in zip(torch_func + (fx, fw), pure + (px, pw)):
                assert bits(torch, a) == bits(mg, b), f"functionalized ({remove}), seed {seed}"

        cx, cw = inputs(mg, device, seed)
        graph = mg.func.capture(mg_f, cx, cw)
        rx, rw = inputs(mg, device, seed)
        replayed = graph(rx, rw)
        for a, b in zip(mg_eager + (mx, mw), replayed + (rx, rw)):
            assert bits(mg, a) == bits(mg, b), f"replayed, seed {seed}\n{graph}"

        gx, gw = inputs(mg, device, seed)
        pure_graph = mg.func.capture(mg_f, gx, gw).functionalize()
        ops = pure_graph.ops()
        inplace = [op for op in ops if op.endswith("_")]
        assert all(op == "copy_" for op in inplace), pure_graph.code
        assert ops[len(ops) - len(inplace):] == inplace, pure_graph.code  # all at the end
        assert len(inplace) <= 2
        checked_writes += len(inplace)
        no_views = mg.func.capture(mg_f, *inputs(mg, device, seed)).functionalize(
            "mutations_and_views")
        assert not VIEW_OPS & set(no_views.ops()), no_views.code

        # Gradients through functionalize are eager's, bit for bit (signed zeros included); the
        # program's inputs are made inside it from leaves, so its writes to them are allowed.
        def mg_g(x, w):
            return mg_f(x * 1.0, w * 1.0)

        def loss(outs):
            return sum(o.sum() for o in outs if o.requires_grad)

        ex, ew = (t.requires_grad_() for t in inputs(mg, device, seed))
        try:
            loss(mg_g(ex, ew)).backward()
        except RuntimeError:
            continue  # eager refuses: a saved tensor the program overwrote
        qx, qw = (t.requires_grad_() for t in inputs(mg, device, seed))
        loss(mg.func.functionalize(mg_g)(qx, qw)).backward()
        for a, b in ((ex.grad, qx.grad), (ew.grad, qw.grad)):
            assert (a is None) == (b is None), f"gradients, seed {seed}"
            if a is not None:
                assert bits(mg, a) == bits(mg, b), f"gradients, seed {seed}\n{graph}"
        checked_grads += 1
    assert checked_writes > 0  # some programs wrote their inputs
    assert checked_grads >= NUM_PROGRAMS // 4, checked_grads  # eager backward ran (15 of 40)
    # Every kind of step ran in some program that torch, functorch and mutagrad all took.
    assert kinds == set(STEP_KINDS), set(STEP_KINDS) - kinds


def test_write_into_a_view_of_an_intermediate_prints_as_code():
    def f(x):
        y = x.clone()
        y[1:3].mul_(2.0)
        return y

    g = mg.func.capture(f, mg.arange(4.0))
    assert "%2 = slice(%1, 0, 1, 3, 1)" in g.code
    assert "%3 = mul_(%2, 2.0)" in g.code
    pure = g.functionalize()
    assert pure.num_inplace() == 0
    assert "slice_scatter" in pure.code
    assert pure(mg.arange(4.0) + 1).tolist() == [1.0, 4.0, 6.0, 4.0]
    assert g(mg.arange(4.0) + 1).tolist() == [1.0, 4.0, 6.0, 4.0]


def test_optimizer_step_writes_its_input_once_at_the_end():
    def sgd_step(p, grad):
        p.add_(grad * -0.1)
        return p

    pure = mg.func.capture(sgd_step, mg.ones(3), mg.ones(3)).functionalize()
    assert pure.ops() == ["mul", "add", "copy_"]
    assert "%2 = mul(%1, -0.1)" in pure.code  # the shortest text that reads back
    p, g = mg.tensor([1.0, 2.0, 3.0]), mg.tensor([0.5, -0.25, 4.0])
    pe = p.clone()
    expected = sgd_step(pe, g.clone())
    out = mg.func.functionalize(sgd_step)(p, g)
    assert bits(mg, out) == bits(mg, expected)
    assert bits(mg, p) == bits(mg, pe)


def test_gradients_through_functionalize_equal_eager():
    def f(x, w):
        y = x * 1.5
        y[1:3].mul_(w)
        y[0].add_(w[1])
        y.t().masked_fill_(x.t() > 0.8, 0.0)
        return y * y

    data = [[0.25, -1.0], [0.5, 2.0], [1.5, -0.75], [0.9, 0.1]]
    wdata = [[0.3, -0.2], [1.1, 0.7]]
    x = mg.tensor(data, requires_grad=True)
    w = mg.tensor(wdata, requires_grad=True)
    f(x, w).sum().backward()
    xf = mg.tensor(data, requires_grad=True)
    wf = mg.tensor(wdata, requires_grad=True)
    mg.func.functionalize(f)(xf, wf).sum().backward()
    # Bit for bit with eager, signed zeros included (Note [Signed zeros of functionalized
    # gradients] in func/ops.cc): x.grad has a -0.0 here.
    assert bits(mg, x.grad) == bits(mg, xf.grad)
    assert bits(mg, w.grad) == bits(mg, wf.grad)
    assert b"\x00\x00\x00\x80" in bits(mg, xf.grad)[0]
    tx = torch.tensor(data, requires_grad=True)
    tw = torch.tensor(wdata, requires_grad=True)
    f(tx, tw).sum().backward()
    assert bits(torch, tx.grad) == bits(mg, xf.grad)
    assert bits(torch, tw.grad) == bits(mg, wf.grad)
    # torch's functionalize gives that element +0.0: equal values, not equal bits.
    fx = torch.tensor(data, requires_grad=True)
    fw = torch.tensor(wdata, requires_grad=True)
    torch_functionalize(f)(fx, fw).sum().backward()
    assert fx.grad.tolist() == xf.grad.tolist() and fw.grad.tolist() == wf.grad.tolist()


def set_data_program(x):
    y = x * 1.0
    y.data = mg.zeros(4)  # the replay would add 1 to x * 1.0
    return y + 1.0


def test_unsupported_ops_raise_naming_the_op():
    def f(x):
        y = x.clone()
        y.clamp_(0.0, 1.0)
        return y

    with pytest.raises(mg.func.CaptureError, match="atan2_"):
        mg.func.capture(lambda x: x.clone().atan2_(x), mg.ones(3))
    with pytest.raises(ValueError, match="remove"):
        mg.func.functionalize(f, remove="views")

    # cumsum is not covered: applied to a value computed from the inputs, with or without
    # autograd history, capture refuses it instead of baking its result into the graph.
    # The refusal names the op (Note [Naming an uncovered op]): CaptureError.op.
    for requires_grad in (True, False):
        with pytest.raises(mg.func.CaptureError,
                           match="the op cumsum, which func::capture does not cover, read %1") as e:
            mg.func.functionalize(lambda x: (x * 2.0).cumsum(0))(
                mg.ones(3, requires_grad=requires_grad))
        assert e.value.op == "cumsum"
    programs = {
        "cumsum": lambda x: x.cumsum(0),
        "flip": lambda x: mg.flip(x * 1.0, [0]),
        "atan2": lambda x: x.atan2(x),
        "sort": lambda x: x.sort()[0],
        "lerp_": lambda x: x.clone().lerp_(x, 0.5),
        "atan2_": lambda x: x.clone().atan2_(x),
        "unfold": lambda x: x.unfold(0, 2, 1) * 2.0,
        "item": lambda x: x * x.sum().item(),
        "set_data": set_data_program,
        "detach_": lambda x: (x * 1.0).detach_() * 2.0,
        "requires_grad_": lambda x: x.requires_grad_(False) * 2.0,
    }
    for op, program in programs.items():
        with pytest.raises(mg.func.CaptureError) as e:
            mg.func.capture(program, mg.ones(4, requires_grad=True))
        assert e.value.op == op, str(e.value)

    # A view op not covered reads no data: it reports itself, so the refusal names it with or
    # without autograd history, for integer views too, however the program uses the view.
    views = {
        "unfold": lambda v: v.unfold(0, 2, 1),
        "detach": lambda v: v.detach(),
        "variable_data": lambda v: v.data,
    }
    uses = {
        "read": lambda v: v * 2,
        "covered view of it": lambda v: v[1] + 1,
        "written": lambda v: v.mul_(2),
        "returned": lambda v: v,
    }
    for op, view in views.items():
        for use_name, use in uses.items():
            for dtype, requires_grad in ((mg.float32, True), (mg.float32, False),
                                         (mg.int64, False)):
                for intermediate in (False, True):
                    if requires_grad and use_name == "written" and not intermediate:
                        continue  # a view of a leaf that requires grad: eager refuses the write

                    def program(x, view=view, use=use, intermediate=intermediate):
                        return use(view(x * 3 if intermediate else x))

                    x = mg.ones(4, dtype=dtype, requires_grad=requires_grad)
                    for run in (lambda: mg.func.capture(program, x),
                                lambda: mg.func.functionalize(program)(x)):
                        with pytest.raises(mg.func.CaptureError,
                                           match=f"made by the view op {op} ") as e:
                            run()
                        assert e.value.op == op, (use_name, dtype, requires_grad, str(e.value))


class ScaledGrad(mg.autograd.Function):
    """A custom Function whose backward is not its forward's derivative."""

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 100.0


def test_custom_functions_raise_naming_the_function():
    # capture would record the forward's ops, whose gradient (2) is not the Function's (100).
    param = mg.ones(3, requires_grad=True)
    programs = {
        "input requires grad": (lambda x: ScaledGrad.apply(x * 1.0), True),
        "input without grad": (lambda x: ScaledGrad.apply(x * 1.0) + x, False),
        "closed-over parameter": (lambda x: ScaledGrad.apply(param) + x, False),
    }
    for name, (program, requires_grad) in programs.items():
        for run in (lambda: mg.func.capture(program, mg.ones(3, requires_grad=requires_grad)),
                    lambda: mg.func.functionalize(program)(
                        mg.ones(3, requires_grad=requires_grad))):
            with pytest.raises(mg.func.CaptureError,
                               match="the custom Function ScaledGrad is applied to") as e:
                run()
            assert e.value.op == "ScaledGrad", name
    # On a constant that does not require grad it is a constant: captured, replayed.
    c = mg.tensor([1.0, 2.0, 3.0])
    g = mg.func.capture(lambda x: ScaledGrad.apply(c) + x, mg.ones(3))
    assert g(mg.zeros(3)).tolist() == [2.0, 4.0, 6.0]


@pytest.mark.parametrize("read", ["item", "bool", "tolist", "float", "compare"])
def test_host_reads_of_traced_values_raise_naming_the_read(read):
    def f(x):
        y = x * 2.0
        if read == "item":
            flag = y.sum().item() > 0
        elif read == "bool":
            flag = bool(y.sum() > 0)
        elif read == "tolist":
            flag = y.tolist()[0] > 0
        elif read == "float":
            flag = float(y[0]) > 0
        else:
            flag = y[0] > 0  # a tensor turned into a Python bool by `if`
            if flag:
                return y + 1.0
        return y + 1.0 if flag else y

    name = {"item": "item", "bool": "bool", "tolist": "tolist", "float": "float",
            "compare": "bool"}[read]
    with pytest.raises(mg.func.CaptureError, match=rf"{name}\(\) reads the value of %"):
        mg.func.capture(f, mg.ones(3))
    # A closed-over tensor's value is no input's: reading it is fine.
    w = mg.tensor([0.5])
    g = mg.func.capture(lambda x: x * w.item(), mg.ones(3))
    assert g(mg.tensor([1.0, 2.0, 4.0])).tolist() == [0.5, 1.0, 2.0]
