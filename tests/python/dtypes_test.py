"""The ten dtypes against torch 1.13 (the oracle): uint8, int8, int16, float16 and bfloat16
beside bool, int32, int64, float32 and float64. Promotion tables, conversions, scalar range
checks, reductions, sorting, indexing writes, factories, printing, autograd and the dtype
utilities, on the CPU and on the host-run CUDA device.

Where torch 1.13's CPU has no float16/bfloat16 kernel, mutagrad computes in float32 and rounds
once (Note [Reduced dtypes] in tensor/dtype.h); those cases compare with torch run in float32
and rounded (math_ops_test.float32_oracle), which is also what torch's own half kernels do.
"""

import random

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import capture, from_torch, numpy_of

ALL = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64")
REDUCED = ("uint8", "int8", "int16", "float16", "bfloat16")
DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global DEVICE
    DEVICE = request.param
    yield request.param
    DEVICE = "cpu"


def name(d):
    return str(d).rsplit(".", 1)[-1]


def lib_tensor(lib, t):
    out = from_torch(lib, t)
    return out.to(DEVICE) if lib is mg else out


def values_of(x):
    """(dtype name, shape, values as float64 with nan) of a tensor, or x itself."""
    if isinstance(x, (torch.Tensor, mg.Tensor)):
        return name(x.dtype), tuple(x.shape), numpy_of(x.cpu()).astype(np.float64)
    if isinstance(x, (tuple, list)):
        return type(x).__name__, [values_of(v) for v in x]
    return x


def assert_same(m, t, what, rtol=0.0):
    vm, vt = values_of(m), values_of(t)
    if isinstance(vt, tuple) and len(vt) == 3 and isinstance(vt[2], np.ndarray):
        assert vm[:2] == vt[:2], f"{what}: {vm[:2]} vs {vt[:2]}"
        if rtol:
            assert np.allclose(vm[2], vt[2], rtol=rtol, atol=rtol, equal_nan=True), \
                f"{what}:\n mg {m}\n torch {t}"
        else:
            assert np.array_equal(vm[2], vt[2], equal_nan=True), f"{what}:\n mg {m}\n torch {t}"
    elif isinstance(vt, tuple) and len(vt) == 2 and isinstance(vt[1], list):
        assert len(vm[1]) == len(vt[1]), what
        for k, (a, b) in enumerate(zip(m, t)):
            assert_same(a, b, f"{what}[{k}]", rtol)
    else:
        assert vm == vt, f"{what}: {vm} vs {vt}"


def run(fn, *tensors, what="", rtol=0.0):
    """fn(lib, *tensors) with torch and with mutagrad: same values or the same exception kind.
    A torch 'not implemented for Half/BFloat16' falls back to torch in float32, rounded."""
    ot = capture(lambda: fn(torch, *[t.clone() for t in tensors]))
    om = capture(lambda: fn(mg, *[lib_tensor(mg, t) for t in tensors]))
    if ot.kind != "ok" and ("'Half'" in ot.message or "'BFloat16'" in ot.message):
        reduced = [t.dtype for t in tensors if t.dtype in (torch.float16, torch.bfloat16)]
        ot = capture(lambda: fn(torch, *[t.float() if t.dtype in (torch.float16,
                                                                  torch.bfloat16) else t
                                          for t in tensors]))
        def rounded(v):
            if isinstance(v, torch.Tensor) and v.dtype == torch.float32:
                return v.to(reduced[0])
            if isinstance(v, tuple):
                return type(v)([rounded(e) for e in v])
            return v
        if ot.kind == "ok":
            ot = capture(lambda: rounded(ot.value))
    if ot.kind != "ok":
        assert om.kind in (ot.kind, "ValueError", "DTypeError", "IndexError", "ShapeError"), \
            f"{what}: torch {ot} mutagrad {om}"
        assert om.kind != "ok", f"{what}: torch {ot} but mutagrad ok"
        return
    assert om.kind == "ok", f"{what}: torch ok, mutagrad {om}"
    assert_same(om.value, ot.value, what, rtol)


def random_tensor(rng, dtype, shape):
    gen = torch.Generator().manual_seed(rng.randrange(1 << 30))
    if dtype == "bool":
        return torch.rand(shape, generator=gen) < 0.5
    if dtype == "uint8":
        return torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8)
    if dtype.startswith("int"):
        return torch.randint(-20, 20, shape, generator=gen, dtype=getattr(torch, dtype))
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * 8).to(getattr(torch, dtype))


# ---- promotion and dtype utilities -----------------------------------------------------------

def test_promote_types_table_matches_torch():
    for a in ALL:
        for b in ALL:
            assert name(mg.promote_types(getattr(mg, a), getattr(mg, b))) == \
                name(torch.promote_types(getattr(torch, a), getattr(torch, b))), (a, b)


def test_result_type_with_scalars_and_0_dim_and_can_cast_match_torch():
    for a in ALL:
        for other in (1, 2.5, True):
            t = torch.ones(2, dtype=getattr(torch, a))
            assert name(mg.result_type(mg.ones(2, dtype=getattr(mg, a)), other)) == \
                name(torch.result_type(t, other)), (a, other)
        for b in ALL:
            t0 = torch.ones((), dtype=getattr(torch, b))
            m0 = mg.ones((), dtype=getattr(mg, b))
            assert name(mg.result_type(mg.ones(2, dtype=getattr(mg, a)), m0)) == \
                name(torch.result_type(torch.ones(2, dtype=getattr(torch, a)), t0)), (a, b)
            assert mg.can_cast(getattr(mg, a), getattr(mg, b)) == \
                torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)


@pytest.mark.parametrize("dtype", ALL)
def test_dtype_utilities_match_torch(dtype):
    t, m = torch.ones(2, dtype=getattr(torch, dtype)), mg.ones(2, dtype=getattr(mg, dtype))
    assert m.type().replace("mutagrad", "torch") == t.type()
    assert m.is_floating_point() == t.is_floating_point()
    assert m.element_size() == t.element_size()
    assert type(m[0].item()) is type(t[0].item())
    if t.is_floating_point():
        fm, ft = mg.finfo(getattr(mg, dtype)), torch.finfo(getattr(torch, dtype))
        for attr in ("bits", "eps", "max", "min", "tiny", "resolution"):
            assert getattr(fm, attr) == getattr(ft, attr), attr
    elif dtype != "bool":
        im, it = mg.iinfo(getattr(mg, dtype)), torch.iinfo(getattr(torch, dtype))
        assert (im.bits, im.max, im.min) == (it.bits, it.max, it.min)


def test_conversion_methods_and_type_strings_match_torch():
    x = torch.tensor([1.5, -2.25, 3.1, 70000.0, -1e-8])
    for method in ("half", "bfloat16", "byte", "char", "short", "int", "long", "float", "double",
                   "bool"):
        run(lambda lib, a: getattr(a, method)(), x, what=method)
    for legacy in ("HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor"):
        run(lambda lib, a: a.type(f"torch.{legacy}"), x, what=legacy)


# ---- conversions and stored scalars ----------------------------------------------------------

VALUES = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 127.0, -128.0, 200.7, 255.0, -300.2, 65504.0,
          65519.0, 70000.0, 1e-8, 3.0e38, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("src", ALL)
def test_every_conversion_matches_torch(src):
    x = torch.tensor(VALUES, dtype=torch.float64).to(getattr(torch, src))
    for dst in ALL:
        if src.startswith(("float", "bfloat")) and not dst.startswith(("float", "bfloat")) \
                and dst != "bool":
            # Out-of-range floats to integers are unspecified in torch: in-range values only.
            info = torch.iinfo(getattr(torch, dst))
            finite = x.double().isfinite() & (x.double().abs() < min(info.max, 2 ** 31 - 1))
            x_in = x[finite]
        else:
            x_in = x
        run(lambda lib, a: a.to(getattr(lib, dst)), x_in, what=f"{src} -> {dst}")


@pytest.mark.parametrize("dtype", REDUCED)
def test_stored_scalars_are_range_checked_as_torch(dtype):
    for v in (-256, -255, -1, 127, 128, -129, 255, 256, 32767, 32768, 65504, 65519.0, 70000,
              3.39e38, float("inf"), float("nan"), 2.5):
        def fill(lib, a):
            try:
                a.fill_(v)
            except RuntimeError:
                return "refused", a, a._version
            return "ok", a, a._version
        run(fill, torch.zeros(3, dtype=getattr(torch, dtype)), what=f"fill_ {dtype} {v}")
        run(lambda lib, a: lib.full((2,), v, dtype=getattr(lib, dtype)) if True else a,
            torch.zeros(1), what=f"full {dtype} {v}")


# ---- arithmetic, reductions, sorting ----------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_mixed_dtype_arithmetic_matches_torch(seed):
    rng = random.Random(seed)
    for a in ALL:
        b = rng.choice(ALL)
        shape = [rng.randint(1, 4), rng.randint(1, 3)]
        x, y = random_tensor(rng, a, shape), random_tensor(rng, b, shape[1:])
        y0 = random_tensor(rng, rng.choice(ALL), [])
        for op in ("add", "mul", "maximum", "eq", "lt", "div"):
            run(lambda lib, p, q: getattr(lib, op)(p, q), x, y, what=f"{op} {a} {b}")
            run(lambda lib, p, q: getattr(lib, op)(p, q), x, y0, what=f"{op} {a} 0-dim")
        if a != "bool":
            for s in (3, -2, 2.5):
                run(lambda lib, p: p * s, x, what=f"{a} * {s}")
                run(lambda lib, p: p - s, x, what=f"{a} - {s}")
            if a == "uint8":
                # torch wraps a number the dtype cannot hold (uint8 * 300 multiplies by 44);
                # mutagrad refuses it, as for int32 + 2**40 (docs/python.md).
                with pytest.raises(RuntimeError, match="cannot be converted to type uint8"):
                    lib_tensor(mg, x) * 300
            run(lambda lib, p: p.add_(1), x, what=f"{a}.add_(1)")
            run(lambda lib, p, q: p.mul_(q), x, x, what=f"{a}.mul_(self)")


@pytest.mark.parametrize("dtype", ALL)
def test_reductions_and_scans_match_torch(dtype):
    rng = random.Random(7)
    x = random_tensor(rng, dtype, [4, 5])
    half = dtype in ("float16", "bfloat16")
    # Summation orders differ: float32/float64 within a few ulps.
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-6, "float64": 1e-13}.get(dtype, 0.0)
    for op in ("sum", "prod", "amax", "amin", "argmax", "argmin", "any", "all",
               "count_nonzero"):
        run(lambda lib, a: getattr(a, op)(), x, what=f"{op} {dtype}", rtol=tol)
        run(lambda lib, a: getattr(lib, op)(a, 1), x, what=f"{op} dim {dtype}", rtol=tol)
    for op in ("cumsum", "cumprod"):
        run(lambda lib, a: getattr(a, op)(1), x[:, :3], what=f"{op} {dtype}", rtol=tol)
    if half or dtype.startswith("float"):
        for op in ("mean", "std", "var", "norm", "logsumexp"):
            args = (1,) if op == "logsumexp" else ()
            run(lambda lib, a: getattr(a, op)(*args), x, what=f"{op} {dtype}", rtol=tol)
    run(lambda lib, a: a.max(1), x, what=f"max dim {dtype}")
    run(lambda lib, a: a.sort(dim=1, descending=True, stable=True), x, what=f"sort {dtype}")
    if dtype != "bool":  # torch 1.13 has no bool topk; mutagrad's is sort's order
        run(lambda lib, a: a.topk(2), x.flatten(), what=f"topk {dtype}")
    run(lambda lib, a: lib.unique(a, return_counts=True), x, what=f"unique {dtype}")
    run(lambda lib, a: a.nonzero(), x, what=f"nonzero {dtype}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matmul_in_16_bit_floats_accumulates_in_float32(dtype):
    rng = random.Random(3)
    a, b = random_tensor(rng, dtype, [3, 5]), random_tensor(rng, dtype, [5, 2])
    # torch 1.13's CPU has no float16 addmm: the oracle is float32, rounded once.
    want = (a.float() @ b.float()).to(getattr(torch, dtype))
    got = lib_tensor(mg, a) @ lib_tensor(mg, b)
    assert_same(got, want, f"matmul {dtype}", rtol={"float16": 2e-3, "bfloat16": 1.6e-2}[dtype])


# ---- indexing writes and reads ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", REDUCED)
def test_indexing_reads_and_writes_match_torch(dtype):
    rng = random.Random(11)
    x = random_tensor(rng, dtype, [5, 4])
    idx = torch.tensor([0, 3, 3, 1])
    src = random_tensor(rng, dtype, [4, 4])

    def setitem(lib, a, i, v):
        a[i] = v
        a[1:3, ::2] = 7
        a[a > 2] = 1
        return a, a._version
    run(setitem, x, idx, src, what=f"setitem {dtype}")
    run(lambda lib, a, i, v: a.index_put_((i,), v, accumulate=True), x, idx, src,
        what=f"index_put_ accumulate {dtype}")
    run(lambda lib, a, i: a[i, 1:], x, idx, what=f"getitem {dtype}")
    run(lambda lib, a, i, v: a.index_add_(0, i, v), x, idx, src, what=f"index_add_ {dtype}")
    gi = torch.randint(0, 4, (5, 4), generator=torch.Generator().manual_seed(1))
    run(lambda lib, a, i: a.gather(1, i), x, gi, what=f"gather {dtype}")
    run(lambda lib, a, i, v: a.scatter_add_(1, i, v), x, gi, x, what=f"scatter_add_ {dtype}")
    for reduce in ("amax", "amin", "prod"):
        run(lambda lib, a, i, v: a.scatter_reduce_(1, i, v, reduce), x, gi, x,
            what=f"scatter_reduce_ {reduce} {dtype}")
    run(lambda lib, a: a.masked_fill_(a > 0, 5), x, what=f"masked_fill_ {dtype}")
    run(lambda lib, a, v: lib.where(a > 0, a, v), x, x.flip(0), what=f"where {dtype}")
    run(lambda lib, a: lib.cat([a, a[:1]]), x, what=f"cat {dtype}")


# ---- factories, printing, autograd -----------------------------------------------------------

@pytest.mark.parametrize("dtype", REDUCED)
def test_factories_and_printing_match_torch(dtype):
    def make(lib, _):
        d = getattr(lib, dtype)
        return (lib.zeros(2, 3, dtype=d), lib.ones(4, dtype=d), lib.full((2,), 3, dtype=d),
                lib.arange(0, 10, 3, dtype=d),
                # torch 1.13 has no bfloat16 eye kernel: its oracle is float32's, converted.
                lib.eye(3).to(d) if lib is torch else lib.eye(3, dtype=d),
                lib.tensor([[1, 2], [3, 4]], dtype=d))
    run(make, torch.zeros(1), what=f"factories {dtype}")
    if dtype in ("float16", "bfloat16"):
        run(lambda lib, _: lib.linspace(-1, 1, 7, dtype=getattr(lib, dtype)), torch.zeros(1),
            what=f"linspace {dtype}", rtol=2e-3 if dtype == "float16" else 1.6e-2)
        r = mg.rand(1000, dtype=getattr(mg, dtype))
        assert name(r.dtype) == dtype and 0 <= r.min().item() and r.max().item() <= 1
    for values in ([1.5, -2.25, 3.0], [0.1, 123.456, -1e-3], [1, 2, 300, 65000]):
        t = torch.tensor(values).to(getattr(torch, dtype))
        # Whitespace aside: "dtype=mutagrad.float16" is longer and may wrap where torch's does not.
        got = " ".join(repr(lib_tensor(mg, t).cpu()).replace("mutagrad", "torch").split())
        assert got == " ".join(repr(t).split()), values


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gradients_in_16_bit_floats_match_torch(dtype):
    rng = random.Random(5)
    x = random_tensor(rng, dtype, [3, 4])

    def grads(lib, a):
        a.requires_grad_()
        y = (a * a + a.exp() * 0.5).sum()
        y.backward()
        return a.grad, y.detach()
    ot, om = capture(lambda: grads(torch, x.clone())), capture(lambda: grads(mg, lib_tensor(mg, x)))
    if ot.kind != "ok":  # torch 1.13's CPU lacks a float16 kernel: float32, rounded
        ot = capture(lambda: tuple(v.to(getattr(torch, dtype)) for v in grads(torch, x.float())))
    assert ot.kind == om.kind == "ok", (ot, om)
    tol = 2e-3 if dtype == "float16" else 1.6e-2
    assert_same(om.value, ot.value, f"grads {dtype}", rtol=tol * 4)


@pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8 is now deprecated")
def test_uint8_index_tensors_are_masks_as_torch():
    x = torch.arange(8).reshape(2, 4)

    def scenario(lib, a):
        m = lib.tensor([1, 0, 1, 0], dtype=lib.uint8).to(a.device)
        got = (a[:, m], a[lib.tensor(1, dtype=lib.uint8)])
        a[:, m] = 9
        a.index_put_((lib.tensor([0, 1], dtype=lib.uint8),), lib.tensor(5))
        return got, a, a._version
    run(scenario, x, what="uint8 masks")
    run(lambda lib, a: a[lib.tensor([1], dtype=lib.int8)], x, what="int8 index")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_default_dtype_as_torch(dtype):
    def scenario(lib, _):
        lib.set_default_dtype(getattr(lib, dtype))
        try:
            return (lib.tensor([1.5]), lib.ones(2), lib.arange(3) / 2, lib.zeros(1) + 0.1,
                    name(lib.get_default_dtype()))
        finally:
            lib.set_default_dtype(lib.float32)
    run(scenario, torch.zeros(1), what=f"default {dtype}")
