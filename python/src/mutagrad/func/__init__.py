"""Functionalization and capture (docs/functionalization.md).

    g = mutagrad.func.capture(f, x)      # run f once on x, record its ops as a Graph
    print(g)                             # the program as code: views and writes marked
    g(y)                                 # the same ops on y (the interpreter)
    g.functionalize()                    # the pure graph: no in-place op but the final copy_
    pure_f = mutagrad.func.functionalize(f, remove="mutations")
    pure_f(x)                            # capture (on copies), functionalize, run: == f(x)
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


__all__ = ["CaptureError", "Graph", "capture", "functionalize"]
