"""The Python conveniences of python/src/mutagrad/_conveniences.py against torch 1.13: Python
protocols (__format__, __bool__, __index__, __contains__, __int__/__float__, len, iter),
.data's setter, as_tensor, new_*, mT/mH/H/T, movedim/moveaxis/swapaxes/swapdims, nonzero and
where, type(), finfo/iinfo, promote_types/result_type/can_cast, the default dtype,
non_blocking=, device= on the factories, and NumPy's axis=/keepdims= names.

Each scenario runs with `lib = torch` and `lib = mutagrad` and compares values, dtypes, shapes,
node names and exception kinds (api_util.same_ok / same_outcome). Where mutagrad differs on
purpose (the 'mutagrad.' prefix of type names, .data = another tensor, set_default_dtype(float64))
the expected outcome is written out by hand.
"""

import gc
import itertools
import operator
import warnings

import numpy as np
import pytest
import torch

import mutagrad as mg
from mutagrad import _conveniences
from api_util import LIBS, same, same_ok, same_outcome

DTYPES = ("float32", "float64", "int32", "int64", "bool")


def dt(lib, name):
    return getattr(lib, name)


def sample(lib, name, shape=(2, 3)):
    """A tensor of dtype `name` with distinct values (zeros and ones for bool)."""
    n = int(np.prod(shape))
    values = (np.arange(n) % 2 == 1) if name == "bool" else np.arange(n) - 2
    return lib.tensor(values.reshape(shape).tolist(), dtype=dt(lib, name))


# ---- Python protocols ------------------------------------------------------------------------

FORMAT_DATA = [1.5, -2.25, 7, True, [1.5], [[2]], [1.5, 2.0], [1, 2], []]
FORMAT_SPECS = ["", ".4f", ".2e", ">10", "d", "+", "x", "g"]


@pytest.mark.parametrize("spec", FORMAT_SPECS)
@pytest.mark.parametrize("data", FORMAT_DATA, ids=[repr(d) for d in FORMAT_DATA])
def test_format_matches_torch(data, spec):
    same_outcome(lambda lib: format(lib.tensor(data), spec))


def test_format_in_f_strings():
    def run(lib):
        loss = (lib.tensor([1.0, 2.0, 4.0]) ** 2).mean()
        wide = lib.tensor(2.0, dtype=lib.float64)
        return f"loss {loss:.4f}", f"{loss}", f"{lib.tensor(3):03d}", f"{wide:e}"

    same_ok(run)


def test_format_of_a_cuda_tensor():
    loss = mg.tensor(0.125, device="cuda")
    assert f"{loss:.3f}" == "0.125" and f"{loss}" == "0.125"


@pytest.mark.parametrize("data", [[1, 2], [], [[1.0, 0.0]], [[]], 0.0, 2, [True], [[0]],
                                  [float("nan")]], ids=repr)
def test_bool_matches_torch(data):
    kind = same_outcome(lambda lib: bool(lib.tensor(data)))
    if kind != "ok":
        _, message = _outcome(lambda lib: bool(lib.tensor(data)), mg)
        _, expected = _outcome(lambda lib: bool(lib.tensor(data)), torch)
        assert expected.rstrip(".") in message  # torch's text, then ours


def _outcome(fn, lib):
    try:
        return "ok", fn(lib)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)


def test_bool_in_conditions():
    def run(lib):
        x = lib.tensor([3.0, -1.0])
        return ["big" if x.max() > 2 else "small", "neg" if (x < 0).sum() else "pos",
                bool(lib.tensor([[0]])), not lib.tensor(0.0)]

    same_ok(run)


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor(1), lambda lib: lib.tensor([2]), lambda lib: lib.tensor([[0]]),
    lambda lib: lib.tensor(1, dtype=lib.int32), lambda lib: lib.tensor(True),
    lambda lib: lib.tensor(1.0), lambda lib: lib.tensor([1, 2]), lambda lib: lib.tensor([]),
    lambda lib: lib.tensor([1.0], dtype=lib.float64), lambda lib: lib.tensor(-1),
], ids=range(10))
def test_index_matches_torch(make):
    same_outcome(lambda lib: [10, 20, 30][make(lib)])
    same_outcome(lambda lib: operator.index(make(lib)))
    same_outcome(lambda lib: list(range(make(lib))))


ELEMENTS = [2, 2.0, 5, True, False, -0.0, float("nan"), "a", None, [2], (1, 2), np.float64(3.0),
            np.int64(1)]


@pytest.mark.parametrize("element", ELEMENTS, ids=repr)
@pytest.mark.parametrize("data", [[1, 2, 3], [[1.0, 2.0], [0.0, 3.0]], [], 3.0, [True]], ids=repr)
def test_contains_numbers_matches_torch(data, element):
    same_outcome(lambda lib: element in lib.tensor(data))


@pytest.mark.parametrize("pair", [
    ([1, 2], 2), ([1, 2], [2, 3]), ([[1, 2], [2, 3]], [2, 3]), ([[1, 2], [2, 3]], [3, 2]),
    ([1], [1, 2]), ([1, 2], [1, 2, 3]), ([1.5, 2.0], 1.5), ([], 1), ([True, False], [False]),
], ids=repr)
def test_contains_tensors_matches_torch(pair):
    data, element = pair
    same_outcome(lambda lib: lib.tensor(element) in lib.tensor(data))


def test_contains_on_cuda():
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda")
    assert 3 in x and 5 not in x and mg.tensor([3.0, 4.0], device="cuda") in x


@pytest.mark.parametrize("data", [[1, 2], [], [[2.5]], [3.7], 2.5, True, [[1, 2]]], ids=repr)
def test_int_and_float_match_torch(data):
    same_outcome(lambda lib: int(lib.tensor(data)))
    same_outcome(lambda lib: float(lib.tensor(data)))


@pytest.mark.parametrize("data", [3.0, [1, 2], [[1, 2], [3, 4]], [], [[]]], ids=repr)
def test_len_and_iter_match_torch(data):
    same_outcome(lambda lib: len(lib.tensor(data)))
    same_outcome(lambda lib: list(lib.tensor(data)))
    same_outcome(lambda lib: [r.grad_fn.name() for r in lib.tensor(data, requires_grad=True) * 2]
                 if lib.tensor(data).dim() and lib.tensor(data).numel() else None)


# ---- .data -----------------------------------------------------------------------------------

def _sgd(lib, device=None, steps=3):
    torch_like = {"device": device} if device else {}
    w = lib.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True, **torch_like)
    b = lib.tensor([0.1, -0.2], requires_grad=True, **torch_like)
    x = lib.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], **torch_like)
    history = []
    for _ in range(steps):
        loss = ((x @ w + b) ** 2).mean()
        loss.backward()
        w.data -= 0.1 * w.grad
        b.data = b.data  # assigns the tensor b.data returned: changes nothing
        b.data *= 0.5
        w.grad.zero_()
        b.grad.zero_()
        history.append(loss.item())
    return (w.detach().cpu(), b.detach().cpu(), w._version, b._version, w.is_leaf,
            w.requires_grad, history)


def test_data_in_place_update_matches_torch():
    same(_sgd(torch), _sgd(mg), tol=1e-6)


def test_data_in_place_update_on_cuda_matches_torch():
    same(_sgd(torch), _sgd(mg, device="cuda"), tol=1e-6)


@LIBS
def test_data_assignments_that_change_nothing(lib):
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    w.data = w
    d = w.data
    w.data = d
    w.data += 1
    w.data.mul_(2)
    assert w.tolist() == [4.0, 6.0] and w._version == 0 and w.requires_grad and w.is_leaf


@LIBS
def test_data_of_a_non_tensor_raises_type_error(lib):
    w = lib.tensor([1.0, 2.0])
    with pytest.raises(TypeError):
        w.data = 5
    with pytest.raises(TypeError):
        w.data = [1.0, 2.0]


@pytest.mark.parametrize("make", [
    lambda lib, w: lib.tensor([5.0, 6.0]), lambda lib, w: w.detach(),
    lambda lib, w: w.detach().clone(), lambda lib, w: lib.zeros(3),
    lambda lib, w: lib.zeros(2, 2).data, lambda lib, w: w.data.view(2, 1),
    lambda lib, w: lib.tensor([1.0, 2.0], dtype=lib.float64),
], ids=["other", "detach", "clone", "other-shape", "other's data", "data-reshaped", "float64"])
def test_data_assignment_takes_the_other_tensors_storage_as_torch(make):
    # x.data = other: w takes other's storage, shape and dtype (writes to other show in w),
    # keeping its identity, requires_grad and version counter.
    results = {}
    for lib in (torch, mg):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        other = make(lib, w)
        w.data = other
        with lib.no_grad():
            other.view(-1)[0] = 9.0
        results[lib.__name__] = (w.tolist(), tuple(w.shape), str(w.dtype).split(".")[-1],
                                 w.requires_grad, w.is_leaf)
        (w * 2).sum().backward()
        results[lib.__name__] += (w.grad.tolist(),)
    assert results["torch"] == results["mutagrad"]


def test_data_assignment_on_a_view_is_refused():
    a = mg.zeros(2, 3)
    view = a[0]
    with pytest.raises(RuntimeError):
        view.data = mg.ones(3)
    assert view.tolist() == [0.0, 0.0, 0.0]


def test_data_bookkeeping_keeps_nothing_alive():
    gc.collect()
    before = len(_conveniences._issued)
    w = mg.zeros(4, requires_grad=True)
    for _ in range(100):
        w.data -= 1
        w.data.add_(1)
    gc.collect()
    assert len(_conveniences._issued) == before
    assert w.tolist() == [0.0] * 4


# ---- as_tensor -------------------------------------------------------------------------------

AS_TENSOR_DATA = [[1, 2], [1.5, 2], 3.5, True, [[1, 2], [3, 4]], np.array([1.0, 2.0]),
                  np.arange(6, dtype=np.int32).reshape(2, 3), np.float64(2.5), np.array(3),
                  np.arange(3.0)[::-1], np.arange(8.0)[::2]]


@pytest.mark.parametrize("dtype", [None, "float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("data", AS_TENSOR_DATA, ids=range(len(AS_TENSOR_DATA)))
def test_as_tensor_matches_torch(data, dtype):
    same_outcome(lambda lib: lib.as_tensor(data, dtype=dt(lib, dtype) if dtype else None))


def test_as_tensor_of_a_tensor():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.as_tensor(x, dtype=lib.float64)
        return (lib.as_tensor(x) is x, lib.as_tensor(x, dtype=lib.float32) is x,
                lib.as_tensor(x, device="cpu") is x, y is x, y.dtype, y.grad_fn.name(),
                lib.as_tensor(data=[1]))

    same_ok(run)


@LIBS
def test_as_tensor_shares_numpy_memory(lib):
    a = np.array([1.0, 2.0])
    t = lib.as_tensor(a)
    a[0] = 9.0
    assert t.tolist() == [9.0, 2.0]
    c = lib.as_tensor(a, dtype=lib.float32)  # a conversion copies
    a[1] = 7.0
    assert c.tolist() == [9.0, 2.0]
    t[1] = 5.0
    assert a[1] == 5.0


def test_as_tensor_to_cuda():
    x = mg.tensor([1.0, 2.0])
    c = mg.as_tensor(x, device="cuda")
    assert c.is_cuda and c.tolist() == [1.0, 2.0] and mg.as_tensor(c, device="cuda") is c
    assert mg.as_tensor(np.array([1, 2]), device="cuda").is_cuda
    assert mg.as_tensor([1.5], device="cuda", dtype=mg.float64).dtype == mg.float64


# ---- new_* ----------------------------------------------------------------------------------

NEW_FORMS = {
    "zeros *size": lambda x, lib: x.new_zeros(2, 3),
    "zeros tuple": lambda x, lib: x.new_zeros((2, 3)),
    "zeros list": lambda x, lib: x.new_zeros([2]),
    "zeros Size": lambda x, lib: x.new_zeros(x.shape),
    "zeros 0-d": lambda x, lib: x.new_zeros(()),
    "zeros size=": lambda x, lib: x.new_zeros(size=(2,)),
    "zeros dtype": lambda x, lib: x.new_zeros(2, dtype=lib.int64),
    "zeros dtype=float": lambda x, lib: x.new_zeros(2, dtype=float),
    "zeros rg": lambda x, lib: x.new_zeros(2, dtype=lib.float32, requires_grad=True).requires_grad,
    "zeros device": lambda x, lib: x.new_zeros(2, device="cpu"),
    "ones": lambda x, lib: x.new_ones(3),
    "ones ()": lambda x, lib: x.new_ones(()),
    "ones dtype": lambda x, lib: x.new_ones((1, 2), dtype=lib.bool),
    "full": lambda x, lib: x.new_full((2,), 7),
    "full float": lambda x, lib: x.new_full((2, 1), 7.75),
    "full bool": lambda x, lib: x.new_full([2], True),
    "full kw": lambda x, lib: x.new_full(size=(2,), fill_value=3),
    "full dtype": lambda x, lib: x.new_full((2,), 3, dtype=lib.float64),
    "empty": lambda x, lib: (x.new_empty(2, 3).shape, x.new_empty((0,)).dtype),
    "empty dtype": lambda x, lib: x.new_empty(2, dtype=lib.int32).dtype,
    "tensor list": lambda x, lib: x.new_tensor([1, 2]),
    "tensor floats": lambda x, lib: x.new_tensor([1.5, -2.0]),
    "tensor bools": lambda x, lib: x.new_tensor([True, False]),
    "tensor scalar": lambda x, lib: x.new_tensor(3),
    "tensor numpy": lambda x, lib: x.new_tensor(np.array([1, 2])),
    "tensor dtype": lambda x, lib: x.new_tensor([1.5], dtype=lib.float64),
    "tensor data=": lambda x, lib: x.new_tensor(data=[1]),
    "tensor rg": lambda x, lib: x.new_tensor([1.0], dtype=lib.float32, requires_grad=True).is_leaf,
    "tensor of tensor": lambda x, lib: x.new_tensor(lib.tensor([1.5, 2.5])),
    "tensor of x": lambda x, lib: (x.new_tensor(x), x.new_tensor(x).requires_grad),
    # errors
    "no size": lambda x, lib: x.new_ones(),
    "float size": lambda x, lib: x.new_zeros(2.5),
    "float in sizes": lambda x, lib: x.new_zeros(2, 3.0),
    "negative": lambda x, lib: x.new_zeros(-1),
    "two tuples": lambda x, lib: x.new_zeros((2,), (3,)),
    "full int size": lambda x, lib: x.new_full(2, 7),
    "full no value": lambda x, lib: x.new_full((2,)),
    "tensor ragged": lambda x, lib: x.new_tensor([[1], [2, 3]]),
}


@pytest.mark.parametrize("base", DTYPES)
@pytest.mark.parametrize("form", list(NEW_FORMS), ids=list(NEW_FORMS))
def test_new_factories_match_torch(form, base):
    def run(lib):
        x = sample(lib, base)
        if base in ("float32", "float64"):
            x.requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns for new_tensor(tensor); mutagrad doesn't
            return NEW_FORMS[form](x, lib)

    same_outcome(run)


def test_new_factories_keep_the_device():
    x = mg.ones(2, dtype=mg.float64, device="cuda")
    for y in [x.new_zeros(3), x.new_ones(1, 2), x.new_full((2,), 1.5), x.new_empty(4),
              x.new_tensor([1, 2])]:
        assert y.is_cuda and y.dtype == mg.float64
    assert not x.new_zeros(2, device="cpu").is_cuda
    assert x.new_tensor(mg.tensor([1, 2])).is_cuda


# ---- views -----------------------------------------------------------------------------------

SHAPES = [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 2)]
VIEWS = {
    "mT": lambda x: x.mT, "mH": lambda x: x.mH, "H": lambda x: x.H, "T": lambda x: x.T,
    "movedim": lambda x: x.movedim(0, -1), "moveaxis": lambda x: x.moveaxis(-1, 0),
    "movedim tuple": lambda x: x.movedim((0, 1), (1, 0)),
    "movedim empty": lambda x: x.movedim((), ()),
    "swapaxes": lambda x: x.swapaxes(0, -1), "swapdims": lambda x: x.swapdims(-1, 0),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("view", list(VIEWS), ids=list(VIEWS))
def test_views_match_torch(view, shape):
    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = lib.arange(float(np.prod(shape))).reshape(shape).requires_grad_()
            x = base * 1
            y = VIEWS[view](x)
        # 0-d movedim: torch's node is AliasBackward0, ours ViewBackward0 (test below).
        alias = shape == () and view.startswith(("move", "movedim"))
        out = [y, None if alias or y.grad_fn is None else y.grad_fn.name(), y is x]
        # A view: a write through it shows in x, and the gradient flows back through it.
        y[(0,) * y.dim()] = -100.0
        (y * lib.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        return out + [x, base.grad]

    same_outcome(run)


def test_movedim_of_0d_is_a_view():
    # torch names the 0-d movedim node AliasBackward0, mutagrad ViewBackward0 (no alias op).
    z = mg.tensor(2.0, requires_grad=True)
    y = z.movedim(0, 0)
    assert y.grad_fn.name() == "ViewBackward0" and y.item() == 2.0


MOVEDIM_ARGS = [(0, 2), (-1, 0), ((0, 2), (2, 0)), ((0, -1), (1, 0)), ([0], [1]), ((0, 1), (1,)),
                (3, 0), (0, -4), ((0, 0), (1, 2)), ((0, 1), (0, 0)), (0.5, 1), ((0,), 1),
                ("a", 1), (1, 1)]


@pytest.mark.parametrize("args", MOVEDIM_ARGS, ids=repr)
def test_movedim_arguments_match_torch(args):
    same_outcome(lambda lib: lib.zeros(2, 3, 4).movedim(*args).shape)
    same_outcome(lambda lib: lib.movedim(lib.zeros(2, 3, 4), *args).shape)
    same_outcome(lambda lib: lib.moveaxis(lib.zeros(2, 3, 4), *args).shape)


def test_movedim_keywords_and_module_forms():
    def run(lib):
        x = lib.arange(24).reshape(2, 3, 4)
        return (x.movedim(source=0, destination=1), lib.movedim(x, source=-1, destination=0),
                lib.swapaxes(x, 0, 2), lib.swapdims(x, 1, 2), x.movedim(lib.tensor(0), 1),
                lib.tensor(2.0).movedim(-1, 0), lib.tensor(2.0).swapaxes(0, 0))

    same_ok(run)


def test_0d_mT_H_mH_return_the_tensor_itself():
    def run(lib):
        z = lib.tensor(2.0, requires_grad=True)
        return z.mT is z, z.H is z, z.mH is z, z.T.grad_fn.name()

    same_ok(run)


def test_T_warns_once_per_process_as_torch_1_13():
    _conveniences._warned_T = False
    x = mg.zeros(2, 3, 4)
    with pytest.warns(UserWarning, match="dimension other than 2"):
        assert x.T.shape == (4, 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.T.shape == (4, 3, 2) and mg.zeros(3).T.shape == (3,)
    _conveniences._warned_T = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mg.zeros(2, 3).T  # 0-d and 2-d never warn
        mg.zeros(()).T


def test_ndimension_nelement_dim_numel_match_torch():
    same_ok(lambda lib: [(x.ndimension(), x.nelement(), x.dim(), x.numel(), lib.numel(x),
                          x.ndim, x.is_floating_point(), lib.is_floating_point(x))
                         for x in [lib.zeros(2, 3), lib.tensor(1), lib.zeros(0, dtype=lib.bool),
                                   lib.ones(1, dtype=lib.float64)]])
    same_outcome(lambda lib: lib.is_floating_point(1.0))


# ---- nonzero and where -----------------------------------------------------------------------

NONZERO_DATA = [
    [[0, 1], [2, 0]], [1, 0, 3], 3, 0, [], [[]], [0.5, float("nan"), -0.0, 0.0],
    [True, False, True], [[[0, 1], [1, 1]], [[0, 0], [1, 0]]], [[0.0, 0.0]], 2.5,
]


@pytest.mark.parametrize("dtype", [None, "float64", "int32", "bool"])
@pytest.mark.parametrize("data", NONZERO_DATA, ids=range(len(NONZERO_DATA)))
def test_nonzero_matches_torch(data, dtype):
    if dtype in ("int32", "bool") and data == NONZERO_DATA[6]:
        data = [0.5, 2.0, -0.0, 0.0]  # NaN to int32: torch raises, mutagrad.tensor converts

    def make(lib):
        return lib.tensor(data, dtype=dt(lib, dtype) if dtype else None)

    same_outcome(lambda lib: make(lib).nonzero())
    same_outcome(lambda lib: make(lib).nonzero(as_tuple=True))
    same_outcome(lambda lib: lib.nonzero(make(lib)))
    same_outcome(lambda lib: lib.nonzero(make(lib), as_tuple=True))
    same_outcome(lambda lib: lib.where(make(lib)))


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 0, 3), (2, 3, 2, 2)], ids=str)
def test_nonzero_random_and_on_cuda(shape):
    rng = np.random.default_rng(len(shape))
    values = rng.integers(0, 3, size=shape) * (rng.random(shape) < 0.5)
    t = torch.from_numpy(values)
    m = mg.from_numpy(values.copy())
    same(t.nonzero(), m.nonzero())
    same(t.nonzero(as_tuple=True), m.nonzero(as_tuple=True))
    same(t.nonzero(), m.cuda().nonzero().cpu())
    assert all(c.is_cuda for c in mg.where(m.cuda() > 0))
    same(torch.where(t > 0), tuple(c.cpu() for c in mg.where(m.cuda() > 0)))
    # The coordinates index the nonzero elements back.
    same(t[t.nonzero(as_tuple=True)], m[m.nonzero(as_tuple=True)])


def test_nonzero_of_a_tensor_that_requires_grad():
    def run(lib):
        x = lib.tensor([[0.0, 1.5], [2.0, 0.0]], requires_grad=True)
        n = x.nonzero()
        return n, n.requires_grad, n.grad_fn is None, x[x.nonzero(as_tuple=True)].grad_fn.name()

    same_ok(run)


@pytest.mark.parametrize("bad", [
    lambda lib: lib.where(lib.tensor([True]), 1),
    lambda lib: lib.where(lib.tensor([True]), None, 1),
    lambda lib: lib.where([True]), lambda lib: lib.tensor([1]).nonzero(True),
    lambda lib: lib.where(lib.tensor([1, 0]), 1.0, 2.5),
    lambda lib: lib.where(lib.tensor([True]), "a", 1),
], ids=range(6))
def test_where_and_nonzero_errors_match_torch(bad):
    assert same_outcome(bad) != "ok"


WHERE_BRANCHES = ["int32", "int64", "bool", "float32", "float64", "0d-int32", "0d-float64",
                  "0d-bool", 1, 2.5, True, False, -3, 0.0]


def _branch(lib, spec, n=3):
    if not isinstance(spec, str):
        return spec
    if spec.startswith("0d-"):
        return lib.tensor(1, dtype=dt(lib, spec[3:]))
    return sample(lib, spec, (n,))


@pytest.mark.parametrize("x, y", list(itertools.product(WHERE_BRANCHES, repeat=2)), ids=repr)
def test_where_with_numbers_matches_torch(x, y):
    def run(lib):
        cond = lib.tensor([True, False, True])
        return lib.where(cond, _branch(lib, x), _branch(lib, y))

    same_outcome(run)


def test_where_with_numbers_gradients_and_devices():
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        cond = x > 1.5
        y = lib.where(cond, x, 0.5)
        z = lib.where(cond, 2, x * 2)
        (y * 3 + z).sum().backward()
        return y, z, y.grad_fn.name(), x.grad, lib.where(cond, 1, 0), lib.where(condition=cond)

    same_ok(run)
    c = mg.tensor([True, False], device="cuda")
    out = mg.where(c, 1.5, 0)
    assert out.is_cuda and out.tolist() == [1.5, 0.0] and out.dtype == mg.float32
    out = mg.where(c, mg.tensor([1, 2], device="cuda"), 2.5)
    assert out.is_cuda and out.tolist() == [1.0, 2.5]


# ---- type() ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_type_names(dtype):
    t, m = sample(torch, dtype), sample(mg, dtype)
    # Ours say 'mutagrad.' where torch says 'torch.' (as dtypes print mutagrad.float32).
    assert m.type() == t.type().replace("torch.", "mutagrad.")
    assert m.type(dtype=None) == m.type()
    assert m.cuda().type() == t.type().replace("torch.", "mutagrad.cuda.")


@pytest.mark.parametrize("target", ["FloatTensor", "DoubleTensor", "IntTensor", "LongTensor",
                                    "BoolTensor"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_type_conversions_match_torch(dtype, target):
    def run(lib):
        x = sample(lib, dtype)
        y = x.type("torch." + target)
        return y, y is x, x.type(y.dtype) is x, x.type(y.dtype, non_blocking=True)

    same_ok(run)
    m = sample(mg, dtype)
    assert m.type("mutagrad." + target).tolist() == m.type("torch." + target).tolist()
    c = m.type("torch.cuda." + target)
    assert c.is_cuda and c.type() == "mutagrad.cuda." + target
    assert c.type("mutagrad." + target).is_cuda is False


@pytest.mark.parametrize("bad", ["float", "torch.float32", "torch.Tensor", "FloatTensor", float,
                                 int, 3], ids=repr)
def test_type_errors_match_torch(bad):
    same_outcome(lambda lib: lib.zeros(2).type(bad))


def test_type_of_a_dtype_mutagrad_lacks_is_a_type_error():
    with pytest.raises(TypeError, match="complex64"):
        mg.zeros(2).type("torch.ComplexFloatTensor")
    assert mg.zeros(2).type("torch.HalfTensor").dtype == mg.float16
    with pytest.raises(TypeError):
        mg.zeros(2).type(mg.float64, foo=1)


# ---- finfo, iinfo, promotion, default dtype ------------------------------------------------

@pytest.mark.parametrize("dtype", [None, "float32", "float64", float, "int32", "bool", "int64",
                                   "float16", "bfloat16", "uint8", "int8", "int16"], ids=str)
def test_finfo_matches_torch(dtype):
    def run(lib):
        f = lib.finfo() if dtype is None else lib.finfo(
            dt(lib, dtype) if isinstance(dtype, str) else dtype)
        return (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal, f.resolution, f.dtype,
                repr(f), str(f), f == lib.finfo(lib.float64))

    same_outcome(run)


@pytest.mark.parametrize("dtype", ["int32", "int64", int, "bool", "float32"], ids=str)
def test_iinfo_matches_torch(dtype):
    def run(lib):
        i = lib.iinfo(dt(lib, dtype) if isinstance(dtype, str) else dtype)
        return i.bits, i.max, i.min, i.dtype, repr(i), i == lib.iinfo(lib.int64)

    same_outcome(run)


@pytest.mark.parametrize("bad", [lambda lib: lib.iinfo(), lambda lib: lib.finfo("float32"),
                                 lambda lib: lib.iinfo("int32"), lambda lib: lib.finfo(3)],
                         ids=range(4))
def test_finfo_iinfo_errors_match_torch(bad):
    assert same_outcome(bad) == "TypeError"


@LIBS
def test_finfo_iinfo_are_read_only(lib):
    with pytest.raises(AttributeError):
        lib.finfo(lib.float32).eps = 1.0
    with pytest.raises(AttributeError):
        lib.iinfo(lib.int32).max = 1


def test_finfo_eps_is_the_dtypes_spacing():
    for name in ("float32", "float64"):
        one = mg.tensor(1.0, dtype=dt(mg, name))
        eps = mg.finfo(dt(mg, name)).eps
        assert (one + eps).item() > 1.0 and (one + eps / 2).item() == 1.0


PY_DTYPES = [float, int, bool]


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, repeat=2)) +
                         [(float, int), (bool, int), (int, "float32"), ("int32", float)], ids=str)
def test_promote_types_matches_torch(a, b):
    same_ok(lambda lib: lib.promote_types(*(dt(lib, d) if isinstance(d, str) else d
                                             for d in (a, b))))


def test_promote_types_is_the_modules_own_promotion():
    for a, b in itertools.product(DTYPES, repeat=2):
        added = (mg.zeros(1, dtype=dt(mg, a)) + mg.zeros(1, dtype=dt(mg, b))).dtype
        assert mg.promote_types(dt(mg, a), dt(mg, b)) == added


RESULT_OPERANDS = ["float32", "float64", "int32", "int64", "bool", "0d-float32", "0d-float64",
                   "0d-int32", "0d-int64", "0d-bool", 1, 2.5, True, np.float64(1.5), 2**40]


@pytest.mark.parametrize("a, b", list(itertools.product(RESULT_OPERANDS, repeat=2)), ids=str)
def test_result_type_matches_torch(a, b):
    same_outcome(lambda lib: lib.result_type(_branch(lib, a), _branch(lib, b)))


@pytest.mark.parametrize("bad", [lambda lib: lib.result_type(lib.zeros(1), "a"),
                                 lambda lib: lib.result_type(None, 1),
                                 lambda lib: lib.promote_types(lib.float32, "float64"),
                                 lambda lib: lib.can_cast(lib.float32, None)], ids=range(4))
def test_promotion_errors_match_torch(bad):
    assert same_outcome(bad) == "TypeError"


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, repeat=2)), ids=str)
def test_can_cast_matches_torch(a, b):
    same_ok(lambda lib: lib.can_cast(dt(lib, a), dt(lib, b)))


def test_default_dtype():
    same_ok(lambda lib: lib.get_default_dtype())
    same_ok(lambda lib: (lib.set_default_dtype(lib.float32), lib.get_default_dtype(),
                         lib.zeros(1).dtype, lib.tensor(1.5).dtype))
    for bad in [lambda lib: lib.set_default_dtype(lib.int32),
                lambda lib: lib.set_default_dtype(int),
                lambda lib: lib.set_default_dtype(float), lambda lib: lib.set_default_dtype("x")]:
        assert same_outcome(bad) == "TypeError"
    # float64: every place torch reads the default reads it here too.
    def with_float64(lib):
        lib.set_default_dtype(lib.float64)
        try:
            i = lib.tensor([3, 4])
            return [str(t.dtype).split(".")[-1] for t in (
                lib.zeros(2), lib.ones(1), lib.rand(2), lib.randn(2), lib.full((2,), 1.5),
                lib.arange(0.0, 1.0, 0.5), lib.tensor(1.5), lib.tensor([1.0, 2.0]),
                lib.tensor([]), i / 2, i.exp(), i * 1.5, i + 0.5, lib.linspace(0, 1, 3),
                lib.eye(2), lib.empty(2), lib.tensor([1.0], dtype=lib.float32) * 2.5)] + [
                    lib.get_default_dtype() == lib.float64]
        finally:
            lib.set_default_dtype(lib.float32)

    same_ok(with_float64)
    assert mg.get_default_dtype() == mg.float32 and mg.zeros(1).dtype == mg.float32


# ---- non_blocking=, device= ------------------------------------------------------------------

def test_non_blocking_matches_torch():
    def run(lib):
        x = lib.arange(4.0)
        return (x.to(non_blocking=True) is x, x.to("cpu", non_blocking=True) is x,
                x.to(lib.float64, non_blocking=True), x.to("cpu", lib.int32, True),
                x.to(device="cpu", dtype=lib.float64, non_blocking=True),
                x.type(lib.int64, non_blocking=True))

    same_ok(run)
    assert same_outcome(lambda lib: lib.zeros(2).cpu(non_blocking=True)) == "TypeError"
    x = mg.arange(4.0)
    c = x.cuda(non_blocking=True)
    assert c.is_cuda and c.cuda(non_blocking=True) is c
    assert c.to("cpu", non_blocking=True).tolist() == [0.0, 1.0, 2.0, 3.0]


FACTORIES = {
    "tensor": lambda lib, d: lib.tensor([1.0, 2.0], device=d),
    "zeros": lambda lib, d: lib.zeros(2, 3, device=d),
    "ones": lambda lib, d: lib.ones((2,), device=d),
    "full": lambda lib, d: lib.full((2,), 1.5, device=d),
    "empty": lambda lib, d: lib.empty(2, device=d).shape,
    "arange": lambda lib, d: lib.arange(0, 5, 2, device=d),
    "rand": lambda lib, d: lib.rand(3, device=d).shape,
    "randn": lambda lib, d: lib.randn(3, device=d).shape,
    "randint": lambda lib, d: lib.randint(0, 3, (4,), device=d).dtype,
    "zeros_like": lambda lib, d: lib.zeros_like(lib.ones(2), device=d),
    "ones_like": lambda lib, d: lib.ones_like(lib.ones(2), device=d),
    "full_like": lambda lib, d: lib.full_like(lib.ones(2), 3, device=d),
    "empty_like": lambda lib, d: lib.empty_like(lib.ones(2), device=d).shape,
    "rand_like": lambda lib, d: lib.rand_like(lib.ones(2), device=d).shape,
    "randn_like": lambda lib, d: lib.randn_like(lib.ones(2), device=d).shape,
    "as_tensor": lambda lib, d: lib.as_tensor([1, 2], device=d),
    "new_zeros": lambda lib, d: lib.ones(2).new_zeros(3, device=d),
    "new_tensor": lambda lib, d: lib.ones(2).new_tensor([3], device=d),
}


@pytest.mark.parametrize("name", list(FACTORIES), ids=list(FACTORIES))
def test_every_factory_accepts_device(name):
    for spelling in ["cpu", None]:
        same_ok(lambda lib: FACTORIES[name](lib, spelling))
    same_ok(lambda lib: FACTORIES[name](lib, lib.device("cpu")))
    on_cuda = FACTORIES[name](mg, "cuda")
    if isinstance(on_cuda, mg.Tensor):
        assert on_cuda.is_cuda


# ---- NumPy's axis= and keepdims= ------------------------------------------------------------

REDUCTIONS = ["sum", "mean", "prod", "max", "min", "argmax", "argmin"]


NUMPY_KWARGS = [{"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": -1, "keepdims": False},
                {"dim": 0, "keepdims": True}, {"axis": (0, 1)}, {"axis": [0, 1], "keepdims": True},
                {"axis": None}, {"keepdims": True}, {"axis": 0, "dim": 1},
                {"axis": 0, "keepdim": True, "keepdims": True}]


def _torch_names(kwargs):
    return {{"axis": "dim", "keepdims": "keepdim"}.get(k, k): v for k, v in kwargs.items()}


@pytest.mark.parametrize("kwargs", NUMPY_KWARGS, ids=str)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_accept_numpy_names_as_torch(name, kwargs):
    def x(lib):
        return lib.arange(12.0).reshape(3, 4) - 5

    forms = [lambda lib, kw: getattr(x(lib), name)(**kw),
             lambda lib, kw: getattr(lib, name)(x(lib), **kw),
             lambda lib, kw: getattr(lib, name)(input=x(lib), **kw)]
    for form in forms:
        kinds = {lib.__name__: _outcome(lambda lib: form(lib, _torch_names(kwargs)), lib)[0]
                 for lib in (torch, mg)}
        if kinds["torch"] == kinds["mutagrad"]:
            same_outcome(lambda lib: form(lib, kwargs))
        else:
            # The bindings accept what torch refuses with torch's names too (keepdim without
            # dim; dim=None or a tuple of dims for prod/max/min; docs/python.md): NumPy's names
            # give what torch's names give there.
            assert kinds["torch"] in ("TypeError", "RuntimeError"), (name, kwargs)
            assert kinds["mutagrad"] == "ok", (name, kwargs)
            a, b = form(mg, _torch_names(kwargs)), form(mg, kwargs)
            assert (a.dtype, a.shape, a.tolist()) == (b.dtype, b.shape, b.tolist())


def test_reduction_gradients_with_numpy_names():
    def run(lib):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        y = x.sum(axis=1, keepdims=True) * x.mean(axis=0) + lib.max(x, axis=1, keepdims=True).values
        y.sum().backward()
        return y, x.grad, y.grad_fn.name()

    same_ok(run)


AXIS_FORMS = {
    "squeeze": lambda lib, x: x.unsqueeze(0).squeeze(axis=0),
    "unsqueeze": lambda lib, x: x.unsqueeze(axis=1),
    "torch.unsqueeze": lambda lib, x: lib.unsqueeze(x, axis=-1),
    "torch.squeeze": lambda lib, x: lib.squeeze(x.unsqueeze(0), axis=0),
    "select": lambda lib, x: x.select(axis=0, index=1),
    "torch.select": lambda lib, x: lib.select(x, axis=1, index=-1),
    "narrow": lambda lib, x: x.narrow(axis=1, start=1, length=2),
    "torch.narrow": lambda lib, x: lib.narrow(x, axis=0, start=0, length=1),
    "unbind": lambda lib, x: x.unbind(axis=1),
    "torch.unbind": lambda lib, x: lib.unbind(x, axis=1),
    "chunk": lambda lib, x: x.chunk(2, axis=1),
    "torch.chunk": lambda lib, x: lib.chunk(x, 2, axis=0),
    "size": lambda lib, x: x.size(axis=1),
    "stride": lambda lib, x: x.stride(axis=0),
    "cat": lambda lib, x: lib.cat([x, x], axis=1),
    "stack": lambda lib, x: lib.stack([x, x], axis=-1),
    "index_select": lambda lib, x: x.index_select(axis=1, index=lib.tensor([2, 0])),
    "torch.index_select": lambda lib, x: lib.index_select(x, axis=1, index=lib.tensor([2, 0])),
    "index_add": lambda lib, x: x.index_add(axis=0, index=lib.tensor([1, 0]), source=x),
    "index_copy": lambda lib, x: x.index_copy(axis=0, index=lib.tensor([1, 0]), source=x),
    "index_fill": lambda lib, x: x.index_fill(axis=1, index=lib.tensor([0]), value=-1.0),
    "gather": lambda lib, x: x.gather(axis=1, index=lib.tensor([[2, 0], [1, 1]])),
    "torch.gather": lambda lib, x: lib.gather(x, axis=0, index=lib.tensor([[1, 0, 1]])),
    "scatter": lambda lib, x: x.scatter(axis=0, index=lib.tensor([[1, 0, 1]]), value=9.0),
    "scatter_add": lambda lib, x: x.scatter_add(axis=0, index=lib.tensor([[1, 0, 1]]), src=x),
    "scatter_reduce": lambda lib, x: x.scatter_reduce(axis=0, index=lib.tensor([[1, 0, 1]]), src=x,
                                                      reduce="amax"),
    "split": lambda lib, x: x.split(1, axis=0),
    "torch.split": lambda lib, x: lib.split(x, 1, axis=0),
    "flatten": lambda lib, x: x.flatten(axis=0),
    "transpose": lambda lib, x: x.transpose(axis0=0, axis1=1),
    "diagonal": lambda lib, x: x.diagonal(axis=0),
    "squeeze keepdims": lambda lib, x: x.squeeze(0, keepdims=True),
    "select both": lambda lib, x: x.select(0, 1, axis=0),
}


@pytest.mark.parametrize("form", list(AXIS_FORMS), ids=list(AXIS_FORMS))
def test_dim_ops_accept_axis_as_torch(form):
    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: scatter_reduce is in beta
            return AXIS_FORMS[form](lib, lib.arange(6.0).reshape(2, 3))

    same_outcome(run)


@pytest.mark.parametrize("name", ["index_add_", "index_copy_", "index_fill_", "scatter_",
                                  "scatter_add_", "scatter_reduce_"])
def test_in_place_dim_ops_keep_the_callers_line(name):
    # No Python wrapper in front of the in-place forms (they take dim= only): the stale-tensor
    # error names this file, not _conveniences.py.
    assert type(getattr(mg.Tensor, name)).__name__ != "function"
    x = mg.ones(3, requires_grad=True)
    y = x.exp()
    z = y * y
    index = mg.tensor([0])
    args = {"index_add_": (0, index, mg.ones(1)), "index_copy_": (0, index, mg.ones(1)),
            "index_fill_": (0, index, 2.0), "scatter_": (0, index, 2.0),
            "scatter_add_": (0, index, mg.ones(1)),
            "scatter_reduce_": (0, index, mg.ones(1), "sum")}[name]
    getattr(y, name)(*args)
    with pytest.raises(RuntimeError, match="conveniences_test.py"):
        z.sum().backward()


def test_numpy_name_type_errors_say_what_was_renamed():
    with pytest.raises(TypeError) as e:
        mg.ones(2).sum(axis=0, out=None)
    assert "'out'" in str(e.value) and "'axis' as 'dim' (axis=0)" in str(e.value)
    with pytest.raises(TypeError, match="both 'dim' and its NumPy alias 'axis'"):
        mg.sum(mg.ones(2), dim=0, axis=0)
