"""out= against torch 1.13 (mutagrad/_out.py, autograd/ops/out_ops.h): for a table of ops, the
values are torch's and the call returns out itself; the write is one version bump; a view out
writes its base; torch's resize (and its UserWarning), dtype and autograd rules, with nothing
changed after a refusal (values and _version); an out aliasing an input, whole or in part, gives
the values of the inputs before the call; tuple outs (sort, topk, max/min with a dim). mutagrad
on the CPU and on the host-run CUDA device.
"""

import re
import types
import warnings

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import capture, from_torch, numpy_of

MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def to_lib(lib, t):
    out = from_torch(lib, t)
    return out.to(MG_DEVICE) if lib is mg else out


def device(lib):
    return MG_DEVICE if lib is mg else "cpu"


def inputs(lib):
    """The operands of every case, the same values in both libraries."""
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return to_lib(lib, torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1)

    t = types.SimpleNamespace(a=rand(2, 3), b=rand(2, 3), c=rand(2, 1), m=rand(3, 4),
                              batch=rand(2, 3, 3), v=rand(4), x=rand(3, 5))
    t.pos = t.a.abs() + 0.5
    t.cond = t.a > t.b
    t.ints = to_lib(lib, torch.arange(6).reshape(2, 3))
    t.index = to_lib(lib, torch.tensor([2, 0]))
    t.gidx = to_lib(lib, torch.tensor([[0, 2, 1], [1, 0, 0]]))
    return t


# (name, result dtype, call(lib, inputs, out)): each returns the op's value with out= given.
CASES = [
    ("add", "float64", lambda L, t, o: L.add(t.a, t.b, alpha=2, out=o)),
    ("add_scalar", "float64", lambda L, t, o: L.add(t.a, 3, out=o)),
    ("sub", "float64", lambda L, t, o: L.sub(t.a, t.c, out=o)),
    ("mul", "float64", lambda L, t, o: L.mul(t.a, t.b, out=o)),
    ("div", "float64", lambda L, t, o: L.div(t.a, t.pos, out=o)),
    ("div_floor", "float64", lambda L, t, o: L.div(t.a, t.pos, rounding_mode="floor", out=o)),
    ("pow", "float64", lambda L, t, o: L.pow(t.pos, t.b, out=o)),
    ("neg", "float64", lambda L, t, o: L.neg(t.a, out=o)),
    ("exp", "float64", lambda L, t, o: L.exp(t.a, out=o)),
    ("log", "float64", lambda L, t, o: L.log(t.pos, out=o)),
    ("sin", "float64", lambda L, t, o: L.sin(t.a, out=o)),
    ("cos", "float64", lambda L, t, o: L.cos(t.a, out=o)),
    ("tanh", "float64", lambda L, t, o: L.tanh(t.a, out=o)),
    ("sigmoid", "float64", lambda L, t, o: L.sigmoid(t.a, out=o)),
    ("sqrt", "float64", lambda L, t, o: L.sqrt(t.pos, out=o)),
    ("abs", "float64", lambda L, t, o: L.abs(t.a, out=o)),
    ("floor", "float64", lambda L, t, o: L.floor(t.a, out=o)),
    ("eq", "bool", lambda L, t, o: L.eq(t.a, t.a[0], out=o)),
    ("maximum", "float64", lambda L, t, o: L.maximum(t.a, t.b, out=o)),
    ("clamp", "float64", lambda L, t, o: L.clamp(t.a, -0.5, 0.5, out=o)),
    ("where", "float64", lambda L, t, o: L.where(t.cond, t.a, t.b, out=o)),
    ("sum", "float64", lambda L, t, o: L.sum(t.a, 1, out=o)),
    ("sum_ints", "int64", lambda L, t, o: L.sum(t.ints, 0, keepdim=True, out=o)),
    ("mean", "float64", lambda L, t, o: L.mean(t.a, (0, 1), out=o)),
    ("prod", "float64", lambda L, t, o: L.prod(t.a, 1, out=o)),
    ("amax", "float64", lambda L, t, o: L.amax(t.a, 0, out=o)),
    ("amin", "float64", lambda L, t, o: L.amin(t.a, 1, keepdim=True, out=o)),
    ("argmax", "int64", lambda L, t, o: L.argmax(t.a, 1, out=o)),
    ("max_binary", "float64", lambda L, t, o: L.max(t.a, t.b, out=o)),
    ("mm", "float64", lambda L, t, o: L.mm(t.a, t.m, out=o)),
    ("matmul", "float64", lambda L, t, o: L.matmul(t.a, t.m, out=o)),
    ("bmm", "float64", lambda L, t, o: L.bmm(t.batch, t.batch, out=o)),
    ("addmm", "float64", lambda L, t, o: L.addmm(t.a, t.a, t.m[:, :3], beta=0.5, out=o)),
    ("cat", "float64", lambda L, t, o: L.cat([t.a, t.b], 1, out=o)),
    ("stack", "float64", lambda L, t, o: L.stack([t.a, t.b], out=o)),
    ("index_select", "float64", lambda L, t, o: L.index_select(t.a, 1, t.index, out=o)),
    ("gather", "float64", lambda L, t, o: L.gather(t.a, 1, t.gidx, out=o)),
    ("cumsum", "float64", lambda L, t, o: L.cumsum(t.x, 1, out=o)),
]
IDS = [c[0] for c in CASES]

# (name, call(lib, inputs, (values, indices))) for the ops with two outputs.
PAIR_CASES = [
    ("sort", lambda L, t, o: L.sort(t.x, 1, descending=True, out=o)),
    ("topk", lambda L, t, o: L.topk(t.x, 2, out=o)),
    ("max_dim", lambda L, t, o: L.max(t.x, 0, out=o)),
    ("min_dim", lambda L, t, o: L.min(t.x, 1, keepdim=True, out=o)),
    ("kthvalue", lambda L, t, o: L.kthvalue(t.x, 2, 1, out=o)),
]


def same(m, t, what):
    a, b = numpy_of(m), numpy_of(t)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs torch {b.dtype}"
    assert (a == b).all() or abs(a - b).max() < 1e-12, f"{what}: {a} vs torch {b}"


def empty(L, dtype, shape=(0,)):
    return L.zeros(shape, dtype=getattr(L, dtype), device=device(L))


def snapshot(x):
    return numpy_of(x).copy(), tuple(x.shape), x._version


@pytest.mark.parametrize("name,dtype,call", CASES, ids=IDS)
def test_values_returned_out_and_one_bump(name, dtype, call):
    got = {}
    for L in (torch, mg):
        out = empty(L, dtype)
        r = call(L, inputs(L), out)
        assert r is out, f"{name}: {L.__name__} did not return out itself"
        got[L] = out
        assert out._version == 1, f"{name}: {L.__name__} bumped {out._version} times"
    same(got[mg], got[torch], name)


@pytest.mark.parametrize("name,dtype,call", CASES, ids=IDS)
def test_a_view_out_writes_its_base(name, dtype, call):
    shape = tuple(call(torch, inputs(torch), empty(torch, dtype)).shape)
    got = {}
    for L in (torch, mg):
        base = empty(L, dtype, (2,) + shape)
        view = base[1]
        assert call(L, inputs(L), view) is view
        assert base._version == 1 and view._version == 1
        got[L] = base
    same(got[mg], got[torch], name)


@pytest.mark.parametrize("name,dtype,call", CASES, ids=IDS)
def test_a_non_empty_out_of_another_shape_is_resized_with_a_warning(name, dtype, call):
    got = {}
    for L in (torch, mg):
        out = empty(L, dtype, (7,))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(L, inputs(L), out)
        messages = [str(w.message) for w in caught if w.category is UserWarning]
        assert len(messages) == 1, f"{name}: {L.__name__} warned {messages}"
        assert re.match(r"An output with one or more elements was resized since it had shape "
                        r"\[7\], which does not match the required output shape \[[0-9, ]*\]",
                        messages[0]), messages[0]
        assert out._version == 1
        got[L] = out
    same(got[mg], got[torch], name)


def test_the_warning_names_the_callers_line_and_as_an_error_changes_nothing():
    t = inputs(mg)
    out = empty(mg, "float64", (7,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mg.add(t.a, t.b, out=out)  # the warning's line
    assert caught[0].filename == __file__
    out = empty(mg, "float64", (7,))
    before = snapshot(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning):
            mg.add(t.a, t.b, out=out)
    assert snapshot(out)[1:] == before[1:] and (snapshot(out)[0] == before[0]).all()


def test_an_out_that_cannot_be_resized_safely_is_refused():
    # torch resizes the storage that a view or a detached twin shares; mutagrad refuses
    # (docs/python.md, "out=").
    t = inputs(mg)
    base = empty(mg, "float64", (8,))
    for out in (base[:4], base[2:2]):
        before = snapshot(base)
        with pytest.raises(RuntimeError, match="is a view of another tensor"):
            mg.neg(t.a, out=out)
        after = snapshot(base)
        assert after[1:] == before[1:] and (after[0] == before[0]).all()
    owner = empty(mg, "float64", (4,))
    twin = owner.detach()
    with pytest.raises(RuntimeError, match="shares its storage with another tensor"):
        mg.neg(t.a, out=owner)
    assert tuple(owner.shape) == (4,) and owner._version == 0 and twin._version == 0


def refused_alike(scenario, what):
    """Both libraries raise the same kind with the same message, and leave out unchanged."""
    outcomes = {}
    for L in (torch, mg):
        outs = scenario(L)
        before = [snapshot(o) for o in outs]
        outcomes[L] = capture(scenario.call, L, outs)
        for o, b in zip(outs, before):
            after = snapshot(o)
            assert after[1:] == b[1:] and (after[0] == b[0]).all(), \
                f"{what}: {L.__name__} changed an out"
    ot, om = outcomes[torch], outcomes[mg]
    assert not ot.ok and om.kind == ot.kind, f"{what}: torch {ot!r}, mutagrad {om!r}"
    return ot.message, om.message


def test_a_result_that_does_not_cast_to_outs_dtype_is_refused():
    def scenario(L):
        return [empty(L, "int64", (2, 3))]

    scenario.call = lambda L, outs: L.add(inputs(L).a, inputs(L).b, out=outs[0])
    t_msg, m_msg = refused_alike(scenario, "float into int64")
    assert m_msg.startswith(t_msg), m_msg

    def to_bool(L):
        return [empty(L, "bool", (2, 3))]

    to_bool.call = lambda L, outs: L.mul(inputs(L).ints, 2, out=outs[0])
    refused_alike(to_bool, "int64 into bool")

    def indices(L):
        return [empty(L, "int32", (2,))]

    indices.call = lambda L, outs: L.argmax(inputs(L).a, 1, out=outs[0])
    refused_alike(indices, "argmax into int32")

    def products(L):
        return [empty(L, "float32", (2, 4))]

    products.call = lambda L, outs: L.mm(inputs(L).a, inputs(L).m, out=outs[0])
    refused_alike(products, "mm into float32")


def test_integers_into_a_float_out_and_float64_into_float32_are_cast():
    got = {}
    for L in (torch, mg):
        t = inputs(L)
        f32 = empty(L, "float32")
        L.add(t.ints, t.ints, out=f32)
        narrowed = empty(L, "float32")
        L.exp(t.a, out=narrowed)
        got[L] = (f32, narrowed)
    same(got[mg][0], got[torch][0], "int64 into float32")
    same(got[mg][1], got[torch][1], "float64 into float32")


def test_autograd_is_refused_before_any_write():
    def input_grad(L):
        return [empty(L, "float64", (2, 3))]

    input_grad.call = lambda L, outs: L.add(inputs(L).a.requires_grad_(), inputs(L).b,
                                            out=outs[0])
    t_msg, m_msg = refused_alike(input_grad, "an input requires grad")
    assert m_msg == t_msg == ("add(): functions with out=... arguments don't support automatic "
                              "differentiation, but one of the arguments requires grad.")

    def out_grad(L):
        return [empty(L, "float64", (2, 3)).requires_grad_()]

    out_grad.call = lambda L, outs: L.mul(inputs(L).a, 2, out=outs[0])
    refused_alike(out_grad, "out requires grad")

    def pair(L):
        return [empty(L, "float64", (3,)), empty(L, "int64", (3,))]

    pair.call = lambda L, outs: L.sort(inputs(L).v.requires_grad_(), out=tuple(outs[:2]))
    refused_alike(pair, "sort of an input that requires grad")


def test_no_grad_and_non_differentiable_results_may_take_inputs_that_require_grad():
    got = {}
    for L in (torch, mg):
        t = inputs(L)
        a = t.a.requires_grad_()
        o1, o2 = empty(L, "float64"), empty(L, "int64")
        with L.no_grad():
            L.mul(a, t.b, out=o1)
        L.argmax(a, 1, out=o2)
        got[L] = (o1, o2)
    same(got[mg][0], got[torch][0], "mul under no_grad")
    same(got[mg][1], got[torch][1], "argmax")


@pytest.mark.parametrize("name,call", PAIR_CASES, ids=[c[0] for c in PAIR_CASES])
def test_tuple_outs(name, call):
    got = {}
    for L in (torch, mg):
        v, i = empty(L, "float64"), empty(L, "int64")
        r = call(L, inputs(L), (v, i))
        assert r.values is v and r.indices is i and r[0] is v
        assert v._version == 1 and i._version == 1
        got[L] = (v, i)
    same(got[mg][0], got[torch][0], f"{name} values")
    same(got[mg][1], got[torch][1], f"{name} indices")


def test_an_out_aliasing_an_input():
    got = {}
    for L in (torch, mg):
        t = inputs(L)
        a = t.a.clone()
        L.add(a, t.b, out=a)
        L.mul(t.b, a, out=a)
        got[L] = (a, a._version)
    same(got[mg][0], got[torch][0], "aliased add, mul")
    assert got[mg][1] == got[torch][1] == 2


def test_an_out_aliasing_an_input_where_torch_gives_garbage_or_refuses():
    # torch 1.13's mm(m, m, out=m) multiplies while it overwrites m (wrong values), and its cat
    # refuses an out that is an input; mutagrad computes both as if the inputs were copied first.
    t = inputs(mg)
    m = t.x[:, :3].clone()
    expected = (m.clone() @ m.clone()).tolist()
    assert mg.mm(m, m, out=m) is m
    assert m.tolist() == expected and m._version == 1
    a = t.a.clone()
    expected = mg.cat([a.clone(), a.clone()], 0).tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the resize warning: a's shape was (2, 3)
        mg.cat([a, a], 0, out=a)
    assert a.tolist() == expected and a._version == 1


def test_an_out_overlapping_an_input_in_part_sees_the_inputs_before_the_call():
    # torch refuses partial overlap for most element-wise ops ("unsupported operation: some
    # elements of the input tensor and the written-to tensor refer to a single memory
    # location"); mutagrad computes as if the inputs were copied first (docs/python.md).
    x = mg.arange(8, dtype=mg.float64, device=MG_DEVICE)
    lhs, rhs = x[0:4], x[2:6]
    expected = (lhs.clone() * rhs.clone()).tolist()
    mg.mul(lhs, rhs, out=x[1:5])
    assert x[1:5].tolist() == expected
    assert x.tolist() == [0, 0, 3, 8, 15, 5, 6, 7]
    assert x._version == 1


def test_the_write_is_tracked_saved_tensors_of_out_become_stale():
    w = mg.ones(3, dtype=mg.float64, device=MG_DEVICE, requires_grad=True)
    out = mg.zeros(3, dtype=mg.float64, device=MG_DEVICE)
    y = (w * out).sum()
    mg.exp(mg.ones(3, dtype=mg.float64, device=MG_DEVICE), out=out)  # the write's line
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
        y.backward()
    assert "exp_out" in str(info.value)
    assert "out_test.py" in str(info.value)


def test_out_none_and_a_wrong_out_type():
    t = inputs(mg)
    same(mg.add(t.a, t.b, out=None), torch.add(inputs(torch).a, inputs(torch).b), "out=None")
    for L in (torch, mg):
        t = inputs(L)
        with pytest.raises(TypeError):
            L.add(t.a, t.b, out=[empty(L, "float64")])
        with pytest.raises(TypeError):
            L.sort(t.x, out=empty(L, "float64"))


def test_an_out_on_another_device_is_refused():
    # Inputs on this parameter's device, out on the other one (the host-run build has both).
    other = "cuda" if MG_DEVICE == "cpu" else "cpu"
    t = inputs(mg)
    out = mg.zeros(2, 3, dtype=mg.float64, device=other)
    with pytest.raises(RuntimeError, match=f"out is on {other}"):
        mg.neg(t.a, out=out)
    assert out._version == 0
    assert out.tolist() == [[0.0] * 3] * 2


def test_a_non_contiguous_out_keeps_its_strides_and_an_overlapping_one_is_refused():
    got = {}
    for L in (torch, mg):
        t = inputs(L)
        out = empty(L, "float64", (3, 2)).t()
        assert L.add(t.a, t.b, out=out) is out
        got[L] = (out, tuple(out.stride()), out._version)
    same(got[mg][0], got[torch][0], "transposed out")
    assert got[mg][1:] == got[torch][1:] == ((1, 2), 1)

    def expanded(L):
        return [empty(L, "float64", (3,))]

    expanded.call = lambda L, outs: L.neg(inputs(L).a, out=outs[0].expand(2, 3))
    refused_alike(expanded, "an expanded out")


def candidate_args(L):
    """Argument lists tried in order for a name: the first that torch takes is the case."""
    t = inputs(L)
    sq = t.x[:, :3].clone()
    return [
        (t.pos,), (t.pos, t.b.abs() + 0.25), (t.pos, 2), (t.cond, t.a, t.b), (t.a, t.b, t.b),
        (t.a, t.b, 0.5), ([t.a, t.b],), (sq, sq), (sq, sq[0]), (sq[0], sq[0]), (sq, sq, sq),
        (t.x, 2), (t.a, 1), (t.a, 1, t.gidx), (t.ints,), (t.ints, t.ints), (t.batch, t.batch),
        (t.a, 1, t.index), (t.a, t.cond), (t.a, t.gidx),
    ]


def out_for(L, result):
    if isinstance(result, tuple):
        return tuple(out_for(L, r) for r in result)
    return L.zeros(0, dtype=result.dtype, device=result.device)


BOTH_HAVE = [n for n in mg._out._NAMES if hasattr(torch, n) and hasattr(mg, n)]


@pytest.mark.parametrize("name", BOTH_HAVE)
def test_every_wrapped_name_takes_out_as_torch(name):
    """Each name that both libraries have, on the first argument list torch takes with out=:
    mutagrad takes it too and writes torch's values and dtype, once per out."""
    for i, args in enumerate(candidate_args(torch)):
        expected = capture(getattr(torch, name), *args)
        if not expected.ok:
            continue
        out_t = out_for(torch, expected.value)
        if not capture(getattr(torch, name), *args, out=out_t).ok:
            continue
        margs = candidate_args(mg)[i]
        result = getattr(mg, name)(*margs)
        out_m = out_for(mg, result)
        assert getattr(mg, name)(*margs, out=out_m) is out_m or isinstance(out_m, tuple)
        for m, tt in zip(out_m if isinstance(out_m, tuple) else (out_m,),
                         out_t if isinstance(out_t, tuple) else (out_t,)):
            assert m._version == 1
            a, b = numpy_of(m), numpy_of(tt)
            assert a.shape == b.shape and a.dtype == b.dtype, f"{name}{args}: {a!r} vs {b!r}"
            assert np.allclose(a.astype("float64"), b.astype("float64"), rtol=0, atol=1e-9,
                               equal_nan=True), f"{name}{args}: {a!r} vs {b!r}"
        return
    pytest.fail(f"no candidate argument list suits torch.{name} with out=")


def test_an_out_wrapping_a_numpy_array():
    # Of the right shape the array sees the write; of another shape torch grows the array's
    # storage only when it is big enough (else "Trying to resize storage that is not
    # resizable"), mutagrad refuses to resize it at all: the array would stop seeing the tensor.
    array = np.zeros(3)
    out = mg.from_numpy(array)
    mg.add(mg.ones(3, dtype=mg.float64), 1, out=out)
    assert array.tolist() == [2, 2, 2] and out._version == 1
    for shape in ((0,), (5,)):
        array = np.zeros(shape)
        out = mg.from_numpy(array)
        with pytest.raises(RuntimeError, match="wraps memory owned elsewhere"):
            mg.add(mg.ones(3, dtype=mg.float64), 1, out=out)
        assert tuple(out.shape) == shape and out._version == 0
        with pytest.raises(RuntimeError, match="not resizable"):
            torch.add(torch.ones(3, dtype=torch.float64), 1, out=torch.from_numpy(np.zeros(0)))
