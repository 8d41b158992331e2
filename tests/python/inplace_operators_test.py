"""Python's in-place operators write in place through the mutation engine.

`x op= y` must not rebind x to a new tensor: the write reaches every alias (a row of a matrix,
a second name), bumps the shared version once, and records the Python line as its call site.
Every in-place dunder Tensor defines is covered: the list is read from the class, so a new
one fails here until it is added to CASES. Oracle: torch 1.13 on the same program.
"""

import pytest
import torch

import mutagrad as mg

# dunder -> (dtype, self values, operand) with an operand valid for that dtype.
CASES = {
    "__iadd__": ("float64", [[2.0, 3.0], [4.0, 5.0]], 1.5),
    "__isub__": ("float64", [[2.0, 3.0], [4.0, 5.0]], 0.5),
    "__imul__": ("float64", [[2.0, 3.0], [4.0, 5.0]], 3.0),
    "__itruediv__": ("float64", [[2.0, 3.0], [4.0, 5.0]], 4.0),
    "__ipow__": ("float64", [[2.0, 3.0], [4.0, 5.0]], 2),
    "__iand__": ("bool", [[True, False], [True, True]], [False, True]),
    "__ior__": ("bool", [[False, False], [True, False]], [True, False]),
    "__ixor__": ("bool", [[True, False], [False, True]], [True, True]),
    "__imod__": ("float64", [[2.5, -3.0], [4.0, 5.5]], 1.5),
    "__ifloordiv__": ("int64", [[7, -7], [9, 5]], 2),
    "__ilshift__": ("int64", [[1, -3], [4, 5]], 2),
    "__irshift__": ("int64", [[16, -16], [5, 1]], 1),
}
RAISING = {"__imatmul__"}


# Every in-place operator of the Python language.
PYTHON_INPLACE = ["__iadd__", "__isub__", "__imul__", "__imatmul__", "__itruediv__",
                  "__ifloordiv__", "__imod__", "__ipow__", "__ilshift__", "__irshift__",
                  "__iand__", "__ixor__", "__ior__"]


def test_every_inplace_dunder_is_covered():
    defined = {n for n in PYTHON_INPLACE if hasattr(mg.Tensor, n)}
    assert defined == set(CASES) | RAISING
    # An undefined one is fine only if its binary operator is undefined too: otherwise Python
    # would run `x = x op y` and silently rebind x.
    for name in set(PYTHON_INPLACE) - defined:
        assert not hasattr(mg.Tensor, "__" + name[3:]), name


def run(lib, dunder, operand_kind):
    dtype, values, operand = CASES[dunder]
    x = lib.tensor(values, dtype=getattr(lib, dtype))
    other = lib.tensor(operand, dtype=getattr(lib, dtype)) if operand_kind == "tensor" else operand
    alias = x
    for row in x:  # each row is a view: the write must reach x
        result = getattr(row, dunder)(other)
        assert result is row
    return x.tolist(), alias is x, x._version


# A Python operand where it is a number; a tensor operand always.
PARAMS = [(d, k) for d in sorted(CASES) for k in ("python", "tensor")
          if k == "tensor" or not isinstance(CASES[d][2], list)]


@pytest.mark.parametrize("dunder,operand_kind", PARAMS)
def test_inplace_operator_writes_through_views_like_torch(dunder, operand_kind):
    assert run(mg, dunder, operand_kind) == run(torch, dunder, operand_kind)


def test_issue_repros():
    x = mg.tensor([[2.0, 3.0], [4.0, 5.0]])
    for row in x:
        row **= 2
    assert x.tolist() == [[4.0, 9.0], [16.0, 25.0]] and x._version == 2
    d = mg.zeros(3, dtype=mg.bool)
    e = d
    e |= mg.tensor([True, False, True])
    assert e is d and d.tolist() == [True, False, True] and d._version == 1


def test_imatmul_raises_and_leaves_x_alone():
    x = mg.ones(2, 2)
    with pytest.raises(RuntimeError, match="In-place matmul is not supported"):
        x @= mg.ones(2, 2)
    assert x.tolist() == [[1.0, 1.0], [1.0, 1.0]] and x._version == 0


def test_inplace_operator_records_the_python_line():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    s = y.sigmoid()
    s **= 2  # the line the stale error must name
    line = test_inplace_operator_records_the_python_line.__code__.co_firstlineno + 4
    with pytest.raises(RuntimeError, match=rf"pow_ at .*inplace_operators_test.py:{line}"):
        s.sum().backward()
