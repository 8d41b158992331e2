"""Forward-mode AD (mutagrad.autograd.forward_ad) against torch 1.13's torch.autograd.forward_ad:
random programs mixing in-place ops, views and indexed writes on dual and plain tensors, the
same program run by both libraries, every tensor's primal and tangent compared after every
step (on the CPU and the host-run CUDA device for mutagrad; torch runs on the CPU). Then the
API's shape (namedtuple, nested levels, level exit) and its errors."""

import random

import pytest
import torch
import torch.autograd.forward_ad as tfw

import mutagrad as mg
import mutagrad.autograd.forward_ad as mfw

DEVICES = ["cpu", "cuda"]


def to_torch(t):
    return torch.tensor(t.cpu().tolist(), dtype=torch.float64) if t is not None else None


def values(lib, t):
    if t is None:
        return None
    return t.tolist() if lib is torch else t.cpu().tolist()


def run_program(lib, fw, seed, device):
    """Runs one random program; returns [(primal, tangent)] of every named tensor after each
    step, as nested lists (tangent None when absent)."""
    rng = random.Random(seed)
    dev = {} if lib is torch else {"device": device}

    def const(*shape):
        data = [rng.uniform(-1, 1) for _ in range(max(1, int(torch.Size(shape).numel())))]
        return lib.tensor(data, dtype=lib.float64, **dev).reshape(shape)

    snapshots = []
    with fw.dual_level():
        base = const(4, 6)
        plain = const(4, 6)
        dual = fw.make_dual(const(4, 6), const(4, 6))
        src = fw.make_dual(const(2, 6), const(2, 6))
        named = {"base": base, "plain": plain, "dual": dual, "src": src}
        views = {}
        for step in range(12):
            kind = rng.choice(["view", "inplace", "write", "binary", "indexed", "unary"])
            target_name = rng.choice(sorted(named) + sorted(views))
            target = named.get(target_name, views.get(target_name))
            if kind == "view":
                which = rng.choice(["row", "cols", "t", "diag"])
                parent = rng.choice([base, plain, dual])
                if which == "row":
                    v = parent.select(0, rng.randrange(4))
                elif which == "cols":
                    v = parent.narrow(1, 1, 3)
                elif which == "t":
                    v = parent.t()
                else:
                    v = parent.diagonal()
                views[f"v{step}"] = v
            elif kind == "inplace":
                op = rng.choice(["mul_", "add_", "sin_", "exp_", "neg_", "tanh_", "zero_",
                                 "lerp_", "addcmul_", "clamp_"])
                if op in ("mul_", "add_", "lerp_", "addcmul_", "clamp_"):
                    other = rng.choice([const(*target.shape), dual.flatten()[: target.numel()]
                                        .reshape(target.shape) * 0.5])
                    if op == "lerp_":  # issue 40's third part: in-place ternary ops
                        target.lerp_(other, 0.3)
                    elif op == "addcmul_":
                        target.addcmul_(other, const(*target.shape), value=0.5)
                    elif op == "clamp_":
                        target.clamp_(min=other - 0.4, max=other + 0.4)
                    else:
                        getattr(target, op)(other)
                else:
                    getattr(target, op)()
            elif kind == "write":
                row = rng.randrange(4)
                if target.dim() == 2 and target.shape[0] == 4 and target.shape[1] == 6:
                    target[row] = src[rng.randrange(2)] * 2
                else:
                    target.copy_(dual.flatten()[: target.numel()].reshape(target.shape) * 1.0)
            elif kind == "indexed":
                op = rng.choice(["index_put_", "masked_fill_", "index_add_", "scatter_add_"])
                if target.dim() != 2 or target.shape != (4, 6):
                    target = base
                idx = lib.tensor([rng.randrange(4), rng.randrange(4)], **dev)
                if op == "index_put_":
                    target.index_put_((idx,), src, accumulate=rng.random() < 0.5)
                elif op == "masked_fill_":
                    target.masked_fill_(const(4, 6) > 0, 0.25)
                elif op == "index_add_":
                    target.index_add_(0, idx, src, alpha=1.5)
                else:
                    target.scatter_add_(0, idx.unsqueeze(1).expand(2, 6), src)
            elif kind == "binary":
                named[f"r{step}"] = target * dual.flatten()[: target.numel()].reshape(
                    target.shape) + target.sum()
            else:
                op = rng.choice(["sigmoid", "exp", "tanh", "relu", "sin", "cumsum", "softmax",
                                 "amax", "sort", "cat", "where", "prod"])
                composite = {  # ops with tangent formulas of their own (issue 40, second part)
                    "cumsum": lambda t: t.cumsum(-1),
                    "softmax": lambda t: t.softmax(-1),
                    "amax": lambda t: t.amax(-1),
                    "sort": lambda t: t.sort(-1)[0],
                    "cat": lambda t: lib.cat([t[:1], t[1:] * 2], 0),
                    "where": lambda t: lib.where(t > 0, t, t * t),
                    "prod": lambda t: t.prod(-1),
                }
                named[f"r{step}"] = (composite[op](target) if op in composite
                                     else getattr(target, op)())
            snap = {}
            for name, t in list(named.items()) + list(views.items()):
                p, tg = fw.unpack_dual(t)
                snap[name] = (values(lib, p), values(lib, tg))
            snapshots.append(snap)
    return snapshots


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return torch.allclose(torch.tensor(a, dtype=torch.float64),
                          torch.tensor(b, dtype=torch.float64), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("seed", range(40))
def test_random_programs_match_torch(seed, device):
    expected = run_program(torch, tfw, seed, None)
    got = run_program(mg, mfw, seed, device)
    for step, (e, g) in enumerate(zip(expected, got)):
        for name in e:
            assert close(e[name][0], g[name][0]), (step, name, "primal")
            assert close(e[name][1], g[name][1]), (step, name, "tangent", e[name][1], g[name][1])


def test_api_shape_and_level_exit():
    x = mg.tensor([1.0, 2.0], dtype=mg.float64)
    with mfw.dual_level() as level:
        assert level == 0
        d = mfw.make_dual(x, mg.tensor([3.0, 4.0], dtype=mg.float64))
        u = mfw.unpack_dual(d * d)
        assert isinstance(u, mfw.UnpackedDualTensor)
        assert u.tangent.tolist() == [6.0, 16.0]
        assert u.primal.tolist() == [1.0, 4.0]
        assert mfw.unpack_dual(x).tangent is None
    with mfw.dual_level():
        assert mfw.unpack_dual(d).tangent is None  # erased when its level exited
    assert mfw.unpack_dual(d).tangent is None


def test_errors():
    x = mg.tensor([1.0, 2.0], dtype=mg.float64)
    with pytest.raises(RuntimeError, match="no forward AD level"):
        mfw.make_dual(x, x)
    with mfw.dual_level():
        with pytest.raises(RuntimeError, match=r"\[3\]"):
            mfw.make_dual(x, mg.zeros(3, dtype=mg.float64))
        with pytest.raises(RuntimeError, match="dtype"):
            mfw.make_dual(x, x.float())
        d = mfw.make_dual(x, x)
        with pytest.raises(RuntimeError, match="binary_cross_entropy.*forward-mode AD is not "
                                               "implemented"):
            mg.nn.functional.binary_cross_entropy(x.sigmoid(), x.sigmoid(), weight=d)


def test_gradcheck_check_forward_ad():
    x = mg.rand(3, 4, dtype=mg.float64, requires_grad=True)
    w = mg.rand(4, 2, dtype=mg.float64, requires_grad=True)
    assert mg.autograd.gradcheck(lambda a, b: (a @ b).sigmoid() * a.sum(), (x, w),
                                 check_forward_ad=True)


def _setitem(z, index, value):
    z[index] = value
    return z


def _through(view, write):
    """Writes through `view` of a clone of x (write(v) in place); returns the clone."""
    def program(L, x):
        base = x.clone()
        write(L, x, view(base))
        return base
    return program


def _mask(L):
    return L.tensor([[True, False, True, True], [False, False, True, False],
                     [True, True, False, True]])


# Ops beyond the random programs' set: primal and tangent equal torch 1.13's.
OPS = {
    "erfinv": lambda L, x: x.erfinv(),
    "lgamma": lambda L, x: x.lgamma(),
    "digamma": lambda L, x: x.digamma(),
    "diagonal": lambda L, x: x.diagonal() * 1,
    "unfold": lambda L, x: x.unfold(1, 2, 1) * 1,
    "unbind": lambda L, x: x.unbind(0)[1] * 1,
    "split": lambda L, x: x.split(2, 1)[1] * 1,
    "chunk": lambda L, x: x.chunk(2, 0)[0] * 1,
    "index_copy_": lambda L, x: x.clone().index_copy_(0, L.tensor([2, 0]), x[:2] * 3),
    "index_fill_": lambda L, x: x.clone().index_fill_(1, L.tensor([1]), 2.0),
    "scatter_value": lambda L, x: x.clone().scatter_(0, L.tensor([[1, 0, 2, 1]]), 0.5),
    "masked_fill": lambda L, x: x.masked_fill(x > 0.5, 1.0),
    "reshape_copy": lambda L, x: x.t().reshape(12),
    "to_float32": lambda L, x: x.to(L.float32).double(),
    "setitem_slice": lambda L, x: _setitem(L.zeros(3, 4, dtype=L.float64), slice(0, 2),
                                           x[1:3] * 2),
    "setitem_advanced": lambda L, x: _setitem(L.zeros(3, 4, dtype=L.float64),
                                              L.tensor([0, 2]), x[:2]),
    "setitem_number": lambda L, x: _setitem(x * 1, (1, 2), 5.0),
    "mean_keepdim": lambda L, x: x.mean(1, keepdim=True),
    "expand_sum": lambda L, x: x[0].expand(3, 4).sum(0),
    # Issue 40's second part: reductions, scans, joins, sorting, selection.
    "prod": lambda L, x: x.prod(),
    "prod_dim_zero": lambda L, x: (x * L.tensor([1.0, 0.0, 1.0, 1.0], dtype=L.float64)).prod(1),
    "max": lambda L, x: x.max(),
    "max_dim": lambda L, x: x.max(1)[0],
    "min_dim_keepdim": lambda L, x: x.min(0, keepdim=True)[0],
    "amax": lambda L, x: x.amax(1),
    "maximum": lambda L, x: L.maximum(x, x.flip(0)),
    "minimum": lambda L, x: L.minimum(x, x.t().reshape(3, 4) * 0.9),
    "where": lambda L, x: L.where(x > 0.5, x, x * x),
    "atan2": lambda L, x: L.atan2(x, x.flip(1) + 0.1),
    "var": lambda L, x: x.var(1),
    "std": lambda L, x: x.std(),
    "norm": lambda L, x: x.norm(),
    "logsumexp": lambda L, x: x.logsumexp(1),
    "cumsum": lambda L, x: x.cumsum(1),
    "cumprod": lambda L, x: x.cumprod(0),
    "cat": lambda L, x: L.cat([x, x * 2], 1),
    "stack": lambda L, x: L.stack([x, x.exp()], 0),
    "sort": lambda L, x: x.sort(1)[0],
    "topk": lambda L, x: x.topk(2, 1)[0],
    "gather": lambda L, x: x.gather(1, L.tensor([[0, 3], [1, 1], [2, 0]])),
    "index_select": lambda L, x: x.index_select(1, L.tensor([3, 0, 3])),
    "flip_roll": lambda L, x: x.flip(0).roll(1, 1),
    "tril": lambda L, x: x.tril(),
    "scatter_reduce_sum": lambda L, x: x.scatter_reduce(0, L.tensor([[2, 0, 1, 1]]), x[:1] * 3,
                                                        "sum"),
    # The nn functional ops.
    "softmax": lambda L, x: x.softmax(1),
    "log_softmax": lambda L, x: x.log_softmax(0),
    "gelu": lambda L, x: L.nn.functional.gelu(x),
    "silu": lambda L, x: L.nn.functional.silu(x),
    "elu": lambda L, x: L.nn.functional.elu(x - 0.5),
    "leaky_relu": lambda L, x: L.nn.functional.leaky_relu(x - 0.5, 0.1),
    "softplus": lambda L, x: L.nn.functional.softplus(x, 2.0),
    "layer_norm": lambda L, x: L.nn.functional.layer_norm(x, (4,)),
    "batch_norm": lambda L, x: L.nn.functional.batch_norm(x, None, None, training=True),
    "embedding": lambda L, x: L.nn.functional.embedding(L.tensor([2, 0, 2]), x),
    "pad": lambda L, x: L.nn.functional.pad(x, (1, 2)),
    "mse_loss": lambda L, x: L.nn.functional.mse_loss(x, x.flip(0)),
    "cross_entropy": lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([3, 0, 1])),
    "bce_with_logits": lambda L, x: L.nn.functional.binary_cross_entropy_with_logits(
        x, x.flip(1)),
    "conv2d": lambda L, x: L.nn.functional.conv2d(x.reshape(1, 1, 3, 4), x[:2, :2].reshape(
        1, 1, 2, 2), padding=1),
    "max_pool2d": lambda L, x: L.nn.functional.max_pool2d(x.reshape(1, 3, 4), 2),
    "avg_pool2d": lambda L, x: L.nn.functional.avg_pool2d(x.reshape(1, 3, 4), 2, 1),
    "adaptive_avg_pool2d": lambda L, x: L.nn.functional.adaptive_avg_pool2d(x.reshape(1, 3, 4),
                                                                          (2, 3)),
    # Issue 40's last in-place ops, on a clone and through views of it.
    "clamp_tensor_": lambda L, x: x.clone().clamp_(min=x.flip(0) * 0.9, max=x.flip(1) + 0.1),
    "clamp_tensor_view": _through(lambda b: b.t(), lambda L, x, v: v.clamp_(max=x.t() * 0.8)),
    "addcmul_": lambda L, x: x.clone().addcmul_(x.flip(0), x.flip(1), value=0.5),
    "addcdiv_view": _through(lambda b: b[1:], lambda L, x, v: v.addcdiv_(x[:2], x[1:] + 0.5,
                                                                          value=-2.0)),
    "lerp_scalar_": lambda L, x: x.clone().lerp_(x.flip(0), 0.7),
    "lerp_tensor_view": _through(lambda b: b[:, 1:], lambda L, x, v: v.lerp_(x[:, :3].exp(),
                                                                             x[:, 1:])),
    "put_": lambda L, x: x.clone().put_(L.tensor([1, 5, 1]), x[0, :3].exp()),
    "put_accumulate_view": _through(lambda b: b.t(), lambda L, x, v: v.put_(
        L.tensor([1, 5, 1, 11]), x[1] * 2, accumulate=True)),
    "put_into_plain": lambda L, x: L.zeros(3, 4, dtype=L.float64).put_(L.tensor([0, 11]),
                                                                        x[1, :2]),
    "masked_scatter_": lambda L, x: x.clone().masked_scatter_(_mask(L), x.exp()),
    # (A contiguous view: on a transposed one torch 1.13's CPU kernel fills in memory order,
    # docs/indexing.md.)
    "masked_scatter_view": _through(lambda b: b[1:], lambda L, x, v: v.masked_scatter_(
        _mask(L)[1:], x.flip(0))),
    "tril_": lambda L, x: x.clone().tril_(-1),
    "triu_view": _through(lambda b: b.t(), lambda L, x, v: v.triu_()),
    "fill_diagonal_": lambda L, x: (x * 2).fill_diagonal_(0.5),
    "fill_diagonal_wrap": lambda L, x: (x * 2).reshape(6, 2).fill_diagonal_(0.5, wrap=True),
    "fill_diagonal_wrap_strided": lambda L, x: (x * 2).reshape(2, 6).t().fill_diagonal_(
        0.5, wrap=True),
    "t_": lambda L, x: x.clone().t_() * 1,
    "transpose_view": _through(lambda b: b[:, 1:], lambda L, x, v: v.transpose_(0, 1).mul_(
        x[:, :3].t())),
    "unsqueeze_squeeze_": lambda L, x: x.clone().unsqueeze_(0).squeeze_(0).mul_(x),
    "squeeze_all_view": _through(lambda b: b[1:].unsqueeze(0), lambda L, x, v: v.squeeze_().add_(
        x[:2].exp())),
    "as_strided_": lambda L, x: x.clone().as_strided_((2, 3), (1, 2), 1).mul_(x[:2, :3]),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_more_ops_match_torch(name):
    rng = random.Random(7)
    data = [[rng.uniform(0.1, 0.9) for _ in range(4)] for _ in range(3)]
    tangent = [[rng.uniform(-1, 1) for _ in range(4)] for _ in range(3)]
    results = []
    for lib, fw in ((torch, tfw), (mg, mfw)):
        with fw.dual_level():
            d = fw.make_dual(lib.tensor(data, dtype=lib.float64),
                             lib.tensor(tangent, dtype=lib.float64))
            p, t = fw.unpack_dual(OPS[name](lib, d))
            results.append((p.tolist(), None if t is None else t.tolist()))
    (ep, et), (gp, gt) = results
    # digamma's tangent is polygamma(1, x), whose series differs from torch's in the last bits.
    rtol = 1e-7 if name == "digamma" else 1e-10
    assert torch.allclose(torch.tensor(ep, dtype=torch.float64),
                          torch.tensor(gp, dtype=torch.float64), rtol=rtol)
    assert (et is None) == (gt is None)
    assert torch.allclose(torch.tensor(et, dtype=torch.float64),
                          torch.tensor(gt, dtype=torch.float64), rtol=rtol), (et, gt)


@pytest.mark.parametrize("device", DEVICES)
def test_an_operand_aliasing_the_written_tensor_is_read_before_the_write(device):
    """c.addcmul_(c, f): the tangent uses c's value before the write (dc + v (dc f + c df)).
    torch 1.13 reads c after it (its tangent differs by v c_new df - v c df): we do better."""
    rng = random.Random(3)
    vals = [[rng.uniform(0.1, 0.9) for _ in range(4)] for _ in range(6)]
    with mfw.dual_level():
        x = mg.tensor(vals[:3], dtype=mg.float64, device=device)
        t = mg.tensor(vals[3:], dtype=mg.float64, device=device)
        d = mfw.make_dual(x, t)
        c = d * 1
        c.addcmul_(c, d.flip(0), value=-1.5)
        got = mfw.unpack_dual(c).tangent
    expected = t + (t * x.flip(0) + x * t.flip(0)) * -1.5
    assert mg.allclose(got, expected, rtol=1e-12, atol=1e-12)


# Random writes: torch gives the written region a zero tangent (primals differ: other draws).
RANDOM_WRITES = {
    "uniform_": lambda v: v.uniform_(),
    "normal_": lambda v: v.normal_(),
    "exponential_": lambda v: v.exponential_(),
    "bernoulli_": lambda v: v.bernoulli_(0.3),
    "bernoulli_tensor": lambda v: v.bernoulli_(v.detach() * 0.5),
    "random_": lambda v: v.random_(0, 5),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(RANDOM_WRITES))
def test_random_writes_zero_the_written_tangent_as_torch(name, device):
    tangents = []
    for lib, fw, dev in ((torch, tfw, {}), (mg, mfw, {"device": device})):
        with fw.dual_level():
            p = lib.arange(12, dtype=lib.float64, **dev).reshape(3, 4) / 20 + 0.1
            t = lib.arange(12, dtype=lib.float64, **dev).reshape(3, 4) - 5
            d = fw.make_dual(p, t)
            RANDOM_WRITES[name](d[1])
            tangents.append(values(lib, fw.unpack_dual(d).tangent))
            # A dual p into a plain tensor gives it no tangent (torch's self_t.zero_()).
            plain = lib.zeros(3, 4, dtype=lib.float64, **dev)
            q = lib.full((3, 4), 0.5, dtype=lib.float64, **dev)
            plain.bernoulli_(fw.make_dual(q, t))
            assert fw.unpack_dual(plain).tangent is None
    assert tangents[0] == tangents[1]


class _ScaleSin:
    """x * k + sin(other) with a hand-written jvp, for mutagrad's and torch's Function."""

    @staticmethod
    def forward(ctx, x, k, other):
        ctx.k = k
        ctx.save_for_backward(other)
        ctx.other = other
        return x * k + other.sin()

    @staticmethod
    def backward(ctx, grad):
        (other,) = ctx.saved_tensors
        return grad * ctx.k, None, grad * other.cos()

    @staticmethod
    def jvp(ctx, tx, tk, tother):
        assert tk is None
        return tx * ctx.k + tother * ctx.other.cos()


def test_custom_function_jvp_matches_torch():
    rng = random.Random(3)
    data = [[rng.uniform(-1, 1) for _ in range(4)] for _ in range(3)]
    results = []
    for lib, fw, base in ((torch, tfw, torch.autograd.Function),
                          (mg, mfw, mg.autograd.Function)):
        fn = type("ScaleSin", (base,), dict(vars(_ScaleSin)))
        with fw.dual_level():
            x = fw.make_dual(lib.tensor(data, dtype=lib.float64),
                             lib.tensor(data, dtype=lib.float64).cos())
            other = fw.make_dual(lib.tensor(data, dtype=lib.float64).t().reshape(3, 4),
                                 lib.ones(3, 4, dtype=lib.float64))
            out = fn.apply(x, 1.5, other).tanh()
            results.append(fw.unpack_dual(out).tangent.tolist())
    assert torch.allclose(torch.tensor(results[0]), torch.tensor(results[1]), rtol=1e-12)


def test_custom_function_without_jvp_names_itself():
    class Twice(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    with mfw.dual_level():
        d = mfw.make_dual(mg.ones(2, dtype=mg.float64), mg.ones(2, dtype=mg.float64))
        with pytest.raises(RuntimeError, match="TwiceBackward.*forward-mode AD is not"):
            Twice.apply(d)


def both(program):
    """Runs program(lib, fw, dev) under torch (CPU) and mutagrad (each device) and compares
    what it returns: a list of tensors or None (tangents), as nested lists."""
    expected = [values(torch, t) for t in program(torch, tfw, {})]
    for device in DEVICES:
        got = [values(mg, t) for t in program(mg, mfw, {"device": device})]
        assert got == expected, device


def test_views_of_an_unpacked_primal_have_no_tangent_and_writes_into_them_stay_there():
    # Note [Primal views break the chain]: the primal of unpack_dual is the forward base of its
    # views; its root base's tangent is neither read nor written through them.
    def program(lib, fw, dev):
        with fw.dual_level():
            x = fw.make_dual(lib.ones(3, dtype=lib.float64, **dev), lib.ones(3, dtype=lib.float64, **dev))
            z = x * 2
            p = fw.unpack_dual(z).primal
            v = p[0:2]
            read = [fw.unpack_dual(v).tangent, fw.unpack_dual(v * 1).tangent]
            w = lib.zeros(3, dtype=lib.float64, **dev)
            p[:2].copy_(fw.make_dual(w, 5 * lib.ones(3, dtype=lib.float64, **dev))[:2])
            return read + [fw.unpack_dual(x).tangent, fw.unpack_dual(z).tangent,
                           fw.unpack_dual(p).tangent, fw.unpack_dual(p[1:]).tangent]

    both(program)


def test_a_write_of_a_dual_into_the_primal_itself_gives_it_its_own_tangent():
    def program(lib, fw, dev):
        with fw.dual_level():
            x = fw.make_dual(lib.ones(3, dtype=lib.float64, **dev), lib.ones(3, dtype=lib.float64, **dev))
            p = fw.unpack_dual(x).primal
            p.mul_(fw.make_dual(lib.full((3,), 2.0, dtype=lib.float64, **dev),
                                lib.full((3,), 3.0, dtype=lib.float64, **dev)))
            return [fw.unpack_dual(p).tangent, fw.unpack_dual(x).tangent, fw.unpack_dual(x).primal]

    both(program)


def test_integer_tensors_never_get_a_tangent():
    def program(lib, fw, dev):
        with fw.dual_level():
            d = fw.make_dual(lib.tensor([1.7, 2.5, -3.2], dtype=lib.float64, **dev),
                             lib.ones(3, dtype=lib.float64, **dev))
            a = lib.zeros(3, dtype=lib.int64, **dev)
            a.copy_(d)
            s = lib.sort(a).values
            b = a.to(lib.float64) * 1
            return [a, fw.unpack_dual(a).tangent, s, fw.unpack_dual(s).tangent,
                    fw.unpack_dual(b).tangent]

    both(program)


def test_detach_in_place_drops_the_tangent():
    def program(lib, fw, dev):
        with fw.dual_level():
            d = fw.make_dual(lib.ones(3, dtype=lib.float64, **dev), lib.ones(3, dtype=lib.float64, **dev))
            x2 = d.clone()
            x2.detach_()
            return [fw.unpack_dual(x2).tangent, fw.unpack_dual(x2 * 3).tangent,
                    fw.unpack_dual(d).tangent]

    both(program)


@pytest.mark.parametrize("device", DEVICES)
def test_max_pool_tangent_of_an_empty_batch(device):
    # torch 1.13: an empty batch pools to an empty result whose tangent is empty too.
    with mfw.dual_level():
        x = mg.zeros(0, 3, 4, 4, dtype=mg.float64, device=device)
        d = mfw.make_dual(x, mg.ones(0, 3, 4, 4, dtype=mg.float64, device=device))
        y = mg.nn.functional.max_pool2d(d, 2)
        tangent = mfw.unpack_dual(y).tangent
    with tfw.dual_level():
        tx = tfw.make_dual(torch.zeros(0, 3, 4, 4, dtype=torch.float64),
                           torch.ones(0, 3, 4, 4, dtype=torch.float64))
        expected = tfw.unpack_dual(torch.nn.functional.max_pool2d(tx, 2)).tangent
    assert tangent is not None and list(tangent.shape) == list(expected.shape) == [0, 3, 2, 2]
