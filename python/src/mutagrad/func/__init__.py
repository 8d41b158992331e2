"""Functionalization and capture (docs/functionalization.md).

    g = mutagrad.func.capture(f, x)      # run f once on x, record its ops as a Graph
    print(g)                             # the program as code: views and writes marked
    g(y)                                 # the same ops on y (the interpreter)
    mutagrad.func.parse(g.code)          # the Graph that code prints back (g's constants by id)
    g.functionalize()                    # the pure graph: no in-place op but the final copy_
    pure_f = mutagrad.func.functionalize(f, remove="mutations")
    pure_f(x)                            # capture (on copies), functionalize, run: == f(x)
    mutagrad.func.verify(f, x).check()   # eager, replayed, functionalized agree bit for bit
    g.report(); g.side_by_side()         # writes and aliases; both programs in one picture
"""

from mutagrad._C import _func

CaptureError = _func.CaptureError

_REMOVE = ("mutations", "mutations_and_views")


class Graph:
    """A captured program: ``code`` prints it, calling it runs it on new inputs."""

    def __init__(self, graph, single):
        self._graph = graph
        self._single = single

    @property
    def code(self):
        return self._graph.code

    @property
    def constants(self):
        """The tensors the program read but did not make, by value id (``%N = constant()``)."""
        return dict(self._graph.constants)

    def __str__(self):
        return self._graph.code

    __repr__ = __str__

    def print(self):
        print(self._graph.code, end="")

    def ops(self):
        """The op of each node, in order ("clone", "slice", "mul_", ...)."""
        return list(self._graph.ops())

    def num_inplace(self):
        return self._graph.num_inplace()

    def functionalize(self, remove="mutations"):
        """The pure graph (see functionalize)."""
        _check_remove(remove)
        return Graph(self._graph.functionalize(remove), self._single)

    def __call__(self, *inputs):
        out = self._graph(*inputs)
        return out[0] if self._single else tuple(out)

    # Pictures and the report (docs/functionalization.md, func/render.h, func/report.h).
    @property
    def dot(self):
        """The DOT text of the graph's picture (Note [Graph pictures])."""
        return _func.to_dot(self._graph)

    def picture(self):
        """The graph's picture (a GraphPicture: .source, .render(path), inline in Jupyter)."""
        return _tools.GraphPicture(self.dot)

    def side_by_side(self, functional=None):
        """This graph and its functional form (default: self.functionalize()) in one picture."""
        return _tools.side_by_side(self, functional)

    def report(self):
        """The alias/mutation report (a Report): mutated inputs, writes, aliases, regenerations."""
        return _tools.report(self)

    def _repr_svg_(self):
        return _tools._svg(self.dot)


def _check_remove(remove):
    if remove not in _REMOVE:
        raise ValueError(
            f'functionalize(): remove must be "mutations" or "mutations_and_views", '
            f"got {remove!r}")


def capture(f, *inputs):
    """Runs ``f(*inputs)`` once (for real) and returns what it did as a Graph."""
    single = []

    def program(*args):
        out = f(*args)
        single.append(not isinstance(out, (tuple, list)))
        return out

    graph = _func.capture(program, *inputs)
    return Graph(graph, single[0])


def parse(code, constants=None):
    """The Graph whose code is ``code`` (the text ``str(graph)`` or ``graph.code`` printed),
    ready to run: ``parse(g.code, g.constants)`` prints and runs as ``g``. ``constants`` maps
    the id N of each ``%N = constant()`` line to its tensor (the code does not print its
    values). ValueError naming the line and what was expected on a malformed line. Calling
    the result returns a Tensor when the code returns one value, else a tuple."""
    if isinstance(code, Graph):
        code = code.code
    raw = _func.parse(code, dict(constants or {}))
    return Graph(raw, len(raw.outputs) == 1)


def _copy_for_capture(t):
    # Requires grad (with history) when t does: an op capture does not cover, applied to it,
    # is then refused instead of being baked in as a constant.
    copy = t.detach().clone()
    if not t.requires_grad:
        return copy
    copy.requires_grad_()
    return copy if t.is_leaf else copy.clone()


def functionalize(f, remove="mutations"):
    """``f`` without mutations, as torch.func.functionalize: each call captures ``f`` on copies
    of its inputs, removes the in-place ops (and, with remove="mutations_and_views", the views)
    and runs the pure graph on the inputs; writes to inputs are applied at the end. Results are
    bitwise equal to ``f``'s, gradients equal."""
    _check_remove(remove)

    def wrapped(*inputs):
        copies = [_copy_for_capture(t) for t in inputs]
        return capture(f, *copies).functionalize(remove)(*inputs)

    wrapped.__name__ = getattr(f, "__name__", "functionalized")
    return wrapped


def report(f, *inputs):
    """The alias/mutation report of ``f`` on ``inputs`` (captured on copies): see Graph.report."""
    return capture(f, *[_copy_for_capture(t) for t in inputs]).report()


def verify(f, *inputs, remove="mutations", transform=None):
    """Runs ``f`` eagerly, captured-then-replayed and functionalized (or ``transform(graph)``,
    a Graph -> Graph pass), each on fresh copies of ``inputs``, and compares every output and
    every input afterwards bit for bit, the inputs' versions and the outputs' aliasing
    (Note [What verify compares] in func/verify.h). Returns a VerifyResult; .check() raises
    VerifyError naming what differs and the first node the pass gets wrong."""
    _check_remove(remove)
    return _tools.verify(f, inputs, remove, transform, lambda raw: Graph(raw, False))


from mutagrad.func import _tools  # noqa: E402  (after Graph: _tools wraps graphs in it)
from mutagrad.func._tools import (  # noqa: E402
    Report, VerifyError, VerifyResult, side_by_side)

__all__ = ["CaptureError", "Graph", "Report", "VerifyError", "VerifyResult", "capture",
           "functionalize", "parse", "report", "side_by_side", "verify"]
