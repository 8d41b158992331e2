"""mutagrad.autograd.graph: the "snapshot" mutation policy from Python, against hand-derived
gradients, and the default "error" policy against torch's behaviour."""

import pytest
import torch

import mutagrad as mg


def test_default_policy_is_error_and_raises_like_torch():
    assert mg.autograd.graph.get_mutation_policy() == "error"
    for lib in (torch, mg):
        a = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        h = a * 2
        loss = (h * h).sum()
        h[0] = 0.0
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_snapshot_gives_gradients_at_the_saved_values_and_keeps_the_write():
    a = mg.tensor([1.0, 2.0, 3.0], dtype=mg.float64, requires_grad=True)
    with mg.autograd.graph.allow_mutation_on_saved_tensors():
        assert mg.autograd.graph.get_mutation_policy() == "snapshot"
        h = a * 2
        alias = h[1:]
        loss = (h * h).sum()
        h[0] = 0.0
        h[1:] += 1.0
        loss.backward()
    assert mg.autograd.graph.get_mutation_policy() == "error"
    # d/da sum((2a)^2) = 8a, at the values h had when MulBackward0 saved it.
    assert a.grad.tolist() == [8.0, 16.0, 24.0]
    # The writes reached h and its alias (float arithmetic here is exact).
    assert h.tolist() == [0.0, 5.0, 7.0]
    assert alias.tolist() == [5.0, 7.0]
    assert h._version == 3  # h[0] = 0; h[1:] += 1 is an add_ and a setitem (as in torch)


def test_snapshot_supports_double_backward():
    a = mg.tensor([0.5, -1.0], dtype=mg.float64, requires_grad=True)
    with mg.autograd.graph.allow_mutation_on_saved_tensors():
        h = a * 1.0
        y = (h * h * h).sum()
        (g,) = mg.autograd.grad(y, a, create_graph=True)
        h.mul_(10.0)
        (gg,) = mg.autograd.grad(g.sum(), a)
    # y = sum(a^3): g = 3a^2, d(sum g)/da = 6a, at the saved (unscaled) values.
    assert g.tolist() == [0.75, 3.0]
    assert gg.tolist() == [3.0, -6.0]


def test_policy_is_restored_after_an_exception_and_bad_names_are_refused():
    with pytest.raises(KeyError):
        with mg.autograd.graph.mutation_policy("snapshot"):
            raise KeyError("boom")
    assert mg.autograd.graph.get_mutation_policy() == "error"
    with pytest.raises(ValueError, match="expected 'error' \\(the default\\) or 'snapshot'"):
        with mg.autograd.graph.mutation_policy("copy"):
            pass
    assert mg.autograd.graph.get_mutation_policy() == "error"
