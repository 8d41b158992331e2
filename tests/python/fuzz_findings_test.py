"""Findings of tests/fuzz/python_index_fuzzer.py (docs/reliability.md), kept as tests."""

import numpy as np
import pytest
import torch

import mutagrad as mg


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("shape", [(), (2,), (1, 2)])
def test_signed_integer_arrays_of_every_width_index_as_int64(dtype, shape):
    """torch converts every NumPy index array but uint8/bool ones to int64: an int8 or int16
    array is an index, not an IndexError (mutagrad raised 'tensors used as indices must be
    long, int, byte or bool tensors')."""
    a = np.array([-1, 2] if shape else 1, dtype=dtype).reshape(shape)
    want = torch.arange(12).reshape(3, 4)[a]
    got = mg.arange(12).reshape(3, 4)[a]
    assert tuple(got.shape) == tuple(want.shape)
    assert np.array_equal(got.numpy(), want.numpy())
    x, y = mg.zeros(3, 4), torch.zeros(3, 4)
    x[a] = 7.0
    y[a] = 7.0
    assert np.array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize("data", [
    "[1, LIB.tensor([2])]", "[LIB.tensor([2]), 1]", "[LIB.tensor([2]), LIB.tensor([3])]",
    "[1, LIB.tensor([[2]])]", "[[1], LIB.tensor([2])]", "[1.5, LIB.tensor([2.5])]",
    "[True, LIB.tensor([-4], dtype=LIB.int16), -5]"])
def test_one_element_tensors_in_a_list_are_numbers(data):
    """Finding 9: torch does not descend into a tensor to find a list's shape; a one-element
    tensor where a number goes is read as that number (mutagrad raised TypeError 'expected a
    number at depth 1')."""
    want = eval(data.replace("LIB", "torch"))
    got = eval(data.replace("LIB", "mg"))
    w, g = torch.tensor(want), mg.tensor(got)
    assert tuple(g.shape) == tuple(w.shape) and str(g.dtype) == str(w.dtype).replace("torch.", "mutagrad.")
    assert np.array_equal(g.numpy(), w.numpy())


def test_one_element_tensors_in_a_list_index_as_torch():
    """The fuzzer's reproducer of finding 9: such a list as an index, read and written."""
    x, y = mg.arange(24).reshape(2, 3, 4), torch.arange(24).reshape(2, 3, 4)
    # A list inside a tuple is one index tensor, made by tensor() from the list.
    assert np.array_equal(x[(0, [True, mg.tensor([-1], dtype=mg.int16), 0])].numpy(),
                          y[(0, [True, torch.tensor([-1], dtype=torch.int16), 0])].numpy())
    x[(1, [1, mg.tensor([0])])] = -5
    y[(1, [1, torch.tensor([0])])] = -5
    assert np.array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize("data,error", [("[1, LIB.tensor([2, 3])]", TypeError),
                                        ("[1.0, LIB.tensor([2.0, 3.0])]", ValueError)])
def test_a_tensor_of_several_elements_where_a_number_goes_is_refused_as_torch(data, error):
    with pytest.raises(error):
        torch.tensor(eval(data.replace("LIB", "torch")))
    with pytest.raises(error, match="only one-element tensors are read as numbers"):
        mg.tensor(eval(data.replace("LIB", "mg")))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "int64"])
@pytest.mark.parametrize("write", [False, True])
def test_entries_after_a_multi_dim_mask_address_the_dims_after_it(dtype, write):
    """Finding 10: x[(mask3d, 1)] = -5 on a (2, 2, 2, 2) tensor. A k-dim mask covers k dims
    (docs/indexing.md), so the 1 indexes dim 3: x[i, j, k, 1] = -5 for each true (i, j, k), as
    torch 2.15 does. torch 1.13 moved on by one dim after the mask and wrote other elements
    without an error. Expected values derived by hand (the element list of torch 2.15)."""
    x = mg.arange(16, dtype=getattr(mg, dtype)).reshape(2, 2, 2, 2)
    m = mg.tensor([[[True, True], [True, True]], [[True, True], [False, False]]])
    if write:
        x[(m, 1)] = -5
        want = [0, -5, 2, -5, 4, -5, 6, -5, 8, -5, 10, -5, 12, 13, 14, 15]
        assert x.flatten().tolist() == want
    else:
        # the true positions in row-major order, element 1 of dim 3 of each
        assert x[(m, 1)].tolist() == [1, 3, 5, 7, 9, 11]
