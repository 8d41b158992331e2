"""Python index and value conversion (int, slice, Ellipsis, None, bool, Tensor, lists, NumPy
arrays, tuples; numbers and tensors as values) and the exception types of errors, against
torch.
"""

import numpy as np
import pytest
import torch

import mutagrad as mg
from api_util import outcome, same, same_ok, same_outcome


# ---- indexing conversions --------------------------------------------------------------------

INDICES = [
    0, -1, 1, slice(None), slice(1, None), slice(None, None, 2), slice(-2, None), Ellipsis, None,
    True, False, (0, 1), (0, slice(None), 2), (Ellipsis, 1), (None, 0, None), (1, Ellipsis, None),
    [0, 1], [1, 1, 0], [True, False], [[0, 1]], [[0, 1], [1, 0]], [0, [1, 2]], [slice(None), 1],
    [None, 0], [Ellipsis, 1], [0] * 33, range(2), (), (True, 0), (slice(None), [0, 2], [1, 3]),
    ([0, 1], slice(None), [0, 1]), np.int64(1), np.array([0, 1]), np.array([True, False]),
    np.array([[0, 1]]), np.array(1), np.array([], dtype=np.float64), [], (np.int32(1), np.bool_(True)),
    (Ellipsis, Ellipsis), (Ellipsis, 0, Ellipsis),
]
INDEX_IDS = [repr(i)[:30] for i in INDICES]


@pytest.mark.parametrize("index", INDICES, ids=INDEX_IDS)
def test_getitem_with_python_indices_matches_torch(index):
    def run(lib):
        x = lib.arange(24).reshape(2, 3, 4)
        r = x[index]
        return r, r._version, x._version

    same_ok(run)


@pytest.mark.parametrize("index", INDICES, ids=INDEX_IDS)
def test_setitem_with_python_indices_matches_torch(index):
    def run(lib):
        x = lib.zeros(2, 3, 4)
        x[index] = 7.0
        return x, x._version

    same_ok(run)  # a bare False bumps nothing, in both (tests/python/empty_write_test.py)


@pytest.mark.parametrize("index", [
    lambda lib: lib.tensor([1, 0]), lambda lib: lib.tensor([True, False]), lambda lib: lib.tensor(1),
    lambda lib: (lib.tensor([0, 1]), lib.tensor([2, 0])), lambda lib: (slice(None), lib.tensor([[0], [2]])),
    lambda lib: (slice(lib.tensor(1), lib.tensor(3)),), lambda lib: lib.tensor([0.0]),
    lambda lib: lib.arange(24).reshape(2, 3, 4) > 10, lambda lib: (0, lib.tensor([5])),
])
def test_tensor_indices_match_torch(index):
    def run(lib):
        x = lib.arange(24).reshape(2, 3, 4)
        y = x[index(lib)]
        x[index(lib)] = -1
        return y, x, x._version

    same_outcome(run)  # a float index tensor and index 5 raise IndexError in both


@pytest.mark.parametrize("index", [
    5, -3, (0, 0, 0, 0), 1.5, "a", object(), {}, (0, "a"), [0, "a"], slice(None, None, 0),
    slice(None, None, -1), slice(0.5, None), [3], [[True, True, True]],
])
def test_index_errors_have_torchs_exception_types(index):
    def get(lib):
        return lib.arange(6).reshape(2, 3)[index]

    def set_(lib):
        x = lib.zeros(2, 3)
        x[index] = 1.0
        return x

    assert same_outcome(get) != "ok"
    assert same_outcome(set_) != "ok"


@pytest.mark.parametrize("value", [[1.0, 2.0], (1.0,), np.ones(3), "a", None])
def test_setitem_value_types_match_torch(value):
    def run(lib):
        x = lib.zeros(3)
        x[:] = value
        return x

    assert same_outcome(run) == "TypeError"


@pytest.mark.parametrize("value", [2, 2.5, True, np.float64(1.5), np.int32(3)])
def test_setitem_number_values_match_torch(value):
    for dtype in ("float32", "int64", "bool"):
        def run(lib):
            x = lib.zeros(3, dtype=getattr(lib, dtype))
            x[1:] = value
            return x, x._version

        same_ok(run)


def test_setitem_tensor_values_broadcast_and_convert_like_torch():
    def run(lib):
        x = lib.zeros(2, 3)
        x[:, 0] = lib.tensor([1, 2])          # int64 into float32
        x[1] = lib.tensor(5.0)                 # 0-dim
        x[0, 1:] = lib.tensor([[7.0, 8.0]])    # leading 1 stripped
        x[x > 6] = lib.tensor(-1.0)            # mask
        return x, x._version

    same_ok(run)


def test_false_index_semantics():
    def bare(lib):
        x = lib.zeros(3)
        x[False] = lib.zeros(4, 2)  # bare False: nothing written, nothing checked
        return x, x._version

    def tupled(lib):
        x = lib.zeros(3)
        x[(False,)] = lib.zeros(4, 2)  # a tuple is checked

    (xt, vt), (xm, vm) = bare(torch), bare(mg)
    same(xt, xm)
    # As torch: a bare False writes nothing and does not bump (tests/python/empty_write_test.py).
    assert (vt, vm) == (0, 0)
    assert same_outcome(tupled) == "RuntimeError"


# ---- errors ----------------------------------------------------------------------------------

ERRORS = {
    "zeros(-1)": lambda lib: lib.zeros(-1), "permute dup": lambda lib: lib.ones(2, 3).permute(0, 0),
    "chunk 0": lambda lib: lib.ones(2).chunk(0), "pow int neg": lambda lib: lib.tensor([2]) ** -1,
    "clamp no bounds": lambda lib: lib.ones(2).clamp(), "cat []": lambda lib: lib.cat([]),
    "overlap": lambda lib: lib.zeros(1).expand(3).add_(1), "mean int": lambda lib: lib.tensor([1]).mean(),
    "index oob": lambda lib: lib.ones(2)[2], "too many indices": lambda lib: lib.ones(2)[0, 0],
    "float index": lambda lib: lib.ones(2)[lib.tensor([0.5])], "str index": lambda lib: lib.ones(2)["x"],
    "bool ambiguous": lambda lib: bool(lib.ones(2)), "item": lambda lib: lib.ones(2).item(),
    "ragged": lambda lib: lib.tensor([[1], [1, 2]]), "step": lambda lib: lib.ones(2)[::-1],
    "broadcast": lambda lib: lib.ones(2) * lib.ones(3), "where": lambda lib: lib.where(lib.ones(2) > 0, lib.ones(3), 0.0),
    "len 0-dim": lambda lib: len(lib.tensor(1.0)), "leaf in-place": lambda lib: lib.ones(1, requires_grad=True).zero_(),
}


@pytest.mark.parametrize("name", list(ERRORS), ids=list(ERRORS))
def test_exception_types_match_torch(name):
    kind = same_outcome(ERRORS[name])
    assert kind in ("RuntimeError", "IndexError", "ValueError", "TypeError")
    _, message = outcome(ERRORS[name], mg)
    assert len(message) > 20  # says what was wrong
