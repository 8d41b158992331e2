"""Seeded randomized differential tests of Python indexing: the same x[idx], x[idx] = v and
index_put_ scenarios run on torch 1.13 and on mutagrad, comparing shapes, dtypes, values,
view-or-copy, _version and exception kinds.

Where mutagrad differs on purpose (docs/indexing.md, "Where mutagrad goes beyond PyTorch"),
the test asserts mutagrad's documented rule against a hand-computed oracle instead of torch:
- strong guarantee: after any error the mutagrad tensor is bit-for-bit unchanged and its
  version has not moved (torch may have written part of it; only the kind is compared);
- duplicates with accumulate=False: the last occurrence in index order wins.
A value of another dtype is compared with torch as it is: converted by basic writes, refused by
advanced ones (issue 34, item 7); an out-of-range index raises mutagrad.IndexOutOfRangeError,
both of torch's kinds (lib_util.same_kind).
Not generated here (each has its own test below): int32 index tensors, entries after a
multi-dim mask, values that overlap x.

Not generated either: a bare slice on a 0-dim x (`x[:0] = 5.0`, `x[::-1]`). torch 1.13's
one-slice fast path is inconsistent there (the set writes the whole 0-dim x even for `:0`; a
bad step gives ValueError where the tuple form `x[(slice(None, None, -1),)]` gives IndexError);
mutagrad raises "too many indices" (IndexError) for every form, which the tuple cases compare.
"""

import random

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import (
    assert_same_outcome,
    assert_tensors_match,
    capture,
    dtype_of,
    from_torch,
    numpy_of,
    run_both,
    same_kind,
)

SEEDS = (1, 2, 3, 4)

# The device mutagrad's tensors live on in the random tests: each runs on "cpu" and on "cuda"
# (the host-run CUDA device of the test build, docs/cuda.md), torch on the CPU as the oracle.
MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"])
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def on_device(lib, t):
    """A mutagrad tensor moved to MG_DEVICE; torch's (and anything else) unchanged."""
    return t.to(MG_DEVICE) if lib is mg else t
CASES_PER_SEED = 250
MAX_REPORTED = 8

# ---------------------------------------------------------------------------------------------
# Random base tensors: 0-4 dims, sizes 0-4, every dtype, sometimes permuted (non-contiguous).


def random_base_spec(rng):
    ndim = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
    storage_shape = [rng.choice([0, 1, 2, 3, 3, 4]) if rng.random() < 0.1 else
                     rng.choice([1, 2, 3, 4]) for _ in range(ndim)]
    perm = list(range(ndim))
    if ndim >= 2 and rng.random() < 0.35:
        rng.shuffle(perm)
    dtype = rng.choice(["float32", "float32", "float64", "int64", "int32", "bool"])
    return {"storage_shape": storage_shape, "perm": perm, "dtype": dtype}


def base_values(spec):
    """Distinct values (bool: a pattern) in storage order, as a NumPy array."""
    n = int(np.prod(spec["storage_shape"], dtype=np.int64))
    ar = np.arange(n, dtype=np.int64) - n // 2
    if spec["dtype"] == "bool":
        data = ar % 3 == 0
    elif spec["dtype"] in ("float32", "float64"):
        data = ar.astype(spec["dtype"]) + 0.25
    else:
        data = ar.astype(spec["dtype"])
    return data.reshape(spec["storage_shape"])


def make_base(lib, spec):
    x = on_device(lib, lib.from_numpy(base_values(spec).copy()))  # empty: zero strides
    return x.permute(*spec["perm"]) if spec["perm"] else x


def logical_shape(spec):
    return [spec["storage_shape"][p] for p in spec["perm"]]


# ---------------------------------------------------------------------------------------------
# Random index expressions as plain data, turned into each library's objects by `build`.


def random_int_values(rng, size, count):
    lo, hi = -size, size - 1
    if size == 0 or rng.random() < 0.05:
        lo, hi = -size - 2, size + 1  # sometimes out of range
    return [rng.randint(lo, hi) for _ in range(count)]


def random_index_spec(rng, shape):
    """A list of ('kind', data) entries; valid or not."""
    entries = []
    dim = 0
    ellipses = 0
    n = rng.randint(1, len(shape) + 1)
    kinds = ["int", "int", "slice", "slice", "slice", "none", "ellipsis", "bool", "tensor",
             "tensor", "tensor2d", "list", "ndarray", "mask", "npmask", "boollist", "int0d",
             "bool0d", "floatidx", "badslice"]
    # Index tensors of one expression mostly share a length (or 1), so that they broadcast.
    length = rng.randint(1, 3)
    no_dim = ["none", "ellipsis", "bool", "bool0d"]
    while len(entries) < n:
        # Past the last dim, mostly entries that address no dim (else "too many indices").
        kind = rng.choice(no_dim if dim >= len(shape) and rng.random() < 0.85 else kinds)
        size = shape[dim] if dim < len(shape) else rng.choice([1, 2])
        if kind == "int":
            entries.append(("int", random_int_values(rng, size, 1)[0]))
            dim += 1
        elif kind == "slice":
            entries.append(("slice", (rng.choice([None, rng.randint(-size - 1, size + 1)]),
                                      rng.choice([None, rng.randint(-size - 1, size + 1)]),
                                      rng.choice([None, 1, 1, 2, 3]))))
            dim += 1
        elif kind == "badslice" and rng.random() < 0.3:
            entries.append(("slice", (None, None, rng.choice([0, -1]))))
            dim += 1
        elif kind == "none":
            entries.append(("none", None))
        elif kind == "ellipsis" and (ellipses == 0 or rng.random() < 0.1):
            ellipses += 1
            entries.append(("ellipsis", None))
        elif kind == "bool":
            entries.append(("bool", rng.random() < 0.7))
        elif kind in ("tensor", "list", "ndarray"):
            count = rng.choice([1, length, length, length, length, rng.randint(1, 4)])
            entries.append((kind, random_int_values(rng, size, count)))
            dim += 1
        elif kind == "tensor2d":
            rows, cols = rng.choice([(1, length), (2, 1), (2, length), (length, 1)])
            entries.append((kind, [random_int_values(rng, size, cols) for _ in range(rows)]))
            dim += 1
        elif kind in ("mask", "npmask", "boollist"):
            mask_size = size if rng.random() < 0.93 else size + 1
            entries.append((kind, [rng.random() < 0.5 for _ in range(mask_size)]))
            dim += 1
        elif kind == "int0d":
            entries.append((kind, random_int_values(rng, size, 1)[0]))
            dim += 1
        elif kind == "bool0d":
            entries.append((kind, rng.random() < 0.7))
        elif kind == "floatidx" and rng.random() < 0.3:
            entries.append((kind, [0.0]))
            dim += 1
    # A multi-dim mask is generated only as the last entry: torch 1.13 addresses the entries
    # after one differently (docs/indexing.md), which test_multi_dim_mask_* covers.
    if dim + 1 < len(shape) and rng.random() < 0.15:
        k = rng.randint(2, len(shape) - dim)
        mshape = shape[dim:dim + k]
        bits = [rng.random() < 0.5 for _ in range(int(np.prod(mshape)))]
        entries.append(("maskkd", (mshape, bits)))
    bare = len(entries) == 1 and rng.random() < 0.5  # x[i] rather than x[(i,)]
    # x[[i, j]]: torch 1.13 reads a list holding a sequence, slice, None, Ellipsis or tensor as
    # a tuple, and a list of ints (or bools) as an index tensor.
    as_list = not bare and rng.random() < 0.15
    if bare and not shape and entries[0][0] == "slice":
        bare = False  # torch's quirks with x[slice] on a 0-dim x (module docstring)
    return {"entries": entries, "bare": bare, "as_list": as_list}


def build_entry(lib, kind, data):
    if kind == "int":
        return data
    if kind == "slice":
        return slice(*data)
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "bool":
        return data
    if kind in ("tensor", "tensor2d"):
        return on_device(lib, lib.tensor(data, dtype=lib.int64))
    if kind == "list":
        return list(data)
    if kind == "ndarray":
        return np.array(data, dtype=np.int64)
    if kind == "mask":
        return on_device(lib, lib.tensor(data, dtype=lib.bool))
    if kind == "npmask":
        return np.array(data, dtype=np.bool_)
    if kind == "boollist":
        return list(data)
    if kind == "int0d":
        return on_device(lib, lib.tensor(data))
    if kind == "bool0d":
        return on_device(lib, lib.tensor(data))
    if kind == "floatidx":
        return on_device(lib, lib.tensor(data, dtype=lib.float32))
    if kind == "maskkd":
        mshape, bits = data
        return on_device(lib, lib.tensor(np.array(bits, dtype=np.bool_).reshape(mshape).tolist(),
                                         dtype=lib.bool))
    raise AssertionError(kind)


def build_index(lib, ispec):
    parts = tuple(build_entry(lib, k, d) for k, d in ispec["entries"])
    if ispec.get("as_list"):
        return list(parts)
    return parts[0] if ispec["bare"] else parts


class Lazy:
    """A case description, formatted only when an assertion message needs it."""

    def __init__(self, fn):
        self.fn = fn

    def __str__(self):
        return self.fn()

    def __format__(self, spec):
        return format(str(self), spec)

    def __add__(self, other):
        return str(self) + other


def show(spec, ispec, extra=lambda: ""):
    def text():
        return (f"x: shape {logical_shape(spec)} (storage {spec['storage_shape']}, perm "
                f"{spec['perm']}), {spec['dtype']}; index {ispec['entries']} "
                f"bare={ispec['bare']} as_list={ispec.get('as_list')} {extra()}")
    return Lazy(text)


# ---------------------------------------------------------------------------------------------
# Hand-computed oracle for sets: which storage element each indexed element addresses.


def destination_ids(spec, ispec):
    """For every element of x[idx] (row-major), the storage offset it addresses, computed by
    indexing a tensor of storage offsets with torch (a get, which the get test compares)."""
    n = int(np.prod(spec["storage_shape"], dtype=np.int64))
    ids = torch.arange(n).reshape(spec["storage_shape"])
    if spec["perm"]:
        ids = ids.permute(*spec["perm"])
    return ids[build_index(torch, ispec)]


def broadcast_value(value, shape, dtype):
    """The value of a set as the indexed shape: leading size-1 dims dropped, then expanded."""
    v = torch.as_tensor(value) if not isinstance(value, torch.Tensor) else value
    v = v.to(dtype_of(torch, dtype))
    while v.dim() > len(shape) and v.shape[0] == 1:
        v = v[0]
    return v.expand(shape)


def oracle_set(spec, ispec, value_t):
    """x after x[idx] = value with 'last occurrence wins', and whether duplicates disagree."""
    out = base_values(spec).reshape(-1).copy()
    try:
        ids = destination_ids(spec, ispec)
    except IndexError:
        # index_put_ reads a 0-dim index tensor as an advanced index, which is range-checked
        # only when the result has elements; the get reads it as an integer. A set that
        # succeeded with such an index addressed no element.
        return out.reshape(spec["storage_shape"]), False
    if ids.numel() == 0:  # nothing addressed (the value is not checked for x[False] = v)
        return out.reshape(spec["storage_shape"]), False
    dest = ids.reshape(-1).tolist()
    vals = broadcast_value(value_t, ids.shape, spec["dtype"]).reshape(-1).tolist()
    seen = {}
    conflict = False
    for d, v in zip(dest, vals):
        if d in seen and seen[d] != v:
            conflict = True
        seen[d] = v
        out[d] = v
    return out.reshape(spec["storage_shape"]), conflict


def storage_view(x, spec):
    """x's values in storage order (undoes the permutation)."""
    if not spec["perm"]:
        return x
    inverse = [spec["perm"].index(i) for i in range(len(spec["perm"]))]
    return x.permute(*inverse)


# ---------------------------------------------------------------------------------------------
# Gets.


def check_get(rng, failures):
    spec = random_base_spec(rng)
    ispec = random_index_spec(rng, logical_shape(spec))
    what = show(spec, ispec)
    xt, xm = make_base(torch, spec), make_base(mg, spec)
    ot = capture(lambda: xt[build_index(torch, ispec)])
    om = capture(lambda: xm[build_index(mg, ispec)])
    try:
        assert_same_outcome(ot, om, what=what)
        assert xm._version == 0 and xt._version == 0, what
        if not ot.ok:
            assert_tensors_match(xm, xt, what=what + " (x after a failed get)")
            return
        rt, rm = ot.value, om.value
        assert (rm._base is None) == (rt._base is None), \
            f"{what}: view-or-copy differs (torch view: {rt._base is not None})"
        # An empty x moved to the device has contiguous strides where NumPy's empty array (the
        # oracle's) has zeros, as torch's .cuda() gives too: its views' strides differ.
        if rt._base is not None and not (MG_DEVICE != "cpu" and xm.numel() == 0):
            assert rm.stride() == rt.stride(), f"{what}: strides {rm.stride()} vs {rt.stride()}"
            assert rm.storage_offset() == rt.storage_offset(), what
        if rt.numel() > 0:
            # A write into the result reaches x exactly when the result is a view.
            fill = {"bool": False}.get(spec["dtype"], 99)
            rt.fill_(fill)
            rm.fill_(fill)
            assert_tensors_match(xm, xt, what=what + " (x after writing into x[idx])")
            assert xm._version == xt._version, f"{what}: versions after writing into x[idx]"
    except AssertionError as e:
        failures.append(str(e))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_getitem_matches_torch(seed, mg_device):
    rng = random.Random(seed)
    failures = []
    for _ in range(CASES_PER_SEED):
        check_get(rng, failures)
    assert not failures, f"{len(failures)} of {CASES_PER_SEED} gets differ:\n" + \
        "\n\n".join(failures[:MAX_REPORTED])


# ---------------------------------------------------------------------------------------------
# Sets.


def random_value(rng, spec, result_shape):
    """('scalar', python number) or ('tensor', torch tensor of x's dtype), sometimes of a
    shape that does not broadcast."""
    dtype = spec["dtype"]
    r = rng.random()
    if r < 0.08:
        return "scalar", rng.choice([True, False, 0, 3, -2, 0.5, -3.75])  # converted to x's dtype
    if r < 0.3:
        if dtype == "bool":
            return "scalar", rng.random() < 0.5
        if dtype in ("float32", "float64"):
            return "scalar", rng.choice([-7.5, 3.0, 2])
        return "scalar", rng.choice([-7, 5])
    if result_shape is None:
        shape = rng.choice([(), (1,), (2,), (3, 1)])
    elif r < 0.4:
        shape = (1,) + tuple(result_shape)  # a leading 1 is dropped
    elif r < 0.5:
        shape = tuple(1 if rng.random() < 0.5 else s for s in result_shape)  # broadcasts
    elif r < 0.58:
        shape = tuple(result_shape[1:])  # fewer dims broadcast
    elif r < 0.66:
        shape = tuple(result_shape) + (2,) if rng.random() < 0.5 else (rng.randint(2, 5),)
    elif r < 0.7:
        shape = ()
    else:
        shape = tuple(result_shape)
    n = int(np.prod(shape, dtype=np.int64))
    data = (np.arange(n, dtype=np.int64) * 7 + 100).reshape(shape)
    if rng.random() < 0.12:
        dtype = rng.choice(["float32", "float64", "int64", "int32", "bool"])  # maybe converted
    if dtype == "bool":
        data = np.asarray(data % 2 == 1)
    return "tensor", torch.from_numpy(data.astype(np.bool_ if dtype == "bool" else dtype))


def check_set(rng, failures, use_index_put=False):
    spec = random_base_spec(rng)
    ispec = random_index_spec(rng, logical_shape(spec))
    if use_index_put:
        # index_put_ takes index tensors only: keep the tensor-like entries, as a tuple.
        ispec = {"entries": [(k, d) for k, d in ispec["entries"] if k in
                             ("tensor", "tensor2d", "mask", "int0d", "maskkd")] or
                 [("tensor", [0, 0])], "bare": False}
    r_get = capture(lambda: make_base(torch, spec)[build_index(torch, ispec)])
    result_shape = tuple(r_get.value.shape) if r_get.ok else None
    vkind, vt = random_value(rng, spec, result_shape)
    if use_index_put and vkind == "scalar":
        vkind, vt = "tensor", torch.tensor(vt, dtype=dtype_of(torch, spec["dtype"]))
    accumulate = use_index_put and spec["dtype"] != "bool" and rng.random() < 0.5
    what = show(spec, ispec, lambda: f"value {vkind} {vt!r}, accumulate={accumulate}")

    def scenario(lib, vt):
        x = make_base(lib, spec)
        value = from_torch(lib, vt) if vkind == "tensor" else vt
        if vkind == "tensor" and vt.numel() != 1:
            # A one-element value stays on the CPU (the oracle's CPU paths, as in the C++
            # differential test).
            value = on_device(lib, value)
        index = build_index(lib, ispec)
        outcome = capture(lambda: x.index_put_(index, value, accumulate=accumulate)
                          if use_index_put else x.__setitem__(index, value))
        return x, outcome

    xt, ot = scenario(torch, vt)
    xm, om = scenario(mg, vt)
    try:
        assert same_kind(ot.kind, om.kind), f"{what}: torch gave {ot!r}\nmutagrad gave {om!r}"
        if not ot.ok:
            # Strong guarantee: nothing written, no version bump (torch may differ).
            assert_tensors_match(xm, make_base(torch, spec), what=what + " (x after an error)")
            assert xm._version == 0, f"{what}: version moved to {xm._version} on an error"
            return
        # One bump, except for a bare x[False] = v, which torch and mutagrad skip.
        assert xm._version == xt._version, f"{what}: version {xm._version}, torch {xt._version}"
        assert xt._version == 1 or (ispec["bare"] and ispec["entries"] == [("bool", False)]), what
        if accumulate:
            assert_tensors_match(xm, xt, exact=spec["dtype"] not in ("float32", "float64"),
                                 what=what)
            return
        expected, conflict = oracle_set(spec, ispec, vt)
        got = numpy_of(storage_view(xm, spec))
        assert np.array_equal(got, expected), \
            f"{what}: not 'last occurrence wins'\nmutagrad: {got.tolist()}\n" \
            f"expected: {expected.tolist()}"
        if not conflict:
            assert_tensors_match(xm, xt, what=what)
    except AssertionError as e:
        failures.append(str(e))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_setitem_matches_torch(seed, mg_device):
    rng = random.Random(100 + seed)
    failures = []
    for _ in range(CASES_PER_SEED):
        check_set(rng, failures)
    assert not failures, f"{len(failures)} of {CASES_PER_SEED} sets differ:\n" + \
        "\n\n".join(failures[:MAX_REPORTED])


@pytest.mark.parametrize("seed", SEEDS)
def test_random_index_put_matches_torch(seed, mg_device):
    rng = random.Random(200 + seed)
    failures = []
    for _ in range(CASES_PER_SEED // 2):
        check_set(rng, failures, use_index_put=True)
    assert not failures, f"{len(failures)} index_put_ cases differ:\n" + \
        "\n\n".join(failures[:MAX_REPORTED])


# ---------------------------------------------------------------------------------------------
# index_put_ with duplicates.


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_index_put_accumulate_with_many_duplicates_matches_torch(dtype):
    rng = np.random.default_rng(7)
    shape = (6, 5)
    rows = rng.integers(-6, 6, size=200)
    cols = rng.integers(0, 5, size=200)
    vals = rng.normal(size=200) * 10 if dtype != "int64" else rng.integers(-9, 9, size=200)
    vals = vals.astype(dtype)

    def scenario(lib):
        x = lib.ones(shape, dtype=dtype_of(lib, dtype))
        v = lib.from_numpy(vals.copy())
        x.index_put_((lib.from_numpy(rows.copy()), lib.from_numpy(cols.copy())), v,
                     accumulate=True)
        # A second, broadcast index (a column of rows with a row of cols).
        x.index_put_((lib.tensor([[0], [0], [5]]), lib.tensor([1, 1])),
                     lib.ones(3, 2, dtype=dtype_of(lib, dtype)), accumulate=True)
        return x, x._version

    ot, om = run_both(scenario)
    assert_same_outcome(ot, om, exact=dtype == "int64", rtol=1e-5, atol=1e-4)
    # Summed in index order: bitwise the same on every run.
    again = capture(scenario, mg)
    assert np.array_equal(numpy_of(again.value[0]), numpy_of(om.value[0]))


def test_index_put_without_accumulate_last_occurrence_wins():
    # Hand-computed: for each destination, the value of its last occurrence in index order.
    x = mg.zeros(5)
    x.index_put_((mg.tensor([0, 2, 2, 4, 0, 0]),), mg.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    assert x.tolist() == [6.0, 0.0, 3.0, 0.0, 4.0]
    assert x._version == 1

    y = mg.zeros(3, 3, dtype=mg.int64)
    rows, cols = mg.tensor([1, 0, 1, 1, 2]), mg.tensor([2, 0, 2, 2, 1])
    y.index_put_((rows, cols), mg.tensor([10, 20, 30, 40, 50]))
    assert y.tolist() == [[20, 0, 0], [0, 0, 40], [0, 50, 0]]

    # Broadcast indices: rows [[0], [0]] with cols [1, 1] address (0, 1) four times; the
    # last element of the broadcast index (row-major) wins.
    z = mg.zeros(2, 2)
    z.index_put_((mg.tensor([[0], [0]]), mg.tensor([1, 1])), mg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert z.tolist() == [[0.0, 4.0], [0.0, 0.0]]


def test_setitem_with_duplicates_last_occurrence_wins():
    x = mg.zeros(3, 4)
    x[:, [1, 3, 1]] = mg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    assert x.tolist() == [[0, 3, 0, 2], [0, 6, 0, 5], [0, 9, 0, 8]]
    # Separated advanced indices put the index dims first: x[i, :, j] has shape [len, 3].
    y = mg.zeros(2, 3, 2)
    y[[1, 0, 1], :, [0, 1, 0]] = mg.tensor([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0]])
    assert y[1, :, 0].tolist() == [3.0, 3.0, 3.0]
    assert y[0, :, 1].tolist() == [2.0, 2.0, 2.0]
    # A bool mask selects each element once: no duplicates, torch's result.
    xt, xm = torch.zeros(4), mg.zeros(4)
    xt[torch.tensor([True, False, True, True])] = torch.tensor([1.0, 2.0, 3.0])
    xm[mg.tensor([True, False, True, True])] = mg.tensor([1.0, 2.0, 3.0])
    assert_tensors_match(xm, xt)


# ---------------------------------------------------------------------------------------------
# Deliberate differences from torch 1.13 (docs/indexing.md), asserted against torch-derived
# oracles of mutagrad's rule.


def test_strong_guarantee_after_an_out_of_range_index():
    def scenario(lib):
        x = lib.arange(5.0)
        out = capture(x.__setitem__, (lib.tensor([-2, 6, 4]), None), -1.0)
        return x, out.kind

    (xt, kind_t), (xm, kind_m) = capture(scenario, torch).value, capture(scenario, mg).value
    assert kind_t == "IndexError" and kind_m == "IndexOutOfRangeError"
    assert xt.tolist() == [0.0, 1.0, 2.0, -1.0, 4.0]  # torch wrote x[-2] before raising
    assert xm.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0] and xm._version == 0


def test_int32_index_tensors_equal_torch_int64():
    for index in ([2, 0, -1, 0], [[1], [0]]):
        xt, xm = torch.arange(12.0).reshape(3, 4), mg.arange(12.0).reshape(3, 4)
        it, im = torch.tensor(index), mg.tensor(index, dtype=mg.int32)
        assert_tensors_match(xm[im], xt[it])
        assert_tensors_match(xm[1:, im], xt[1:, it])
        xt[it, 1] = -5.0
        xm[im, 1] = -5.0
        assert_tensors_match(xm, xt)


def test_multi_dim_mask_covers_its_dims():
    # mutagrad: a k-dim mask covers k dims, so x[m, rest] == x[m][:, rest] (torch 1.13 raises).
    xt, xm = torch.arange(24.0).reshape(2, 2, 3, 2), mg.arange(24.0).reshape(2, 2, 3, 2)
    mask = [[True, False], [True, True]]
    mt, mm = torch.tensor(mask), mg.tensor(mask)
    assert_tensors_match(xm[mm, 0], xt[mt][:, 0])
    assert_tensors_match(xm[mm, ::2], xt[mt][:, ::2])
    assert_tensors_match(xm[mm, 1, 1], xt[mt][:, 1, 1])
    # True is an advanced index of shape [1] that broadcasts with the mask's indices.
    assert_tensors_match(xm[mm, True], xt[mt])
    xm[mm, 0] = -1.0
    xt[mt.nonzero(as_tuple=True) + (0,)] = -1.0
    assert_tensors_match(xm, xt)


def test_overlapping_value_reads_as_if_copied():
    x = mg.arange(5.0)
    x[1:] = x[:-1]
    assert x.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    y = mg.arange(6.0)
    y[mg.tensor([5, 4, 3])] = y[0:3]
    assert y.tolist() == [0.0, 1.0, 2.0, 2.0, 1.0, 0.0]


# ---------------------------------------------------------------------------------------------
# Differences from torch found by this suite and fixed (/tmp/team/requests.md R1-R7):
# regression tests.


def test_inplace_on_empty_tensor_with_zero_strides():
    def scenario(lib):
        x = lib.from_numpy(np.zeros((3, 0), dtype=np.float32))
        x.zero_()
        x.add_(1.0)
        x[[0]] = 1.0
        x.index_put_((lib.tensor([0]),), lib.tensor(2.0))
        return x, x._version

    assert_same_outcome(*run_both(scenario))


def test_empty_list_tensor_is_float32():
    assert_same_outcome(*run_both(lambda lib: lib.tensor([])))


def test_empty_list_and_empty_float_array_index_are_int64():
    def scenario(lib):
        x = lib.arange(12.0).reshape(3, 4)
        return x[[]], x[np.array([])], x[1:, []]

    assert_same_outcome(*run_both(scenario))


def test_tuple_false_set_checks_value():
    def scenario(lib):
        x = lib.zeros(3)
        x[(False,)] = lib.zeros(4, 2)

    ot, om = run_both(scenario)
    assert ot.kind == "RuntimeError"
    assert_same_outcome(ot, om)


def test_list_with_sequences_is_a_tuple():
    def scenario(lib):
        x = lib.arange(12.0).reshape(3, 4)
        return x[[[1, 2], [0, 3]]], x[[0, None]], x[[0, slice(None)]], x[[1, Ellipsis]]

    assert_same_outcome(*run_both(scenario))


def test_inplace_on_expanded_tensor_is_runtime_error():
    def scenario(lib):
        x = lib.zeros(1).expand(3)
        x.add_(1.0)

    ot, om = run_both(scenario)
    assert ot.kind == "RuntimeError"
    assert_same_outcome(ot, om)


def test_string_index_is_type_error():
    ot, om = run_both(lambda lib: lib.zeros(3)["a"])
    assert ot.kind == "TypeError"
    assert_same_outcome(ot, om)
