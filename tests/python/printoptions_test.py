"""mutagrad.set_printoptions against torch 1.13's repr strings (issue 35): precision,
threshold, edgeitems, linewidth, profile and sci_mode, over a table of tensors."""

import re

import pytest
import torch

import mutagrad as mg
from lib_util import from_torch

TENSORS = {
    "thirds": lambda: torch.arange(6, dtype=torch.float32).reshape(2, 3) / 3,
    "ints_as_floats": lambda: torch.tensor([1.0, 20.0, 300.0]),
    "wide_range": lambda: torch.tensor([1e-5, 1.0, 1234.5]),
    "big": lambda: torch.tensor([1e9, 2.5]),
    "long_vector": lambda: torch.linspace(-1, 1, 40, dtype=torch.float64),
    "summarized": lambda: torch.arange(2000, dtype=torch.float32).reshape(40, 50) / 7,
    "int64": lambda: torch.arange(30).reshape(3, 10),
    "scalar": lambda: torch.tensor(3.14159265),
    "nonfinite": lambda: torch.tensor([float("nan"), float("inf"), -1.5]),
    "grad": lambda: torch.tensor([0.1, 0.2], requires_grad=True),
}

OPTIONS = [
    {},
    {"precision": 2},
    {"precision": 8},
    {"precision": 0},
    {"threshold": 10},
    {"threshold": 10, "edgeitems": 1},
    {"edgeitems": 5, "threshold": 100},
    {"linewidth": 40},
    {"linewidth": 120},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "short", "precision": 6},
    {"sci_mode": True},
    {"sci_mode": False},
    {"sci_mode": True, "precision": 2},
]


@pytest.fixture(autouse=True)
def reset_options():
    yield
    torch.set_printoptions(profile="default", sci_mode=None)
    mg.set_printoptions(profile="default", sci_mode=None)


def layout(s):
    """A repr with its suffixes joined to the body: "mutagrad." is 3 characters longer than
    "torch.", so a dtype= suffix may wrap in one and not the other; the body must not differ."""
    return re.sub(r",\s+(dtype=|grad_fn=|requires_grad=|device=)", r", \1", s)


def as_mg(t):
    m = from_torch(mg, t.detach())
    return m.requires_grad_() if t.requires_grad else m


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_repr_matches_torch(options):
    torch.set_printoptions(**options)
    mg.set_printoptions(**options)
    for name, make in TENSORS.items():
        t = make()
        expected = layout(repr(t).replace("torch.", "mutagrad."))
        assert layout(repr(as_mg(t))) == expected, name
        assert layout(str(as_mg(t))) == expected, name


def test_options_persist_until_changed():
    mg.set_printoptions(precision=1)
    mg.set_printoptions(linewidth=60)  # precision stays 1, as torch
    torch.set_printoptions(precision=1)
    torch.set_printoptions(linewidth=60)
    t = TENSORS["long_vector"]()
    assert layout(repr(as_mg(t))) == layout(repr(t).replace("torch.", "mutagrad."))
    mg.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    assert repr(as_mg(t)) == repr(t).replace("torch.", "mutagrad.")


def test_cuda_tensor_follows_the_options():
    mg.set_printoptions(precision=2, threshold=5, edgeitems=1)
    x = mg.arange(12, dtype=mg.float32).reshape(3, 4) / 3
    cpu = repr(x)
    on_device = repr(x.to("cuda"))
    assert on_device == cpu[:-1] + ", device='cuda:0')"
    assert cpu == "tensor([[0.00,  ..., 1.00],\n        ...,\n        [2.67,  ..., 3.67]])"


def test_bad_options():
    with pytest.raises(ValueError, match="profile"):
        mg.set_printoptions(profile="tiny")
    with pytest.raises(ValueError, match="precision"):
        mg.set_printoptions(precision=-1)
    # A refused call changes nothing.
    assert repr(mg.tensor([1 / 3])) == "tensor([0.3333])"
