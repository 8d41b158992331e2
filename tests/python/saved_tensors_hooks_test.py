"""Saved-tensor hooks (mutagrad.autograd.graph.saved_tensors_hooks) against torch 1.13, issue 34:

- the version check under hooks (Note [Saved-tensor hooks]): every pack/unpack pair x a write
  of the saved tensor before backward. A pair whose pack keeps an alias of the tensor (the tensor
  itself, a view, detach(), .data, a NumPy view, inside a tuple, a dict or an object, or stored
  by id in a dict) lets the write reach what backward reads: mutagrad raises, naming the write,
  whatever unpack returns (torch 1.13 checks nothing and differentiates the written values). A
  pair whose pack copies gives torch's gradients. Without a write, every pair gives torch's.
- a pack hook that writes its input is refused before the write (torch raises after it);
- the graph under hooks holds no reference cycle: dropping the user's handles frees what pack
  returned, for the programs that would otherwise close a cycle (and a custom Function's ctx
  does not keep the outputs it saved, with or without hooks).
"""

import gc
import weakref

import pytest
import torch

import mutagrad as mg
from lib_util import assert_phrases, assert_same_outcome, run_both


class Box:
    """A user object holding what pack keeps (looked into through its attributes)."""

    def __init__(self, value):
        self.value = value


def pairs(lib):
    """name -> (pack, unpack, keeps_alias). Each pair gives back the saved tensor's values."""
    store = {}

    def by_id(t):
        store[len(store)] = t
        return len(store) - 1

    def by_id_copy(t):
        store[len(store)] = t.clone()
        return len(store) - 1

    def numpy_view(t):
        return t.detach().numpy()

    return {
        "identity": (lambda t: t, lambda p: p, True),
        "copy_at_pack": (lambda t: t.clone(), lambda p: p, False),
        "copy_at_unpack": (lambda t: t, lambda p: p.clone(), True),
        "times_one_at_unpack": (lambda t: t, lambda p: p * 1, True),
        "detach": (lambda t: t.detach(), lambda p: p, True),
        "detach_copy_at_unpack": (lambda t: t.detach(), lambda p: p.clone(), True),
        "data_copy_at_unpack": (lambda t: t.data, lambda p: p.clone(), True),
        "view": (lambda t: t.view(-1), lambda p: p.clone().view(3), True),
        "dtype_round_trip": (lambda t: t.to(lib.float64), lambda p: p.to(lib.float32), False),
        "same_dtype_to": (lambda t: t.to(lib.float32), lambda p: p.clone(), True),
        "by_id_in_dict": (by_id, lambda k: store[k], True),
        "by_id_in_dict_copy_at_unpack": (by_id, lambda k: store[k].clone(), True),
        "by_id_in_dict_copy_at_pack": (by_id_copy, lambda k: store[k], False),
        "in_tuple": (lambda t: ("saved", t.detach()), lambda p: p[1].clone(), True),
        "in_list": (lambda t: [t.detach()], lambda p: p[0].clone(), True),
        "in_dict": (lambda t: {"t": t.detach()}, lambda p: p["t"].clone(), True),
        "in_object": (lambda t: Box(t.detach()), lambda p: p.value.clone(), True),
        "copy_in_object": (lambda t: Box(t.clone()), lambda p: p.value, False),
        "numpy_view": (numpy_view, lambda p: lib.from_numpy(p.copy()), True),
        "numpy_copy": (lambda t: t.detach().numpy().copy(), lambda p: lib.from_numpy(p), False),
    }


PAIRS = list(pairs(mg))
# What is saved, and the write that changes it after the save:
# input: MulBackward0 saves a non-leaf x twice; leaf: it saves the leaf a (written in no_grad);
# output: ExpBackward0 saves its result; view: MulBackward0 saves a view of a non-leaf.
PROGRAMS = ["input", "leaf", "output", "view"]


def program(lib, kind, pair, write):
    pack, unpack, _ = pairs(lib)[pair]
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a * 1
    base = a * 1
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        if kind == "input":
            y = (x * x).sum()
            target = x
        elif kind == "leaf":
            y = (a * a).sum()
            target = a
        elif kind == "output":
            e = x.exp()
            y = e.sum()
            target = e
        else:
            v = base.view(3)
            y = (v * v).sum()
            target = base
    if write:
        with lib.no_grad():
            target.mul_(100)
    y.backward()
    return a.grad


@pytest.mark.parametrize("kind", PROGRAMS)
@pytest.mark.parametrize("pair", PAIRS)
def test_version_check_follows_what_pack_kept(kind, pair):
    # No write: torch's gradients with every pair.
    assert_same_outcome(*run_both(program, kind, pair, False), exact=False)
    ot, om = run_both(program, kind, pair, True)
    if not pairs(mg)[pair][2]:
        # pack copied: the write cannot reach the saved value; torch gives the same gradient.
        assert_same_outcome(ot, om, exact=False)
        return
    # pack kept an alias: torch 1.13 checks nothing and differentiates the written values;
    # mutagrad refuses, naming the write.
    assert ot.ok
    assert om.kind == "RuntimeError", om
    assert_phrases(om.message, ["modified by an inplace operation", "expected version 0",
                                "The first in-place write after it was saved is mul_"])


def test_issue_34_repro_alias_pack_copy_unpack():
    a = mg.tensor([1., 2., 3.], requires_grad=True)
    x = a * 1
    with mg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t.clone()):
        y = (x * x).sum()
    with mg.no_grad():
        x.mul_(100)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()  # was: a.grad == [200, 400, 600], no error


# ---- a pack hook that writes its input --------------------------------------------------------

WRITES = {
    "iadd": lambda t: t.__iadd__(1),
    "add_": lambda t: t.add_(1),
    "setitem": lambda t: t.__setitem__(0, 5.0),
    "view_mul_": lambda t: t.view(-1).mul_(2),
    "zero_": lambda t: t.zero_(),
    "detach_add_": lambda t: t.detach().add_(1),
    "data_add_": lambda t: t.data.add_(1),  # torch does not see this one
}


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("saved", ["output", "input", "leaf"])
def test_pack_hook_writing_its_input_is_refused_before_the_write(write, saved):
    def scenario(lib):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = a * 1

        def pack(t):
            WRITES[write](t)
            return t

        try:
            with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                if saved == "output":
                    a.exp()
                elif saved == "input":
                    x.sin()
                else:
                    a.sin()
            error = None
        except RuntimeError as e:
            error = str(e)
        return error, a.detach().clone(), x.detach().clone(), a._version, x._version

    ot, om = run_both(scenario)
    assert ot.ok and om.ok, (ot, om)
    t_error, t_a, t_x, _, _ = ot.value
    m_error, m_a, m_x, m_va, m_vx = om.value
    phrase = "A saved tensor pack hook is modifying its input in place."
    assert m_error is not None and phrase in m_error, m_error
    assert "was refused before it changed anything" in m_error
    if write != "data_add_":
        # torch raises after the write (for the leaf, its leaf check may come first).
        assert t_error is not None
    # Nothing changed (torch's write stays done).
    assert m_a.tolist() == [1.0, 2.0, 3.0] and m_x.tolist() == [1.0, 2.0, 3.0]
    assert (m_va, m_vx) == (0, 0)


def test_pack_hook_may_write_a_copy_and_other_tensors():
    def scenario(lib):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        other = lib.zeros(3)

        def pack(t):
            other.add_(t)  # another tensor: allowed
            c = t.clone()
            c += 1  # a copy: allowed
            return c

        with lib.autograd.graph.saved_tensors_hooks(pack, lambda p: p - 1):
            y = a.exp().sum()
        y.backward()
        return a.grad, other
    assert_same_outcome(*run_both(scenario), exact=False)


def test_issue_34_repro_pack_writes_input():
    a = mg.ones(3, requires_grad=True)

    def pack(t):
        t += 1
        return t

    with pytest.raises(RuntimeError, match="pack hook is modifying its input"):
        with mg.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            a.exp()
    assert a.tolist() == [1.0, 1.0, 1.0]


# ---- no reference cycle through the hooks ----------------------------------------------------


class Square(mg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * x
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, _ = ctx.saved_tensors
        return 2 * g * x


def cycle_programs():
    """Programs whose graph would hold a cycle if a node owned what it saved (Note [Saved
    inputs do not own their history], [Saved outputs do not own their node], [Saved views do
    not own their base]); each returns the handles the user keeps."""

    def rebased_input():  # t -> AddBackward0 -> SumBackward0 -> SinBackward0 -> t
        a = mg.ones(3, requires_grad=True)
        t = a * 1
        t.add_(t.sin().sum())
        return [a, t]

    def saved_output():
        a = mg.ones(3, requires_grad=True)
        y = a.exp()
        return [a, y]

    def leaf_create_graph():  # a.grad's graph saves a
        a = mg.ones(3, requires_grad=True)
        (a * a).sum().backward(create_graph=True)
        return [a]

    def view_written_into_base():  # b -> CopySlices -> MulBackward0 -> v -> b
        a = mg.ones(4, requires_grad=True)
        b = a * 1
        v = b[:2]
        b[2:].copy_(v * v)
        return [a, b, v]

    def custom_function():  # y -> SquareBackward -> ctx -> what it saved (y)
        a = mg.ones(3, requires_grad=True)
        y = Square.apply(a * 1)
        return [a, y]

    return {f.__name__: f for f in (rebased_input, saved_output, leaf_create_graph,
                                    view_written_into_base, custom_function)}


@pytest.mark.parametrize("copy", [False, True])
@pytest.mark.parametrize("name", list(cycle_programs()))
def test_graph_under_hooks_is_freed_with_its_tensors(name, copy):
    packed = []

    def pack(t):
        box = Box(t.clone() if copy else t)
        packed.append(weakref.ref(box))
        return box

    with mg.autograd.graph.saved_tensors_hooks(pack, lambda box: box.value):
        handles = cycle_programs()[name]()
    assert any(r() is not None for r in packed), "the program kept nothing under the hooks"
    del handles
    gc.collect()
    alive = [r() for r in packed if r() is not None]
    assert not alive, f"{len(alive)} of {len(packed)} packed objects outlived the graph"


def test_custom_function_graph_is_freed_without_hooks():
    # ctx keeps neither what it saved nor its non-differentiable outputs: output -> node -> ctx
    # -> output would be a cycle through C++ that Python's GC cannot collect.
    contexts = []

    class SaveOutputs(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            contexts.append(weakref.ref(ctx))
            y = x * x
            mask = x > 0
            ctx.save_for_backward(x, y)
            ctx.mark_non_differentiable(mask)
            return y, mask

        @staticmethod
        def backward(ctx, g, gmask):
            x, _ = ctx.saved_tensors
            return 2 * g * x

    a = mg.ones(3, requires_grad=True)
    y, mask = SaveOutputs.apply(a * 1)
    assert contexts[0]() is not None
    del y, mask
    gc.collect()
    assert contexts[0]() is None, "the Function's node (and ctx) outlived its outputs"
