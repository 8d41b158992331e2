"""The vectorized unary kernels (exp, log, sigmoid, tanh, sin, cos) at the edges, against torch:
the repros of issue 20 (exp(-inf) was Eigen's clamp value 2.9e-39 in every SIMD lane but the
tail; log flushed subnormal inputs), and every edge value (+-inf, nan, +-0, subnormals, the
overflow and underflow thresholds) at every position of runs of several lengths, float32 and
float64. See Note [Vectorized transcendental edges] in tensor/cpu/pointwise.cc.
"""

import math

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import FLOAT_DTYPES, numpy_of

INF, NAN = math.inf, math.nan
OPS = ("exp", "log", "sigmoid", "tanh", "sin", "cos")
LENGTHS = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33)


def edge_values(dtype):
    info = np.finfo(dtype)
    tiny, dmin = float(info.tiny), float(np.nextafter(dtype(0), dtype(1)))
    values = [INF, NAN, 0.0, dmin, tiny, float(info.max), 0.5, 1.0, 2.0, 3.14159, 10.0, 100.0,
              87.3, 88.7, 88.73, 103.9, 104.0, 708.4, 709.8, 745.2, 746.0, 1e-40, 1e-310,
              7.9, 9.01, 19.07, 65536.0, 117436.0, 1e10, 1e30]
    # exp overflows, leaves the normal range, rounds to 0 at these (sigmoid at their negatives).
    log_max, log_tiny, log_dmin = math.log(float(info.max)), math.log(tiny), math.log(dmin)
    for t in (log_max, log_tiny, log_dmin, log_dmin - math.log(2)):
        t = dtype(t)
        values += [float(t)] + [float(np.nextafter(t, dtype(d))) for d in (INF, -INF)]
    return values + [-v for v in values]


def run_of_values(lib, rows, n, dtype):
    """A [len(rows), n] tensor whose rows are separate contiguous runs (a padded buffer)."""
    pitch = (n + 16) // 16 * 16 + 16
    base = lib.full((len(rows), pitch), 0.5, dtype=getattr(lib, dtype))
    view = base[:, :n]
    view.copy_(lib.tensor(rows, dtype=getattr(lib, dtype)))
    return view


def matches(a, b, dtype):
    """Element-wise: nan where b has nan; infinities and zeros exactly, sign of zero included;
    other values within a few ulps (torch's and Eigen's functions are not correctly rounded), or
    a few denorm_min if subnormal."""
    info = np.finfo(np.dtype(dtype))
    dmin = float(np.nextafter(info.dtype.type(0), info.dtype.type(1)))
    special = np.isinf(b) | (b == 0) | np.isinf(a) | (a == 0)
    with np.errstate(invalid="ignore"):
        exact = (a == b) & (np.signbit(a) == np.signbit(b))
        close = np.abs(a - b) <= np.maximum(8 * float(info.eps) * np.abs(b), 4 * dmin)
    return np.where(np.isnan(b), np.isnan(a), np.where(special, exact, close & ~np.isnan(a)))


def exact_value(op, x):
    """op(x) to 50 digits (mpmath), as a float64."""
    import mpmath  # only where torch and mutagrad differ

    if math.isnan(x):
        return NAN
    mpmath.mp.dps = 50
    x = mpmath.mpf(x)
    if op == "log":
        return NAN if x < 0 else -INF if x == 0 else float(mpmath.log(x))
    if op in ("sin", "cos") and mpmath.isinf(x):
        return NAN
    f = {"exp": mpmath.exp, "tanh": mpmath.tanh, "sin": mpmath.sin, "cos": mpmath.cos,
         "sigmoid": lambda v: 1 / (1 + mpmath.exp(-v))}[op]
    return float(f(x))


def assert_matches(m, t, dtype, what, op=None, x=None):
    """mutagrad's m matches torch's t (see matches). Where they differ and the input x is given,
    the exact value decides: torch 1.13's AVX2 exp in float64 overflows early (exp(709.7827) is
    1.7976931348622732e308, finite; torch says inf, and so sigmoid(-709.7827) is 0 for it)."""
    a, b = numpy_of(m).reshape(tuple(t.shape)), numpy_of(t)
    bad = np.argwhere(~matches(a, b, dtype))
    if op is not None and bad.size:
        xs = numpy_of(x).reshape(tuple(t.shape))
        exact = np.array([exact_value(op, float(xs[tuple(i)])) for i in bad], dtype=dtype)
        ours, theirs = a[tuple(bad.T)], b[tuple(bad.T)]
        bad = bad[~(matches(ours, exact, dtype) & ~matches(theirs, exact, dtype))]
    assert bad.size == 0, f"{what}: {len(bad)} differ, first: " + ", ".join(
        f"at {tuple(i)} mutagrad {a[tuple(i)]!r} torch {b[tuple(i)]!r}" for i in bad[:6])


def apply(op, x):
    return getattr(x, op)()


def check_op(op, dtype, m_in, t_in, what):
    assert_matches(apply(op, m_in), apply(op, t_in), dtype, what, op, t_in)


# ---- the repros ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9])
def test_exp_of_minus_inf_is_zero(dtype, n):
    m = mg.full((n,), float("-inf"), dtype=getattr(mg, dtype)).exp()
    t = torch.full((n,), float("-inf"), dtype=getattr(torch, dtype)).exp()
    assert numpy_of(m).tolist() == [0.0] * n
    assert_matches(m, t, dtype, "exp(-inf)")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_exp_lanes_and_tail_agree(dtype):
    values = [0.0, -INF, -INF, -INF, -INF]
    m = mg.tensor(values, dtype=getattr(mg, dtype)).exp()
    assert numpy_of(m).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert_matches(m, torch.tensor(values, dtype=getattr(torch, dtype)).exp(), dtype, "exp")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_masked_softmax_puts_no_weight_on_masked_positions(dtype):
    def softmax(lib):
        logits = lib.tensor([2.0, 1.0, 0.5, 3.0, 0.0, -1.0, 0.25, 1.5], dtype=getattr(lib, dtype))
        mask = lib.tensor([True, False, False, True, False, False, False, True])
        e = logits.masked_fill(~mask, float("-inf")).exp()
        return e / e.sum()

    m, t = softmax(mg), softmax(torch)
    assert numpy_of(m)[[1, 2, 4, 5, 6]].tolist() == [0.0] * 5
    assert_matches(m, t, dtype, "masked softmax")


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9])
def test_log_of_subnormal_is_not_flushed(n):
    m = mg.full((n,), 1e-40).log()
    t = torch.full((n,), 1e-40).log()
    assert np.allclose(numpy_of(m), -92.1034, atol=1e-3), numpy_of(m)
    assert_matches(m, t, "float32", "log(1e-40)")
    m64 = mg.full((n,), 1e-310, dtype=mg.float64).log()
    assert_matches(m64, torch.full((n,), 1e-310, dtype=torch.float64).log(), "float64",
                   "log(1e-310)")


# ---- every edge value, every position ---------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_edge_values_in_every_position_match_torch(op, dtype):
    edges = edge_values(np.dtype(dtype).type)
    e = len(edges)
    for n in LENGTHS:
        # Row s holds edges[(s + k) % e] at position k: every value at every position.
        rows = [[edges[(s + k) % e] for k in range(n)] for s in range(e)]
        check_op(op, dtype, run_of_values(mg, rows, n, dtype), run_of_values(torch, rows, n, dtype),
                 f"{op} {dtype} runs of {n}")
        # One edge value among ordinary ones, at every position.
        rows = [[v if k == p else 0.5 for k in range(n)] for v in edges for p in range(n)]
        check_op(op, dtype, run_of_values(mg, rows, n, dtype), run_of_values(torch, rows, n, dtype),
                 f"{op} {dtype} one edge value in runs of {n}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_edge_values_strided_match_torch(op, dtype):
    edges = edge_values(np.dtype(dtype).type)
    m = mg.tensor(edges * 2, dtype=getattr(mg, dtype))[::2]
    t = torch.tensor(edges * 2, dtype=getattr(torch, dtype))[::2]
    check_op(op, dtype, m, t, f"{op} {dtype} strided")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["exp", "sigmoid", "tanh"])  # the in-place ones mutagrad has
def test_edge_values_in_place_match_torch(op, dtype):
    edges = edge_values(np.dtype(dtype).type)
    m = mg.tensor(edges, dtype=getattr(mg, dtype))
    t = torch.tensor(edges, dtype=getattr(torch, dtype))
    x = t.clone()
    getattr(m, op + "_")()
    getattr(t, op + "_")()
    assert_matches(m, t, dtype, f"{op}_ {dtype} in place", op, x)
