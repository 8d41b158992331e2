"""The rounding, division, bit and float-classification ops against torch 1.13: seeded random
tensors of every dtype with special values (nan, +-inf, -0.0, halves), scalar operands on either
side, the operators (% // << >> & | ^ ~ and their in-place forms), values and dtypes, gradients
and node names of the differentiable ones, and the exception kind of refused calls (with our
tensor unchanged). Runs mutagrad on the CPU and on the (host-run) CUDA device.
"""

import math
import random

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import capture, from_torch, numpy_of

MG_DEVICE = "cpu"
SEEDS = range(3)
DTYPES = ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64",
          "bool")
# One unit in the last place of the 16-bit floats: their transcendental results are float32's
# rounded once, and torch's vectorized float32 kernels may differ from ours by a float32 ulp.
HALF_TOL = {"float16": 2 ** -10, "bfloat16": 2 ** -7}
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 3.7, -3.7, 7.0, float("inf"), float("-inf"),
           float("nan")]


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def to_lib(lib, t):
    out = from_torch(lib, t)
    return out.to(MG_DEVICE) if lib is mg else out


def random_tensor(rng, gen, dtype, shape, lo=-6, hi=6):
    if dtype == "bool":
        return torch.rand(shape, generator=gen) < 0.5
    if dtype == "uint8":
        return torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8)
    if dtype.startswith("int"):
        return torch.randint(lo, hi, shape, generator=gen, dtype=getattr(torch, dtype))
    t = (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo)
    t = t.to(getattr(torch, dtype))
    flat = t.view(-1)
    for k in range(flat.numel()):
        if rng.random() < 0.3:
            flat[k] = rng.choice(SPECIAL)
    return t


def same(m, t, tol=0.0):
    """Values (NaN equal, the sign of zero compared when exact) and dtype."""
    a, b = numpy_of(m), numpy_of(t)
    if str(m.dtype).split(".")[-1] != str(t.dtype).split(".")[-1] or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    if tol == 0.0:
        # The sign of zero counts; the sign of a nan does not (torch's bfloat16 kernels
        # return a nan of either sign).
        real = ~np.isnan(a)
        return np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a[real]),
                                                                        np.signbit(b[real]))
    return np.allclose(a, b, rtol=tol, atol=0.0, equal_nan=True)


def outcome_both(fn, *tensors):
    """fn(lib, *lib_tensors) for torch and mutagrad, with their outcomes."""
    results = {}
    for lib in (torch, mg):
        args = [to_lib(lib, t) for t in tensors]
        results[lib.__name__] = capture(lambda: fn(lib, *args))
    return results["torch"], results["mutagrad"]


def float32_oracle(fn, tensors):
    """Where torch 1.13's CPU has no float16/bfloat16 kernel ("not implemented for 'Half'"),
    mutagrad computes in float32 and rounds once (Note [Reduced dtypes], docs/python.md): the
    oracle is torch on the inputs widened to float32, its floating results rounded back."""
    reduced = [t.dtype for t in tensors if t.dtype in (torch.float16, torch.bfloat16)]
    widened = [t.float() if t.dtype in (torch.float16, torch.bfloat16) else t for t in tensors]
    out = capture(lambda: fn(torch, *widened))
    if out.kind == "ok" and out.value.dtype == torch.float32:
        target = reduced[0] if len(set(reduced)) == 1 else torch.float32
        out = capture(lambda: out.value.to(target))
    return out


def check(fn, *tensors, tol=0.0, what=""):
    t, m = outcome_both(fn, *tensors)
    if t.kind != "ok" and ("for 'Half'" in t.message or "for 'BFloat16'" in t.message):
        t = float32_oracle(fn, tensors)
    if t.kind != "ok":
        assert m.kind == t.kind, f"{what}: torch {t} mutagrad {m}"
        return
    assert m.kind == "ok", f"{what}: torch ok, mutagrad {m}"
    tol_for = tol if t.value.dtype in (torch.float32, torch.float64) else 0.0
    half = str(t.value.dtype).split(".")[-1]
    if tol and half in HALF_TOL:
        tol_for = HALF_TOL[half]
    if t.value.dtype == torch.float32 and tol:
        tol_for = max(tol, 1e-6)
    if not same(m.value, t.value, tol_for) and any(
            x.dtype in (torch.float16, torch.bfloat16) for x in tensors):
        # torch 1.13's CPU rounds every step of a composite formula (round(decimals=),
        # remainder, ...) to float16/bfloat16; mutagrad rounds once from float32 (docs/python.md).
        t = float32_oracle(fn, tensors)
        assert t.kind == "ok", f"{what}: float32 oracle {t}"
    assert same(m.value, t.value, tol_for), f"{what}:\n torch {t.value}\n mg {m.value}"


TRANSCENDENTAL = ("rsqrt", "exp2", "expm1", "log1p", "log2", "log10")
UNARY = TRANSCENDENTAL + ("sign", "floor", "ceil", "trunc", "frac", "isnan", "isinf", "isfinite",
                          "nan_to_num", "bitwise_not", "fix")


@pytest.mark.parametrize("seed", SEEDS)
def test_unary_ops_match_torch(seed):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    for dtype in DTYPES:
        for _ in range(4):
            shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 2))]
            x = random_tensor(rng, gen, dtype, shape)
            for name in UNARY:
                tol = 1e-14 if name in TRANSCENDENTAL else 0.0
                check(lambda lib, a: getattr(lib, name)(a), x, tol=tol, what=f"{name} {dtype}")
                check(lambda lib, a: getattr(a, name)(), x, tol=tol, what=f"x.{name} {dtype}")
            for decimals in (0, 1, 2, -1):
                if (dtype.startswith("int") or dtype == "uint8") and decimals == 0:
                    # torch 1.13 passes integers through on some shapes and raises
                    # "round_vml_cpu" not implemented on others; we always pass them through.
                    assert numpy_of(mg.round(to_lib(mg, x))).tolist() == x.tolist()
                    continue
                check(lambda lib, a: lib.round(a, decimals=decimals), x,
                      what=f"round {decimals} {dtype}")
            check(lambda lib, a: a.nan_to_num(nan=1.5, posinf=2.0, neginf=-9.0), x,
                  what=f"nan_to_num args {dtype}")
            check(lambda lib, a: ~a, x, what=f"~ {dtype}")


DIVISION = ("remainder", "fmod", "floor_divide")


@pytest.mark.parametrize("seed", SEEDS)
def test_division_ops_match_torch(seed):
    rng = random.Random(10 + seed)
    gen = torch.Generator().manual_seed(10 + seed)
    for da in DTYPES:
        for db in DTYPES:
            shape = [rng.randint(1, 4)]
            a = random_tensor(rng, gen, da, shape)
            b = random_tensor(rng, gen, db, shape)
            if not (da.startswith("float") or db.startswith("float")) and db != "bool":
                b = torch.where(b == 0, torch.ones_like(b) * 3, b)  # integer zero: tested below
            what = f"{da} {db} {a.tolist()} {b.tolist()}"
            for name in DIVISION:
                check(lambda lib, x, y: getattr(lib, name)(x, y), a, b, what=f"{name} {what}")
            check(lambda lib, x, y: x % y, a, b, what="% " + what)
            check(lambda lib, x, y: x // y, a, b, what="// " + what)
            for mode in ("trunc", "floor"):
                check(lambda lib, x, y: lib.div(x, y, rounding_mode=mode), a, b,
                      what=f"div {mode} {what}")
                check(lambda lib, x, y: x.div(y, rounding_mode=mode), a, b,
                      what=f"x.div {mode} {what}")
            # Python numbers on either side.
            for s in (3, -2, 2.5, -0.75):
                check(lambda lib, x: x % s, a, what=f"x % {s} {what}")
                check(lambda lib, x: x // s, a, what=f"x // {s} {what}")
                check(lambda lib, x: lib.fmod(x, s), a, what=f"fmod(x, {s}) {what}")
                if not (b == 0).any():
                    check(lambda lib, y: s % y, b, what=f"{s} % y {what}")
                    check(lambda lib, y: s // y, b, what=f"{s} // y {what}")


@pytest.mark.parametrize("seed", SEEDS)
def test_bit_ops_match_torch(seed):
    rng = random.Random(20 + seed)
    gen = torch.Generator().manual_seed(20 + seed)
    for da in ("uint8", "int8", "int16", "int32", "int64", "bool"):
        for db in ("uint8", "int16", "int32", "int64", "bool", "float32"):
            shape = [rng.randint(1, 5)]
            a = random_tensor(rng, gen, da, shape, -100, 100)
            b = random_tensor(rng, gen, db, shape, -100, 100)
            what = f"{da} {db}"
            for op in ("__and__", "__or__", "__xor__"):
                check(lambda lib, x, y: getattr(x, op)(y), a, b, what=f"{op} {what}")
            for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor"):
                check(lambda lib, x, y: getattr(lib, name)(x, y), a, b, what=f"{name} {what}")
            counts = torch.randint(0, 8, shape, generator=gen).to(b.dtype) if db != "bool" else b
            check(lambda lib, x, y: x << y, a, counts, what=f"<< {what}")
            check(lambda lib, x, y: x >> y, a, counts, what=f">> {what}")
            for s in (3, True, 5):
                check(lambda lib, x: x & s, a, what=f"& {s} {what}")
                check(lambda lib, x: s | x, a, what=f"{s} | {what}")
                check(lambda lib, x: x << 2, a, what=f"<< 2 {what}")


def test_in_place_operators_write_through_and_bump():
    for lib in (torch, mg):
        x = lib.tensor([7, -7, 12, 5])
        if lib is mg:
            x = x.to(MG_DEVICE)
        view = x[1:]
        x %= 5
        x //= 2
        x <<= 1
        x >>= 1
        x &= 6
        x |= 1
        x ^= 3
        view.bitwise_not_()
        if lib is torch:
            want = x.tolist()
        else:
            assert numpy_of(x).tolist() == want
            assert x._version == 8
    y = mg.tensor([2.5, -3.5]).to(MG_DEVICE)
    y.div_(2, rounding_mode="floor")
    y.remainder_(0.75)
    y.round_(decimals=1)
    assert numpy_of(y).tolist() == torch.tensor([2.5, -3.5]).div_(2, rounding_mode="floor") \
        .remainder_(0.75).round_(decimals=1).tolist()


def test_gradients_and_node_names_match_torch():
    gen = torch.Generator().manual_seed(5)
    x = torch.rand(6, generator=gen, dtype=torch.float64) * 0.8 + 1.1
    y = torch.rand(6, generator=gen, dtype=torch.float64) * 0.8 + 0.6
    fns = {
        "rsqrt": lambda lib, a, b: a.rsqrt(),
        "exp2": lambda lib, a, b: a.exp2(),
        "expm1": lambda lib, a, b: a.expm1(),
        "log1p": lambda lib, a, b: a.log1p(),
        "log2": lambda lib, a, b: a.log2(),
        "log10": lambda lib, a, b: lib.log10(a),
        "frac": lambda lib, a, b: a.frac(),
        "floor": lambda lib, a, b: a.floor(),
        "round": lambda lib, a, b: a.round(decimals=1),
        "sign": lambda lib, a, b: a.sign(),
        "nan_to_num": lambda lib, a, b: a.nan_to_num(),
        "remainder": lambda lib, a, b: lib.remainder(a, b),
        "remainder scalar": lambda lib, a, b: a % 0.7,
        "fmod": lambda lib, a, b: lib.fmod(a, b),
        "div floor": lambda lib, a, b: a.div(b, rounding_mode="floor"),
        "div trunc": lambda lib, a, b: lib.div(a, b, rounding_mode="trunc"),
    }
    for name, fn in fns.items():
        grads = {}
        for lib in (torch, mg):
            a = to_lib(lib, x).requires_grad_()
            b = to_lib(lib, y).requires_grad_()
            out = fn(lib, a, b)
            node = type(out.grad_fn).__name__ if lib is torch else out.grad_fn.name()
            w = to_lib(lib, torch.arange(1.0, 7.0, dtype=torch.float64))
            (out * w).sum().backward()
            grads[lib.__name__] = (node, numpy_of(out), numpy_of(a.grad),
                                   None if b.grad is None else numpy_of(b.grad))
        (tn, tv, ta, tb), (mn, mv, ma, mb) = grads["torch"], grads["mutagrad"]
        assert tn == mn, name
        assert np.allclose(mv, tv, rtol=1e-13, atol=0), name
        assert np.allclose(ma, ta, rtol=1e-13, atol=0), name
        if tb is not None:
            assert mb is not None and np.allclose(mb, tb, rtol=1e-13, atol=0), name


@pytest.mark.parametrize("bad", [
    lambda lib, x: x.floor_divide_(lib.tensor([1, 0, 1])),
    lambda lib, x: x.remainder_(0),
    lambda lib, x: x.fmod_(lib.tensor([0, 1, 1])),
    lambda lib, x: x.div_(lib.tensor([0, 1, 1]), rounding_mode="trunc"),
    lambda lib, x: x.div_(2, rounding_mode="round"),
    lambda lib, x: x.bitwise_and_(lib.tensor([1.5, 1.0, 1.0])),
    lambda lib, x: x.__ilshift__(lib.tensor([1.0, 1.0, 1.0])),
    lambda lib, x: x.frac_(),
    lambda lib, x: x.round_(decimals=1),
    lambda lib, x: x.to(lib.bool).floor(),
])
def test_refused_calls_raise_torchs_kind_and_change_nothing(bad):
    kinds = {}
    for lib in (torch, mg):
        x = lib.tensor([7, -7, 3])
        real_tensor = lib.tensor

        class Lib:
            def __getattr__(self, name):
                f = getattr(lib, name)
                if lib is mg and name == "tensor":
                    return lambda *a, **k: real_tensor(*a, **k).to(MG_DEVICE)
                return f
        if lib is mg:
            x = x.to(MG_DEVICE)
        kinds[lib.__name__] = capture(lambda: bad(Lib(), x)).kind
        if lib is mg:
            assert numpy_of(x).tolist() == [7, -7, 3]
            assert x._version == 0
    assert kinds["torch"] == kinds["mutagrad"] and kinds["torch"] != "ok", kinds


def test_integer_division_by_zero_names_the_error():
    x = mg.tensor([1, 2]).to(MG_DEVICE)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        x // mg.tensor([0, 1]).to(MG_DEVICE)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([1, 2]) // torch.tensor([0, 1])
    assert math.isinf(numpy_of(mg.tensor([1.0]).to(MG_DEVICE) // 0.0)[0])
