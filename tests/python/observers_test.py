"""Observers change nothing (Note [Observers change nothing] in autograd/history.h): a corpus of
small programs runs plain and under each observer — mutation_log watching the program's tensors,
anomaly mode, graph.check and graph.draw at every checkpoint, and all at once — and every run
must give the same values, versions, grad_fn names, .grad and errors (type and message).
Issue 34 item 5: under an active mutation_log, `zeros(3).mul_(2)` raised "Output 0 of
UnbindBackward0 is a view and its base ... modified inplace": the log's pre-write hook
regenerated the grad_fn of a watched unbind output. tests/autograd/observer_test.cc runs the
C++ corpus on both devices.
"""

import contextlib
import re

import pytest

import mutagrad as mg

graph = mg.autograd.graph

OBSERVERS = ["mutation_log", "anomaly", "check", "draw", "all"]


class Run:
    """One run of a program: `look(tensors)` is the observer's checkpoint, `step` runs a statement
    and records its outcome, `state` records tensors."""

    def __init__(self, observer):
        self.observer = observer
        self.log = None
        self.lines = []

    def look(self, tensors):
        if self.log is not None:
            self.log.watch(tensors)
            self.log.to_jsonl()
        if self.observer in ("check", "all"):
            str(graph.check(tensors))
        if self.observer in ("draw", "all"):
            graph.draw(tensors).source

    def step(self, name, fn):
        try:
            fn()
            self.lines.append(f"{name}: ok")
        except Exception as e:  # noqa: BLE001 - the outcome is what is compared
            message = str(e)
            if self.observer in ("anomaly", "all"):  # its purpose: where the forward ran
                message = re.sub(r" The forward of \S+ ran .*?(?= Hint:|$)", "", message)
            self.lines.append(f"{name}: {type(e).__name__}: {message}")

    def state(self, name, t):
        grad = None if t.grad is None else t.grad.tolist()
        fn = t.grad_fn  # the program's own read (regenerates as in torch), the same in every run
        self.lines.append(f"{name}: {t.detach().tolist()} v{t._version} "
                          f"{None if fn is None else fn.name()} {grad} {t.requires_grad}")


def unbind_outputs(r):
    a = mg.tensor([1.0, 2, 3, 4, 5, 6], dtype=mg.float64, requires_grad=True)
    b = a.view(3, 2) * 2
    us = b.unbind(0)
    r.look([us[0], us[1], b])
    r.step("b.mul_(2)", lambda: b.mul_(2))
    r.look([us[0], us[2], b])
    r.step("zeros(3).mul_(2)", lambda: mg.zeros(3).mul_(2))  # the repro
    r.step("us[0].grad_fn", lambda: us[0].grad_fn)
    r.step("us[1].sum().backward()", lambda: us[1].sum().backward())
    r.step("b.sum().backward()", lambda: b.sum().backward())
    for name, t in (("a", a), ("b", b)):
        r.state(name, t)


def split_outputs(r):
    x = mg.tensor([1.0, 2, 3, 4, 5], dtype=mg.float64, requires_grad=True)
    y = x * 1
    parts = y.split(2)
    r.look(list(parts))
    r.step("parts[0].add_(1)", lambda: parts[0].add_(1))
    r.step("y.add_(1)", lambda: y.add_(1))
    r.look([parts[0], y])
    r.step("(y * y).sum().backward()", lambda: (y * y).sum().backward())
    r.state("x", x)
    r.state("y", y)


def no_grad_views(r):
    x = mg.tensor([1.0, 2, 3, 4], dtype=mg.float64, requires_grad=True)
    y = x * 2
    with mg.no_grad():
        v = y[0:2]
        w = y[2:4]
    r.look([v, w, y])
    r.step("v.mul_(3)", lambda: v.mul_(3))
    r.step("y.add_(1)", lambda: y.add_(1))
    r.look([v, w, y])
    r.step("w.grad_fn", lambda: w.grad_fn)
    r.step("y.sum().backward()", lambda: y.sum().backward())
    for name, t in (("x", x), ("y", y)):
        r.state(name, t)


def copy_slices(r):
    x = mg.tensor([1.0, 2, 3, 4], dtype=mg.float64, requires_grad=True)
    y = x * 1
    v = y[1:3]
    vt = y.view(2, 2).t()[0]
    r.look([v, vt, y])
    r.step("v.mul_(3)", lambda: v.mul_(3))
    r.look([vt, y])

    def write_through_setitem():
        y[0] = x[3]
    r.step("y[0] = x[3]", write_through_setitem)
    r.look([v, vt])
    r.step("(y * y).sum().backward(retain)", lambda: (y * y).sum().backward(retain_graph=True))
    r.step("vt.sum().backward()", lambda: vt.sum().backward())
    for name, t in (("x", x), ("y", y), ("v", v), ("vt", vt)):
        r.state(name, t)


def leaves_and_stale(r):
    x = mg.tensor([1.0, 2, 3], dtype=mg.float64, requires_grad=True)
    r.look([x])
    r.step("x.add_(1)", lambda: x.add_(1))
    r.step("x[0:2].mul_(2)", lambda: x[0:2].mul_(2))
    h = x * 1
    y = (h * h).sum()
    r.look([y])
    r.step("h.add_(1)", lambda: h.add_(1))
    r.look([y, h])
    r.step("y.backward()", lambda: y.backward())
    r.step("h[5] = 1", lambda: h.__setitem__(5, 1.0))
    r.state("x", x)
    r.state("h", h)


PROGRAMS = [unbind_outputs, split_outputs, no_grad_views, copy_slices, leaves_and_stale]


def run(program, observer):
    r = Run(observer)
    with contextlib.ExitStack() as stack:
        if observer in ("mutation_log", "all"):
            r.log = stack.enter_context(graph.mutation_log())
        if observer in ("anomaly", "all"):
            stack.enter_context(mg.autograd.detect_anomaly())
        r.step("the program", lambda: program(r))
    return r.lines


@pytest.mark.parametrize("observer", OBSERVERS)
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__ for p in PROGRAMS])
def test_observer_changes_nothing(program, observer):
    plain = run(program, None)
    assert plain[-1] == "the program: ok", plain
    assert run(program, observer) == plain


def test_the_corpus_raises_what_it_means_to():
    text = "\n".join(line for p in PROGRAMS for line in run(p, None))
    for expected in ["us[0].grad_fn: RuntimeError: Output 0 of UnbindBackward0 is a view and its "
                     "base", "parts[0].add_(1): RuntimeError: Output 0 of SplitBackward0",
                     "v.mul_(3): RuntimeError: A view was created in no_grad mode",
                     "x.add_(1): RuntimeError: a leaf Variable that requires grad",
                     "y.backward(): RuntimeError: one of the variables needed for gradient",
                     "index 5 is out of bounds for dimension 0", "zeros(3).mul_(2): ok"]:
        assert expected in text, f"{expected}\n{text}"


def test_check_reports_a_view_backward_cannot_rebuild():
    a = mg.tensor([1.0, 2, 3, 4], requires_grad=True)
    b = a.view(2, 2) * 2
    u = b.unbind(0)[0]
    b.add_(1)
    report = graph.check(u)
    assert not report.ok and [p.kind for p in report.problems] == ["view"]
    with pytest.raises(RuntimeError) as e:
        u.sum().backward()
    assert str(e.value) in str(report)
