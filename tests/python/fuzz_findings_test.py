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
