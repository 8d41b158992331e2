"""Graph nodes seen from Python, against torch 1.13 (issue 35): a class per node name
(type(y.grad_fn).__name__), typed next_functions, one object per node, and torch's saved
values (_saved_self, _saved_result, _saved_dim, ...) with backward's errors when they are
stale or freed. mutagrad runs on the CPU and the host-run CUDA device; torch on the CPU."""

import pytest
import torch

import mutagrad as mg
from lib_util import assert_same_value, same_kind

MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def leaf(lib, values):
    t = lib.tensor(values)
    if lib is mg:
        t = t.to(MG_DEVICE)
    return t.requires_grad_()


def index(lib, values):
    t = lib.tensor(values)
    return t.to(MG_DEVICE) if lib is mg else t


def _index_put(lib, x):
    y = x.clone()
    y[index(lib, [0])] = 5.0
    return y


def _copy_slices(lib, x):
    y = x.clone()
    y[0].mul_(2)
    return y


# name -> (fn(lib, x, w) -> tensor with a grad_fn, the saved names torch 1.13 has)
CASES = {
    "mul": (lambda lib, x, w: x * w, ["_saved_self", "_saved_other"]),
    "mul_number": (lambda lib, x, w: x * 2, ["_saved_self", "_saved_other"]),
    "mul_float": (lambda lib, x, w: x * 2.5, ["_saved_other"]),
    "add_number": (lambda lib, x, w: x + 2, ["_saved_alpha"]),
    "sub_number": (lambda lib, x, w: x - 2.5, ["_saved_alpha"]),
    "div": (lambda lib, x, w: x / w, ["_saved_self", "_saved_other"]),
    "div_number": (lambda lib, x, w: x / 4, ["_saved_self", "_saved_other"]),
    "pow_scalar": (lambda lib, x, w: x ** 3, ["_saved_self", "_saved_exponent"]),
    "pow_float": (lambda lib, x, w: x ** 0.5, ["_saved_self", "_saved_exponent"]),
    "pow_tensor": (lambda lib, x, w: x ** w, ["_saved_self", "_saved_exponent", "_saved_result"]),
    "exp": (lambda lib, x, w: x.exp(), ["_saved_result"]),
    "tanh": (lambda lib, x, w: x.tanh(), ["_saved_result"]),
    "sigmoid": (lambda lib, x, w: x.sigmoid(), ["_saved_result"]),
    "sum_dim": (lambda lib, x, w: x.sum(1), ["_saved_dim", "_saved_keepdim",
                                              "_saved_self_sym_sizes"]),
    "sum_dims_keepdim": (lambda lib, x, w: x.sum((0, 1), keepdim=True),
                         ["_saved_dim", "_saved_keepdim", "_saved_self_sym_sizes"]),
    "sum": (lambda lib, x, w: x.sum(), ["_saved_self_sym_sizes"]),
    "mean_dim": (lambda lib, x, w: x.mean(0), ["_saved_dim", "_saved_keepdim",
                                               "_saved_self_sym_sizes"]),
    "mm": (lambda lib, x, w: x.mm(w), ["_saved_self", "_saved_mat2"]),
    "index": (lambda lib, x, w: x[index(lib, [1, 0])], ["_saved_indices", "_saved_self_sizes"]),
    "index_put": (lambda lib, x, w: _index_put(lib, x), ["_saved_indices", "_saved_accumulate"]),
    "select": (lambda lib, x, w: x.select(1, 1), ["_saved_dim", "_saved_index",
                                                  "_saved_self_sizes"]),
    "transpose": (lambda lib, x, w: x.transpose(0, 1), ["_saved_dim0", "_saved_dim1"]),
    "add_alpha": (lambda lib, x, w: lib.add(x, w, alpha=3), ["_saved_alpha"]),
    "copy_slices": (lambda lib, x, w: _copy_slices(lib, x), []),
}


def make(lib, case):
    x = leaf(lib, [[1.0, 2.0], [3.0, 4.0]])
    w = leaf(lib, [[0.5, 1.0], [2.0, 3.0]])
    return CASES[case][0](lib, x, w), x, w


@pytest.mark.parametrize("case", sorted(CASES))
def test_node_class_is_named_after_the_node(case):
    yt, _, _ = make(torch, case)
    ym, _, _ = make(mg, case)
    fm = ym.grad_fn
    assert type(fm).__name__ == type(yt.grad_fn).__name__
    assert isinstance(fm, mg.autograd.graph.Node)
    assert isinstance(fm, mg._C.Node)
    assert fm is ym.grad_fn  # one Python object per node while it lives
    assert repr(fm).startswith(f"<{type(yt.grad_fn).__name__} object at ")
    # The same class for every node of that name.
    ym2, _, _ = make(mg, case)
    assert type(ym2.grad_fn) is type(fm)
    # next_functions: typed entries, None for a number operand, as torch's.
    names_t = [(type(f).__name__ if f is not None else None, n)
               for f, n in yt.grad_fn.next_functions]
    names_m = [(type(f).__name__ if f is not None else None, n) for f, n in fm.next_functions]
    assert names_m == names_t


@pytest.mark.parametrize("case", sorted(CASES))
def test_saved_values_are_torchs(case):
    yt, _, _ = make(torch, case)
    ym, _, _ = make(mg, case)
    for name in CASES[case][1]:
        vt = getattr(yt.grad_fn, name)
        vm = getattr(ym.grad_fn, name)
        assert name in dir(ym.grad_fn)
        if isinstance(vt, torch.Tensor):
            assert isinstance(vm, mg.Tensor), name
            assert str(vm.device).startswith(MG_DEVICE) or name == "_saved_other", name
            assert_same_value(vm.detach().cpu(), vt.detach(), exact=False, what=f"{case}.{name}")
            assert vm.dtype == getattr(mg, str(vt.dtype).rsplit(".", 1)[-1]), name
        elif isinstance(vt, tuple) and vt and isinstance(vt[0], torch.Tensor):
            assert len(vm) == len(vt)
            for a, b in zip(vm, vt):
                assert_same_value(a.cpu(), b, what=f"{case}.{name}")
        else:
            assert type(vm) is type(vt), (name, vm, vt)
            assert vm == vt, (name, vm, vt)


def test_saved_result_has_the_node_as_grad_fn():
    for lib in (torch, mg):
        x = leaf(lib, [1.0, 2.0])
        y = x.exp()
        r = y.grad_fn._saved_result
        assert r.grad_fn is y.grad_fn
        assert r.requires_grad


def test_unknown_saved_name_is_an_attribute_error():
    for lib in (torch, mg):
        y = leaf(lib, [1.0, 2.0]).exp()
        with pytest.raises(AttributeError, match="_saved_nothing"):
            y.grad_fn._saved_nothing
        assert not hasattr(y.grad_fn, "_saved_self")


def stale(lib):
    a = leaf(lib, [1.0, 2.0]).clone()
    b = leaf(lib, [3.0, 4.0]).clone()
    y = a * b
    a.add_(1.0)  # the write the error names
    return y


def test_stale_saved_tensor_raises_backwards_error():
    outcomes = []
    for lib in (torch, mg):
        y = stale(lib)
        with pytest.raises(Exception) as info:
            y.grad_fn._saved_self
        outcomes.append(info)
        # The other operand was not written: still readable.
        assert y.grad_fn._saved_other.tolist() == [3.0, 4.0]
    t_info, m_info = outcomes
    assert same_kind(t_info.type.__name__, m_info.type.__name__)
    message = str(m_info.value)
    assert "modified by an inplace operation" in message
    assert "add_" in message and "node_introspection_test.py:" in message, message


def test_freed_saved_tensor_raises_backward_twice():
    for lib in (torch, mg):
        x = leaf(lib, [1.0, 2.0])
        y = x * x
        y.sum().backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                               "time"):
            y.grad_fn._saved_self
        # retain_graph keeps them.
        z = x * x
        z.sum().backward(retain_graph=True)
        assert z.grad_fn._saved_self.tolist() == [1.0, 2.0]


def test_accumulate_grad_nodes():
    for lib in (torch, mg):
        x = leaf(lib, [1.0])
        y = x * 2
        (acc, nr), = [e for e in y.grad_fn.next_functions if e[0] is not None]
        assert type(acc).__name__ == "AccumulateGrad" and nr == 0
        assert acc.variable is x
