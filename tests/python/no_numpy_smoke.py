"""mutagrad without NumPy (NumPy is optional: docs/packaging.md): what does not need it works,
what does raises a clear error when used. Run as a script, by

  - tests/packaging/wheel_test.sh, in a venv without system site packages where NumPy is not
    installed (the wheel as users install it);
  - no_numpy_test.py, with --block-numpy: a sys.meta_path finder makes every `import numpy`
    fail before mutagrad is imported, so the ordinary suite catches a regression.

Expected values are hand-derived. Prints "no-numpy smoke OK" at the end.
"""
import importlib.abc
import sys


class _BlockNumpy(importlib.abc.MetaPathFinder):
    """Makes `import numpy` (and numpy.*) fail as it does where NumPy is not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by no_numpy_smoke.py)",
                                      name=name)
        return None


def expect_raises(kind, fn, *words):
    try:
        fn()
    except kind as e:
        for word in words:
            assert word in str(e), (word, str(e))
        return e
    raise AssertionError(f"expected {kind.__name__}")


def main():
    if "--block-numpy" in sys.argv:
        assert "numpy" not in sys.modules, "NumPy was imported before the block"
        sys.meta_path.insert(0, _BlockNumpy())
    expect_raises(ImportError, lambda: __import__("numpy"))

    import mutagrad as mg

    # Tensors from nested lists and scalars, with torch's inferred dtypes.
    x = mg.tensor([1.0, 2.0, 3.0, 4.0])
    assert x.dtype == mg.float32 and x.tolist() == [1.0, 2.0, 3.0, 4.0], x
    m = mg.tensor([[1, 2, 3], [4, 5, 6]])
    assert m.dtype == mg.int64 and m.shape == (2, 3), m
    assert mg.tensor(2.5).item() == 2.5 and mg.tensor(True).dtype == mg.bool
    assert mg.as_tensor([1, 2]).tolist() == [1, 2]
    assert mg.zeros(2, 2).sum().item() == 0.0

    # Indexing with lists, bool lists, masks, and lists per dimension.
    assert x[[0, 2]].tolist() == [1.0, 3.0]
    assert x[[True, False, True, False]].tolist() == [1.0, 3.0]
    assert x[x > 2.5].tolist() == [3.0, 4.0]
    assert x[mg.tensor([3, 0])].tolist() == [4.0, 1.0]
    assert m[[0, 1], [2, 0]].tolist() == [3, 4]
    assert m[1, [0, -1]].tolist() == [4, 6]
    assert m[:, 1].tolist() == [2, 5]

    # setitem through a list, a mask and a slice.
    y = x.clone()
    y[[0, 3]] = 0.0
    assert y.tolist() == [0.0, 2.0, 3.0, 0.0], y
    y[y > 2.5] = -1.0
    assert y.tolist() == [0.0, 2.0, -1.0, 0.0], y
    y[1:3] = mg.tensor([7.0, 8.0])
    assert y.tolist() == [0.0, 7.0, 8.0, 0.0], y

    # Autograd: d/dw sum(w * w) = 2w; a list index accumulates into repeated rows.
    w = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0, 6.0], w.grad
    w.grad = None
    w[[0, 0, 2]].sum().backward()
    assert w.grad.tolist() == [2.0, 0.0, 1.0], w.grad

    # An optimizer step: w - lr * grad (values exact in binary).
    opt = mg.optim.SGD([w], lr=0.5)
    opt.step()
    assert w.tolist() == [0.0, 2.0, 2.5], w
    opt.zero_grad()

    # Printing.
    assert str(mg.tensor([1.5, -2.0])) == "tensor([ 1.5000, -2.0000])", str(mg.tensor([1.5, -2.0]))
    assert "requires_grad=True" in repr(w), repr(w)

    # What needs NumPy raises a clear error when used, and only then.
    e = expect_raises(ImportError, lambda: x.numpy(), "NumPy", "pip install numpy")
    assert isinstance(e, ModuleNotFoundError), type(e)
    expect_raises(TypeError, lambda: mg.from_numpy([1.0, 2.0]), "numpy.ndarray", "list")
    assert "numpy" not in sys.modules, "mutagrad imported NumPy"
    print("no-numpy smoke OK")


if __name__ == "__main__":
    main()
