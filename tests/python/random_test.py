"""Random fills, random factories and generators against torch 1.13.

torch is the oracle for the API shape (names, keywords, result shapes and dtypes), the error
kinds and the autograd semantics of the fills (one version bump, the leaf refusal, the node
names, zero gradients). The numbers themselves differ from torch's by design (docs/python.md):
they are checked by their distributions (fixed seeds, so deterministic, with bounds many
standard errors wide), by the bits being equal on the CPU and the CUDA device for one seed, and
by get_state/set_state restoring the exact sequence.
"""

import math
import warnings

import numpy as np
import pytest
import torch

import mutagrad as mg

N = 100000


def summary(x):
    """What must agree between torch and mutagrad: a tensor's shape and dtype (not its values),
    a generator's type, nested in tuples; anything else as is."""
    if isinstance(x, (torch.Tensor, mg.Tensor)):
        return ("tensor", tuple(x.shape), str(x.dtype).rsplit(".", 1)[-1])
    if isinstance(x, (torch.Generator, mg.Generator)):
        return "Generator"
    if isinstance(x, (tuple, list)):
        return tuple(summary(v) for v in x)
    return x


def outcome(fn, lib):
    """(None, summary of the result) or (the exception, its message), and the warnings' kinds."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = (None, summary(fn(lib)))
        except Exception as e:  # noqa: BLE001 - the kind is the outcome
            result = (e, str(e))
    return result, sorted({type(w.message).__name__ for w in caught})


def assert_same_api(fn):
    """fn(lib) has the same outcome in torch and mutagrad: the same shapes and dtypes, or an
    error of torch's kind (mutagrad's may be a subclass: IntOverflowError is a RuntimeError),
    and the same kinds of warnings."""
    (et, vt), wt = outcome(fn, torch)
    (em, vm), wm = outcome(fn, mg)
    if et is None or em is None:
        assert et is None and em is None, f"torch: {et!r} {vt}\nmutagrad: {em!r} {vm}"
        assert vt == vm, f"torch: {vt}\nmutagrad: {vm}"
    else:
        assert isinstance(em, type(et)), f"torch: {et!r}\nmutagrad: {em!r}"
    assert wt == wm, f"warnings: torch {wt}, mutagrad {wm}"


def z(lib, dtype="float32", n=4):
    return lib.zeros(n, dtype=getattr(lib, dtype))


# ---- API shape and argument rules, against torch -------------------------------------------

FILL_CASES = {
    # uniform_: floating only; from <= to, both finite in the dtype, to - from finite.
    "uniform_": lambda l: z(l).uniform_(),
    "uniform_ args": lambda l: z(l).uniform_(-2, 3),
    "uniform_ kw": lambda l: z(l).uniform_(**{"from": 1, "to": 2}),
    "uniform_ to kw": lambda l: z(l).uniform_(to=3),
    "uniform_ from == to": lambda l: z(l).uniform_(1, 1),
    "uniform_ from > to": lambda l: z(l).uniform_(2, 1),
    "uniform_ inf": lambda l: z(l).uniform_(0, math.inf),
    "uniform_ nan": lambda l: z(l).uniform_(math.nan, 1),
    "uniform_ float16 range": lambda l: z(l, "float16").uniform_(0, 70000),
    "uniform_ span": lambda l: z(l).uniform_(-3.4e38, 3.4e38),
    "uniform_ float64 span": lambda l: z(l, "float64").uniform_(-1e308, 1e308),
    "uniform_ int64": lambda l: z(l, "int64").uniform_(),
    "uniform_ bool": lambda l: z(l, "bool").uniform_(),
    "uniform_ generator": lambda l: z(l).uniform_(0, 1, generator=l.Generator()),
    "uniform_ generator type": lambda l: z(l).uniform_(0, 1, generator=1),
    "uniform_ 0-dim tensor bound": lambda l: z(l).uniform_(l.tensor(1.0), 2),
    # normal_: floating only; std >= 0.
    "normal_": lambda l: z(l).normal_(),
    "normal_ kw": lambda l: z(l, "float64").normal_(mean=1, std=2),
    "normal_ std 0": lambda l: z(l).normal_(0, 0),
    "normal_ std < 0": lambda l: z(l).normal_(0, -1),
    "normal_ std nan": lambda l: z(l).normal_(0, math.nan),
    "normal_ mean nan": lambda l: z(l).normal_(math.nan, 1),
    "normal_ int": lambda l: z(l, "int32").normal_(),
    "normal_ bfloat16": lambda l: z(l, "bfloat16").normal_(),
    "normal_ generator": lambda l: z(l).normal_(generator=l.Generator()),
    # exponential_: floating only; lambd >= 0 (0 gives inf in 1.13).
    "exponential_": lambda l: z(l).exponential_(),
    "exponential_ kw": lambda l: z(l).exponential_(lambd=2),
    "exponential_ 0": lambda l: z(l).exponential_(0),
    "exponential_ inf": lambda l: z(l).exponential_(math.inf),
    "exponential_ < 0": lambda l: z(l).exponential_(-1),
    "exponential_ nan": lambda l: z(l).exponential_(math.nan),
    "exponential_ int": lambda l: z(l, "int64").exponential_(),
    # bernoulli_: any dtype for self; p a number in [0, 1] or a floating tensor.
    "bernoulli_": lambda l: z(l).bernoulli_(),
    "bernoulli_ kw": lambda l: z(l).bernoulli_(p=0.3),
    "bernoulli_ int": lambda l: z(l, "int64").bernoulli_(0.5),
    "bernoulli_ bool": lambda l: z(l, "bool").bernoulli_(0.5),
    "bernoulli_ p > 1": lambda l: z(l).bernoulli_(1.5),
    "bernoulli_ p < 0": lambda l: z(l).bernoulli_(-0.1),
    "bernoulli_ p nan": lambda l: z(l).bernoulli_(math.nan),
    "bernoulli_ tensor": lambda l: z(l, "uint8").bernoulli_(l.tensor([0.5, 0.5, 1.0, 0.0])),
    "bernoulli_ tensor 0-dim": lambda l: z(l).bernoulli_(l.tensor(0.5)),
    "bernoulli_ tensor broadcast": lambda l: l.zeros(2, 3).bernoulli_(l.tensor([[0.1, 0.9, 0.5]])),
    "bernoulli_ tensor > 1": lambda l: z(l).bernoulli_(l.tensor([0.5, 2.0, 0.1, 0.0])),
    "bernoulli_ tensor int": lambda l: z(l).bernoulli_(l.tensor([1, 0, 1, 0])),
    "bernoulli_ tensor shape": lambda l: z(l).bernoulli_(l.tensor([0.5, 0.5])),
    "bernoulli_ generator": lambda l: z(l).bernoulli_(0.5, generator=l.Generator()),
    # random_: the three forms, keywords, ranges per dtype.
    "random_": lambda l: z(l).random_(),
    "random_ to": lambda l: z(l).random_(5),
    "random_ to kw": lambda l: z(l).random_(to=3),
    "random_ from to": lambda l: z(l).random_(1, 5),
    "random_ from, to kw": lambda l: z(l).random_(1, to=5),
    "random_ kw from to": lambda l: z(l).random_(**{"from": 1, "to": 3}),
    "random_ from None": lambda l: z(l, "int64").random_(5, None),
    "random_ from >= to": lambda l: z(l).random_(5, 2),
    "random_ to 0": lambda l: z(l).random_(0),
    "random_ to < 0": lambda l: z(l).random_(-1),
    "random_ int from >= to": lambda l: z(l, "int64").random_(5, 2),
    "random_ bool": lambda l: z(l, "bool").random_(),
    "random_ bool 2": lambda l: z(l, "bool").random_(2),
    "random_ bool 3": lambda l: z(l, "bool").random_(0, 3),
    "random_ bool -1": lambda l: z(l, "bool").random_(-1, 2),
    "random_ uint8 300": lambda l: z(l, "uint8").random_(0, 300),
    "random_ uint8 256": lambda l: z(l, "uint8").random_(0, 256),
    "random_ uint8 -1": lambda l: z(l, "uint8").random_(-1, 3),
    "random_ int8 -200": lambda l: z(l, "int8").random_(-200, 3),
    "random_ int8": lambda l: z(l, "int8").random_(),
    "random_ int16 -5": lambda l: z(l, "int16").random_(-5),
    "random_ int32 2**40": lambda l: z(l, "int32").random_(0, 2**40),
    "random_ int64 full": lambda l: z(l, "int64").random_(-2**63, 2**63 - 1),
    "random_ int64 2**63": lambda l: z(l, "int64").random_(-5, 2**63),
    "random_ float to > 2**24": lambda l: z(l).random_(0, 2**25),
    "random_ float16 to": lambda l: z(l, "float16").random_(5000),
    "random_ float16": lambda l: z(l, "float16").random_(),
    "random_ float64": lambda l: z(l, "float64").random_(),
    "random_ float args": lambda l: z(l).random_(1.5, 3),
    "random_ None": lambda l: z(l).random_(None),
    "random_ generator": lambda l: z(l).random_(generator=l.Generator()),
    "random_ 1, None generator": lambda l: z(l, "int64").random_(1, None, generator=l.Generator()),
    "random_ overlapping": lambda l: l.zeros(3).expand(2, 3).normal_(),
    "fill of a transpose": lambda l: l.zeros(3, 2).t().uniform_(),
    "fill of an empty tensor": lambda l: l.zeros(0, 3).normal_(),
}


@pytest.mark.parametrize("name", list(FILL_CASES))
def test_fills_match_torch_api(name):
    assert_same_api(FILL_CASES[name])


FACTORY_CASES = {
    "rand generator": lambda l: l.rand(2, 3, generator=l.Generator()),
    "rand tuple generator": lambda l: l.rand((2, 3), generator=l.Generator(), dtype=l.float64),
    "rand float16": lambda l: l.rand(3, dtype=l.float16),
    "rand int": lambda l: l.rand(3, dtype=l.int64),
    "randn generator": lambda l: l.randn(3, generator=l.Generator()),
    "randn bfloat16": lambda l: l.randn(3, dtype=l.bfloat16),
    "randn bool": lambda l: l.randn(3, dtype=l.bool),
    "randint high size": lambda l: l.randint(5, (3,), generator=l.Generator()),
    "randint low high size": lambda l: l.randint(2, 5, (3,), generator=l.Generator()),
    "randint keywords": lambda l: l.randint(low=2, high=5, size=(3,)),
    "randint high keyword": lambda l: l.randint(high=5, size=(3,)),
    "randint float": lambda l: l.randint(5, (3,), dtype=l.float32),
    "randint bool": lambda l: l.randint(5, (3,), dtype=l.bool),
    "randint low >= high": lambda l: l.randint(5, 5, (3,)),
    "randint generator type": lambda l: l.rand(3, generator=1),
    "randperm": lambda l: l.randperm(5, generator=l.Generator()),
    "randperm n=": lambda l: l.randperm(n=3),
    "randperm 0": lambda l: l.randperm(0),
    "randperm -1": lambda l: l.randperm(-1),
    "randperm float32": lambda l: l.randperm(5, dtype=l.float32),
    "randperm float64": lambda l: l.randperm(5, dtype=l.float64, device="cpu"),
    "randperm int16": lambda l: l.randperm(5, dtype=l.int16),
    "randperm bool": lambda l: l.randperm(5, dtype=l.bool),
    "randperm uint8 256": lambda l: l.randperm(256, dtype=l.uint8),
    "randperm uint8 257": lambda l: l.randperm(257, dtype=l.uint8),
    "randperm int8 129": lambda l: l.randperm(129, dtype=l.int8),
    "randperm float16 2049": lambda l: l.randperm(2049, dtype=l.float16),
    "randperm float16 2050": lambda l: l.randperm(2050, dtype=l.float16),
    "randperm requires_grad int": lambda l: l.randperm(3, requires_grad=True),
    "randperm requires_grad float": lambda l: l.randperm(3, dtype=l.float32, requires_grad=True),
    "randperm generator type": lambda l: l.randperm(3, generator=1),
    "randint_like high": lambda l: l.randint_like(l.zeros(2), 5),
    "randint_like low high": lambda l: l.randint_like(l.zeros(2), 2, 5),
    "randint_like keywords": lambda l: l.randint_like(l.zeros(2), low=1, high=5),
    "randint_like high keyword": lambda l: l.randint_like(l.zeros(2), high=5),
    "randint_like int64": lambda l: l.randint_like(l.zeros(2, dtype=l.int64), 5),
    "randint_like dtype": lambda l: l.randint_like(l.zeros(2), 5, dtype=l.int32),
    "randint_like low >= high": lambda l: l.randint_like(l.zeros(2), 5, 2),
    "randint_like bool": lambda l: l.randint_like(l.zeros(2, dtype=l.bool), 5),
    "randint_like requires_grad": lambda l: l.randint_like(l.zeros(2), 5, requires_grad=True),
    "normal tensors": lambda l: l.normal(l.zeros(2), l.ones(2)),
    "normal tensor float": lambda l: l.normal(l.zeros(2, dtype=l.float64), 1.0),
    "normal float tensor": lambda l: l.normal(0.0, l.ones(2, dtype=l.float64)),
    "normal keywords": lambda l: l.normal(mean=l.zeros(2), std=l.ones(2)),
    "normal broadcast": lambda l: l.normal(l.zeros(2, 1), l.ones(3)),
    "normal dtype of mean": lambda l: l.normal(l.zeros(2), l.ones(2, dtype=l.float64)),
    "normal sizes": lambda l: l.normal(0.0, 1.0, (2, 3)),
    "normal size kw": lambda l: l.normal(0.0, 1.0, size=(2,), generator=l.Generator()),
    "normal ints": lambda l: l.normal(0, 1, (2,)),
    "normal dtype": lambda l: l.normal(0.0, 1.0, (2,), dtype=l.float64),
    "normal long dtype": lambda l: l.normal(0.0, 1.0, (2,), dtype=l.int64),
    "normal requires_grad": lambda l: l.normal(0.0, 1.0, (3,), requires_grad=True),
    "normal no size": lambda l: l.normal(2.0, 3.0),
    "normal tensors and size": lambda l: l.normal(l.zeros(2), l.ones(2), size=(2,)),
    "normal std < 0 tensor": lambda l: l.normal(l.zeros(2), -l.ones(2)),
    "normal std < 0 number": lambda l: l.normal(l.zeros(2), -1.0),
    "normal std < 0 sized": lambda l: l.normal(0.0, -1.0, (2,)),
    "normal shapes": lambda l: l.normal(l.zeros(2), l.ones(3)),
    "normal long mean": lambda l: l.normal(l.zeros(2, dtype=l.int64), l.ones(2)),
    "bernoulli": lambda l: l.bernoulli(l.tensor([0.5, 0.2])),
    "bernoulli generator": lambda l: l.bernoulli(l.tensor([0.5, 0.2]), generator=l.Generator()),
    "bernoulli p": lambda l: l.bernoulli(l.tensor([0.5, 0.2]), 0.3),
    "bernoulli p kw": lambda l: l.bernoulli(l.tensor([0.5, 0.2]), p=0.3),
    "bernoulli > 1": lambda l: l.bernoulli(l.tensor([0.5, 2.0])),
    "bernoulli int": lambda l: l.bernoulli(l.tensor([1, 0])),
    "bernoulli float64": lambda l: l.bernoulli(l.tensor([0.5, 0.2], dtype=l.float64)),
    "bernoulli method": lambda l: l.tensor([0.5, 0.2]).bernoulli(),
    "bernoulli method p": lambda l: l.tensor([0.5, 0.2]).bernoulli(p=0.5),
}

W = [0.1, 0.2, 0.7]
MULTINOMIAL_CASES = {
    "without replacement": lambda l: l.multinomial(l.tensor(W), 2),
    "too many": lambda l: l.multinomial(l.tensor(W), 4),
    "with replacement": lambda l: l.multinomial(l.tensor(W), 4, True),
    "keywords": lambda l: l.multinomial(l.tensor(W), 4, replacement=True, generator=l.Generator()),
    "0 samples": lambda l: l.multinomial(l.tensor(W), 0),
    "-1 samples": lambda l: l.multinomial(l.tensor(W), -1),
    "negative": lambda l: l.multinomial(l.tensor([0.1, -0.2, 0.7]), 1),
    "inf": lambda l: l.multinomial(l.tensor([0.1, math.inf, 0.7]), 1),
    "nan": lambda l: l.multinomial(l.tensor([0.1, math.nan, 0.7]), 1),
    "all zero": lambda l: l.multinomial(l.tensor([0.0, 0.0, 0.0]), 1),
    "zeros drawn last": lambda l: l.multinomial(l.tensor([0.0, 0.0, 1.0]), 2),
    "2-D": lambda l: l.multinomial(l.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]), 1),
    "2-D zero row": lambda l: l.multinomial(l.tensor([[0.0, 1.0, 1.0], [0.0, 0.0, 0.0]]), 1),
    "3-D": lambda l: l.multinomial(l.zeros(2, 2, 2), 1),
    "0-D": lambda l: l.multinomial(l.tensor(1.0), 1),
    "int": lambda l: l.multinomial(l.tensor([1, 2, 3]), 1),
    "float64": lambda l: l.multinomial(l.tensor([1.0, 2.0, 3.0], dtype=l.float64), 1),
    "empty": lambda l: l.multinomial(l.zeros(0), 1),
    "no rows": lambda l: l.multinomial(l.zeros(0, 3), 1),
    "no categories": lambda l: l.multinomial(l.zeros(2, 0), 1),
    "method": lambda l: l.tensor(W).multinomial(2),
    "requires grad": lambda l: l.multinomial(l.ones(3, requires_grad=True), 2),
    "expanded rows": lambda l: l.multinomial(l.tensor([[0.2, 0.8]]).expand(3, 2), 2),
    "tiny weights": lambda l: l.multinomial(l.tensor([1e-30, 1e-30]), 2),
    "generator type": lambda l: l.multinomial(l.tensor(W), 1, generator=1),
}

GENERATOR_CASES = {
    "Generator()": lambda l: l.Generator(),
    "device=cpu": lambda l: l.Generator(device="cpu"),
    "two positionals": lambda l: l.Generator("cpu", 3),
    "manual_seed returns it": lambda l: l.Generator().manual_seed(3),
    "initial_seed": lambda l: l.Generator().manual_seed(3).initial_seed(),
    "default seed": lambda l: l.Generator().initial_seed(),
    "negative seed": lambda l: l.Generator().manual_seed(-1).initial_seed(),
    "seed 2**64": lambda l: l.Generator().manual_seed(2**64),
    "seed str": lambda l: l.Generator().manual_seed("a"),
    "seed float": lambda l: l.Generator().manual_seed(1.5),
    "seed bool": lambda l: l.Generator().manual_seed(True),
    "module seed float": lambda l: l.manual_seed(1.5).initial_seed(),
    "seed()": lambda l: type(l.Generator().seed()).__name__,
    "get_state": lambda l: l.Generator().get_state().dtype == l.uint8,
    "get_state dims": lambda l: l.Generator().get_state().dim(),
    "set_state returns it": lambda l: (lambda g: g.set_state(g.get_state()) is g)(l.Generator()),
    "set_state float": lambda l: l.Generator().set_state(l.zeros(3)),
    "set_state list": lambda l: l.Generator().set_state([1, 2]),
    "set_state wrong size": lambda l: l.Generator().set_state(l.zeros(3, dtype=l.uint8)),
    "device property": lambda l: str(l.Generator().device),
    "manual_seed module": lambda l: l.manual_seed(5) is l.default_generator,
    "initial_seed module": lambda l: (l.manual_seed(7), l.initial_seed())[1],
    "seed module": lambda l: type(l.seed()).__name__,
    "get_rng_state": lambda l: l.get_rng_state().dtype == l.uint8,
    "set_rng_state": lambda l: l.set_rng_state(l.get_rng_state()),
    "set_rng_state float": lambda l: l.set_rng_state(l.zeros(3)),
    "random module": lambda l: (l.random.initial_seed() == l.initial_seed(),
                                l.random.get_rng_state().dtype == l.uint8),
    "default_generator": lambda l: l.default_generator,
}


@pytest.mark.parametrize("name", list(FACTORY_CASES))
def test_factories_match_torch_api(name):
    assert_same_api(FACTORY_CASES[name])


@pytest.mark.parametrize("name", list(MULTINOMIAL_CASES))
def test_multinomial_matches_torch_api(name):
    assert_same_api(MULTINOMIAL_CASES[name])


@pytest.mark.parametrize("name", list(GENERATOR_CASES))
def test_generators_match_torch_api(name):
    assert_same_api(GENERATOR_CASES[name])


def test_error_messages_name_the_rule():
    """Besides the kind, the message says what was wrong with torch's words."""
    def message(fn):
        with pytest.raises(RuntimeError) as info:
            fn()
        return str(info.value)

    assert "expects to return a [from, to) range, but found from=2 > to=1" in message(
        lambda: mg.zeros(3).uniform_(2, 1))
    assert "expects std >= 0.0, but found std -1" in message(lambda: mg.zeros(3).normal_(0, -1))
    assert "expects p to be in [0, 1], but got p=1.5" in message(
        lambda: mg.zeros(3).bernoulli_(1.5))
    assert "expects lambda >= 0.0, but found lambda=-1" in message(
        lambda: mg.zeros(3).exponential_(-1))
    assert "random_ expects 'from' to be less than 'to', but got from=5 >= to=2" in message(
        lambda: mg.zeros(3).random_(5, 2))
    assert "to - 1=2 is out of bounds for bool" in message(
        lambda: mg.zeros(3, dtype=mg.bool).random_(0, 3))
    assert "cannot sample n_sample > prob_dist.size(-1) samples without replacement" in message(
        lambda: mg.multinomial(mg.tensor(W), 4))
    assert "probability tensor contains either `inf`, `nan` or element < 0" in message(
        lambda: mg.multinomial(mg.tensor([0.1, -0.2]), 1))
    assert "invalid multinomial distribution (sum of probabilities <= 0)" in message(
        lambda: mg.multinomial(mg.tensor([0.0, 0.0]), 1))
    assert "prob_dist must be 1 or 2 dim" in message(lambda: mg.multinomial(mg.zeros(2, 2, 2), 1))
    assert "expects all elements of std >= 0.0" in message(
        lambda: mg.normal(mg.zeros(2), -mg.ones(2)))


# ---- Tracked writes, against torch ---------------------------------------------------------

FILLS = {
    "normal_": (lambda y, l: y.normal_(), "NormalBackward0"),
    "uniform_": (lambda y, l: y.uniform_(), "UniformBackward0"),
    "exponential_": (lambda y, l: y.exponential_(), "ExponentialBackward0"),
    "bernoulli_ p": (lambda y, l: y.bernoulli_(0.5), "BernoulliBackward2"),
    "bernoulli_ tensor": (lambda y, l: y.bernoulli_(l.full((3,), 0.5, device=y.device)),
                          "BernoulliBackward1"),
    "random_": (lambda y, l: y.random_(), "RandomBackward2"),
    "random_ to": (lambda y, l: y.random_(5), "RandomBackward1"),
    "random_ from to": (lambda y, l: y.random_(1, 5), "RandomBackward0"),
}


@pytest.mark.parametrize("name", list(FILLS))
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_fills_are_tracked_writes(name, device):
    fill, node = FILLS[name]
    for lib in (torch, mg):
        dev = device if lib is mg else "cpu"
        x = lib.ones(3, requires_grad=True, device=dev)
        # A leaf that requires grad is refused in grad mode (before the arguments are read).
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation."):
            fill(x, lib)
        assert x._version == 0
        with lib.no_grad():
            fill(x, lib)
        assert x._version == 1 and x.is_leaf
        # Through a graph: one bump, torch's node, zero gradient through the fill.
        y = x * 2
        out = fill(y, lib)
        assert out is y
        assert y._version == 1
        assert y.grad_fn.name() == node
        (y * x).sum().backward()
        np.testing.assert_array_equal(x.grad.cpu().numpy(), y.detach().cpu().numpy())


def test_bernoulli_tensor_p_gets_an_edge_and_a_zero_gradient():
    for lib in (torch, mg):
        p = lib.full((3,), 0.5, requires_grad=True)
        y = lib.zeros(3)
        y.bernoulli_(p)
        assert y.requires_grad and y.grad_fn.name() == "BernoulliBackward1"
        edges = y.grad_fn.next_functions
        assert edges[0][0] is None and edges[1][0].name().endswith("AccumulateGrad")
        y.sum().backward()
        assert p.grad.tolist() == [0.0, 0.0, 0.0]


def test_samplers_with_tensor_arguments_have_zero_gradients():
    for lib in (torch, mg):
        m = lib.zeros(2, requires_grad=True)
        s = lib.ones(2, requires_grad=True)
        assert lib.normal(m, s).grad_fn.name() == "NormalBackward3"
        assert lib.normal(m, 1.0).grad_fn.name() == "NormalBackward1"
        assert lib.normal(0.0, s).grad_fn.name() == "NormalBackward2"
        gm, gs = lib.autograd.grad(lib.normal(m, s).sum(), [m, s])
        assert gm.tolist() == [0.0, 0.0] and gs.tolist() == [0.0, 0.0]
        p = lib.full((2,), 0.5, requires_grad=True)
        assert lib.bernoulli(p).grad_fn.name() == "BernoulliBackward0"
        assert p.bernoulli().grad_fn.name() == "BernoulliBackward0"
        assert lib.bernoulli(p, 0.3).grad_fn is None
        assert not lib.randint_like(p, 5).requires_grad
        assert not lib.rand_like(p).requires_grad


def test_fill_of_a_view_writes_its_base():
    for lib in (torch, mg):
        x = lib.ones(4, requires_grad=True)
        y = x * 3
        y[1:3].normal_()
        assert y._version == 1
        y.sum().backward()
        assert x.grad.tolist() == [3.0, 0.0, 0.0, 3.0]


# ---- The numbers: one seed, the same bits on every device; states ------------------------------

def bits(t):
    return t.cpu().contiguous().numpy().tobytes()


DRAWS = {
    "rand": lambda d, g: mg.rand(1000, device=d, generator=g),
    "randn float64": lambda d, g: mg.randn(1000, device=d, dtype=mg.float64, generator=g),
    "randint": lambda d, g: mg.randint(-3, 9, (1000,), device=d, generator=g),
    "rand_like": lambda d, g: mg.rand_like(mg.zeros(7, device=d), generator=g),
    "randn_like": lambda d, g: mg.randn_like(mg.zeros(7, device=d), generator=g),
    "randint_like": lambda d, g: mg.randint_like(mg.zeros(7, device=d), 3, generator=g),
    "randperm": lambda d, g: mg.randperm(500, device=d, generator=g),
    "normal sized": lambda d, g: mg.normal(1.0, 2.0, (300,), device=d, generator=g),
    "normal tensors": lambda d, g: mg.normal(mg.zeros(3, 1, device=d), mg.ones(50, device=d),
                                             generator=g),
    "bernoulli": lambda d, g: mg.bernoulli(mg.full((300,), 0.3, device=d), generator=g),
    "multinomial": lambda d, g: mg.multinomial(mg.ones(4, 30, device=d), 10, generator=g),
    "multinomial replacement": lambda d, g: mg.multinomial(mg.arange(5.0, device=d), 100, True,
                                                           generator=g),
    "uniform_ float16": lambda d, g: mg.zeros(300, device=d, dtype=mg.float16).uniform_(
        -1, 2, generator=g),
    "normal_ transposed": lambda d, g: mg.zeros(5, 60, device=d).t().normal_(generator=g),
    "exponential_": lambda d, g: mg.zeros(300, device=d).exponential_(3, generator=g),
    "bernoulli_": lambda d, g: mg.zeros(300, device=d, dtype=mg.int32).bernoulli_(0.4, generator=g),
    "random_ uint8": lambda d, g: mg.zeros(300, device=d, dtype=mg.uint8).random_(generator=g),
    "random_ int64 full": lambda d, g: mg.zeros(300, device=d, dtype=mg.int64).random_(
        -2**63, None, generator=g),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_one_seed_gives_the_same_bits_on_cpu_and_cuda(name):
    draw = DRAWS[name]
    cpu_gen = mg.Generator().manual_seed(2024)
    cuda_gen = mg.Generator(device="cuda").manual_seed(2024)
    a, b = draw("cpu", cpu_gen), draw("cuda", cuda_gen)
    assert a.device.type == "cpu" and b.device.type == "cuda"
    assert a.dtype == b.dtype and a.shape == b.shape
    assert bits(a) == bits(b)
    assert bits(cpu_gen.get_state()) == bits(cuda_gen.get_state())
    # The default generators, seeded by manual_seed: the same numbers too.
    mg.manual_seed(2024)
    c, d = draw("cpu", None), draw("cuda", None)
    assert bits(c) == bits(a) and bits(d) == bits(a)


def test_set_state_restores_the_exact_sequence():
    for device in ["cpu", "cuda"]:
        g = mg.Generator(device=device).manual_seed(11)
        mg.randn(5, generator=g, device=device)
        state = g.get_state()
        first = [bits(mg.rand(20, generator=g, device=device)),
                 bits(mg.randperm(30, generator=g, device=device)),
                 bits(mg.zeros(9, device=device).normal_(generator=g))]
        g.manual_seed(3)
        mg.rand(4, generator=g, device=device)
        assert g.set_state(state) is g
        again = [bits(mg.rand(20, generator=g, device=device)),
                 bits(mg.randperm(30, generator=g, device=device)),
                 bits(mg.zeros(9, device=device).normal_(generator=g))]
        assert again == first
        assert g.initial_seed() == 11


def test_default_generators_and_fork_rng():
    mg.manual_seed(5)
    assert mg.initial_seed() == 5 and mg.cuda.initial_seed() == 5
    state, cuda_state = mg.get_rng_state(), mg.cuda.get_rng_state()
    a, b = mg.rand(4), mg.rand(4, device="cuda")
    assert bits(a) == bits(b)
    mg.set_rng_state(state)
    mg.cuda.set_rng_state(cuda_state)
    assert bits(mg.rand(4)) == bits(a) and bits(mg.rand(4, device="cuda")) == bits(b)
    # fork_rng: draws inside leave both generators where they were.
    before = (bits(mg.get_rng_state()), bits(mg.cuda.get_rng_state()))
    with mg.random.fork_rng():
        mg.randn(10)
        mg.randn(10, device="cuda")
    assert (bits(mg.get_rng_state()), bits(mg.cuda.get_rng_state())) == before
    with mg.random.fork_rng(devices=[]):
        mg.randn(10, device="cuda")
    assert bits(mg.cuda.get_rng_state()) != before[1]
    # seed(): a fresh seed for both, returned.
    s = mg.seed()
    assert mg.initial_seed() == s and mg.cuda.initial_seed() == s
    # A generator of the wrong device type is refused, as torch.
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but found "
                                           "'cpu'"):
        mg.rand(3, device="cuda", generator=mg.Generator())
    assert str(mg.Generator("cuda").device) == "cuda:0"
    assert mg.cuda.default_generators[0].initial_seed() == s


def test_random_precision_warning_as_torch():
    for lib in (torch, mg):
        with pytest.warns(UserWarning, match="to - 1 is out of bounds"):
            lib.zeros(3).random_(0, 2**25)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.zeros(3).random_(0, 2**24)


# ---- The distributions ------------------------------------------------------------------------
# Fixed seeds, so these are deterministic; the bounds are 6 standard errors (or a chi-square
# mean plus 8 standard deviations) wide.

def values(t):
    return t.cpu().double().numpy()


def chi_square(counts, expected):
    counts, expected = np.asarray(counts, float), np.asarray(expected, float)
    return float(((counts - expected) ** 2 / expected).sum())


def chi_bound(k):
    return (k - 1) + 8 * math.sqrt(2 * (k - 1))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_distributions(device):
    g = mg.Generator(device=device).manual_seed(0)
    z = lambda dtype=mg.float64: mg.zeros(N, device=device, dtype=dtype)  # noqa: E731
    se = 6 / math.sqrt(N)
    u = values(z().uniform_(-1, 3, generator=g))
    assert u.min() >= -1 and u.max() < 3
    assert abs(u.mean() - 1) < se * math.sqrt(16 / 12) and abs(u.var() - 16 / 12) < 0.03
    n = values(z().normal_(2, 3, generator=g))
    assert abs(n.mean() - 2) < se * 3 and abs(n.var() - 9) < 6 * 9 * math.sqrt(2 / N)
    e = values(z().exponential_(4, generator=g))
    assert e.min() >= 0 and abs(e.mean() - 0.25) < se * 0.25
    b = values(z(mg.int64).bernoulli_(0.25, generator=g))
    assert set(np.unique(b)) <= {0, 1} and abs(b.mean() - 0.25) < se * math.sqrt(0.25 * 0.75)
    r = values(z(mg.int32).random_(-2, 5, generator=g)).astype(int)
    assert chi_square(np.bincount(r + 2, minlength=7), [N / 7] * 7) < chi_bound(7)
    k = values(mg.randint(10, (N,), generator=g, device=device)).astype(int)
    assert chi_square(np.bincount(k, minlength=10), [N / 10] * 10) < chi_bound(10)
    p = values(mg.randperm(1000, generator=g, device=device)).astype(int)
    assert sorted(p) == list(range(1000))
    w = mg.tensor([3.0, 0.0, 1.0], device=device)
    m = values(mg.multinomial(w, N, True, generator=g)).astype(int)
    counts = np.bincount(m, minlength=3)
    assert counts[1] == 0
    assert chi_square(counts[[0, 2]], [0.75 * N, 0.25 * N]) < chi_bound(2)
    rows = values(mg.multinomial(w.expand(N // 10, 3), 2, generator=g)).astype(int)
    assert (rows[:, 0] != rows[:, 1]).all() and (rows[:, 0] != 1).all()
    assert chi_square(np.bincount(rows[:, 0], minlength=3)[[0, 2]],
                      [0.75 * N / 10, 0.25 * N / 10]) < chi_bound(2)
