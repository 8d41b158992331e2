"""The remaining torch names of issue 35 against torch 1.13 (values, node names, versions,
warnings, error kinds): autograd.Variable, the non-leaf .grad warning, InplaceFunction,
Tensor._is_view, var_mean/std_mean, split_with_sizes, unsafe_split/unsafe_chunk,
swapdims_/swapaxes_, broadcast_tensors, data_ptr, and torch 2's autograd.graph helpers
(get_gradient_edge, increment_version, allow_mutation_on_saved_tensors' context object).
mutagrad runs on the CPU and the host-run CUDA device."""

import warnings

import pytest
import torch

import mutagrad as mg
from lib_util import assert_same_value, from_torch

MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def make(lib, values, requires_grad=False):
    t = lib.tensor(values)
    if lib is mg:
        t = t.to(MG_DEVICE)
    return t.requires_grad_() if requires_grad else t


def test_variable_is_torchs_alias():
    for lib in (torch, mg):
        x = make(lib, [1.0, 2.0])
        assert isinstance(x, lib.autograd.Variable)
        assert not isinstance([1.0], lib.autograd.Variable)
        v = lib.autograd.Variable(x)
        assert v is not x and v.data_ptr() == x.data_ptr()
        assert not v.requires_grad and v.is_leaf
        w = lib.autograd.Variable(x, requires_grad=True)
        assert w.requires_grad and w.is_leaf and not x.requires_grad
        assert lib.autograd.Variable().shape == (0,)
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            lib.autograd.Variable([1.0])
        # Shares x's memory and version counter: a write to x shows.
        x.add_(1.0)
        assert v.tolist() == [2.0, 3.0] and v._version == x._version


def test_non_leaf_grad_warns_as_torch():
    messages = []
    for lib in (torch, mg):
        y = make(lib, [1.0], requires_grad=True) * 2
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert y.grad is None
        assert len(w) == 1 and w[0].category is UserWarning
        messages.append(str(w[0].message).split(" (Triggered internally")[0])
        # No warning for a leaf, a retained non-leaf, or after retain_grad.
        y.retain_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert y.grad is None
    assert messages[0] == messages[1]


def test_inplace_function():
    for lib in (torch, mg):
        class AddOne(lib.autograd.function.InplaceFunction):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x.add_(1.0)

            @staticmethod
            def backward(ctx, g):
                return g

        assert issubclass(AddOne, lib.autograd.Function)
        a = make(lib, [1.0, 2.0], requires_grad=True)
        b = a.clone()
        out = AddOne.apply(b)
        assert out.tolist() == [2.0, 3.0]
        out.sum().backward()
        assert a.grad.tolist() == [1.0, 1.0]
        with pytest.warns(DeprecationWarning):
            f = lib.autograd.function.InplaceFunction(True)
        assert f.inplace


def test_is_view():
    for lib in (torch, mg):
        x = make(lib, [1.0, 2.0, 3.0])
        assert not x._is_view() and x[1:]._is_view() and x.view(3)._is_view()
        assert not x.detach()._is_view() and not x.clone()._is_view()


@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
def test_var_mean(fn):
    data = [[1.0, 2.0, 4.0], [3.0, 5.0, -1.0]]
    calls = [((), {}), ((1,), {}), ((0,), {"keepdim": True}), ((False,), {}),
             ((1, False, True), {}), ((None,), {"correction": 0}), ((1,), {"correction": 2}),
             (((0, 1),), {"unbiased": False})]
    for args, kwargs in calls:
        xt = make(torch, data, requires_grad=True)
        xm = make(mg, data, requires_grad=True)
        rt = getattr(torch, fn)(xt, *args, **kwargs)
        rm = getattr(mg, fn)(xm, *args, **kwargs)
        assert_same_value(tuple(r.detach().cpu() for r in rm), tuple(r.detach() for r in rt),
                          exact=False, what=f"{fn}{args}{kwargs}")
        (rt[0].sum() + rt[1].sum()).backward()
        (rm[0].sum() + rm[1].sum()).backward()
        assert_same_value(xm.grad.cpu(), xt.grad, exact=False, what=f"grad {fn}{args}")


def test_split_with_sizes_and_unsafe_split():
    for lib in (torch, mg):
        x = make(lib, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
        a, b = x.split_with_sizes([2, 4])
        assert a.tolist() == [0.0, 1.0] and b.tolist() == [2.0, 3.0, 4.0, 5.0]
        assert [p.tolist() for p in lib.split_with_sizes(x, [5, 1])] == [[0., 1., 2., 3., 4.],
                                                                         [5.]]
        with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum "
                                               "exactly to 6"):
            x.split_with_sizes([2, 3])
        assert [p.tolist() for p in x.unsafe_split(4)] == [[0., 1., 2., 3.], [4., 5.]]
        assert [p.tolist() for p in lib.unsafe_split(x, 4)] == [[0., 1., 2., 3.], [4., 5.]]
        assert [p.tolist() for p in lib.unsafe_chunk(x, 3)] == [[0., 1.], [2., 3.], [4., 5.]]
        assert len(x.unsafe_chunk(4)) == 3
        (a.sum() * 2 + b.sum()).backward()
        assert x.grad.tolist() == [2.0, 2.0, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("name", ["swapdims_", "swapaxes_"])
def test_swapdims_in_place(name):
    for lib in (torch, mg):
        z = make(lib, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        r = getattr(z, name)(0, 1)
        assert r is z and tuple(z.shape) == (3, 2) and z._version == 1
        assert z.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
        w = make(lib, [[1.0, 2.0]], requires_grad=True).clone()
        getattr(w, name)(0, 1)
        assert type(w.grad_fn).__name__ == "TransposeBackward1"


def test_broadcast_tensors():
    for lib in (torch, mg):
        a = make(lib, [[1.0], [2.0]], requires_grad=True)
        b = make(lib, [10.0, 20.0, 30.0])
        x, y = lib.broadcast_tensors(a, b)
        assert tuple(x.shape) == (2, 3) and tuple(y.shape) == (2, 3)
        assert type(x.grad_fn).__name__ == "ExpandBackward0"
        assert tuple(lib.broadcast_shapes((2, 1), (3,))) == (2, 3)
        assert tuple(lib.broadcast_shapes(2, (3, 1))) == (3, 2)
        with pytest.raises(RuntimeError, match="Shape mismatch"):
            lib.broadcast_shapes((2, 3), (4, 3))


def test_data_ptr():
    for lib in (torch, mg):
        x = make(lib, [1.0, 2.0, 3.0, 4.0])
        assert x[2:].data_ptr() == x.data_ptr() + 2 * x.element_size()
        assert x.view(2, 2).data_ptr() == x.data_ptr()
        assert x.clone().data_ptr() != x.data_ptr()


def test_get_gradient_edge():
    graph = mg.autograd.graph
    x = make(mg, [1.0, 2.0], requires_grad=True)
    y = x * 2
    edge = graph.get_gradient_edge(y)
    assert edge.node is y.grad_fn and edge.output_nr == 0 and tuple(edge) == (y.grad_fn, 0)
    leaf_edge = graph.get_gradient_edge(x)
    assert type(leaf_edge.node).__name__ == "AccumulateGrad" and leaf_edge.node.variable is x
    assert y.grad_fn.next_functions[0][0] is leaf_edge.node
    parts = x.unbind(0)
    assert graph.get_gradient_edge(parts[1]).output_nr == 1
    with pytest.raises(RuntimeError, match="does not require gradients"):
        graph.get_gradient_edge(make(mg, [1.0]))


def test_increment_version_makes_saved_tensors_stale():
    graph = mg.autograd.graph
    a = make(mg, [1.0, 2.0], requires_grad=True).clone()
    y = (a * a).sum()
    before = a._version
    graph.increment_version(a)  # the line the error names
    assert a._version == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
        y.backward()
    assert "increment_version" in str(info.value) and "api_extras_test.py:" in str(info.value)


def test_allow_mutation_on_saved_tensors_yields_a_context():
    graph = mg.autograd.graph
    a = make(mg, [1.0, 2.0], requires_grad=True)
    with graph.allow_mutation_on_saved_tensors() as ctx:
        assert ctx is not None and mg.autograd.graph.get_mutation_policy() == "snapshot"
        h = a * 2
        loss = (h * h).sum()
        h.mul_(10.0)  # saved h is snapshotted before the write
        loss.backward()
    assert mg.autograd.graph.get_mutation_policy() == "error"
    # d/da sum((2a)^2) = 8a, at the values saved before the write.
    assert a.grad.tolist() == [8.0, 16.0]
    assert h.tolist() == [20.0, 40.0]


def test_allow_mutation_on_saved_tensors_refuses_backward_after_the_block():
    """torch 2's rules (torch 1.13 has no such context): hand-derived."""
    graph = mg.autograd.graph
    a = make(mg, [1.0, 2.0], requires_grad=True)
    with graph.allow_mutation_on_saved_tensors():
        h = a * 2
        loss = (h * h).sum()
        h.mul_(10.0)
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with graph.allow_mutation_on_saved_tensors():
                pass
    with pytest.raises(RuntimeError, match="Trying to backward outside of the "
                                           "'allow_mutation_on_saved_tensors' context"):
        loss.backward()
    assert a.grad is None
    # Leaves and outputs saved inside are refused too; a graph recorded outside is not.
    with graph.allow_mutation_on_saved_tensors():
        e = a.exp()  # saves its result
        p = a * a  # saves the leaf twice
    for y in (e, p):
        with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors"):
            y.sum().backward()
    (a * a).sum().backward()
    assert a.grad.tolist() == [2.0, 4.0]
