"""Mutation policies for values the autograd graph saved (C++: mutagrad::MutationPolicyGuard).

By default (policy "error", PyTorch's behaviour) an in-place write to a tensor that a node saved
for backward goes through, and backward raises, naming the write's Python file:line. Under
"snapshot" a tensor saved while the policy is in effect is copied just before the first write
that would make it stale: the write still reaches every alias, and backward uses the value the
tensor had when it was saved.

    with mutagrad.autograd.graph.allow_mutation_on_saved_tensors():
        h = a * 2
        loss = (h * h).sum()
        h[0] = 0.0          # snapshots the saved h, then writes it
        loss.backward()     # a.grad == 8 * a: the gradient at the saved values

allow_mutation_on_saved_tensors has the name of PyTorch 2's context manager; torch 1.13 has no
counterpart. The policy is per thread and read when a tensor is saved.
"""

import contextlib

from mutagrad import _C


def get_mutation_policy():
    """The calling thread's policy: "error" (the default) or "snapshot"."""
    return _C._get_mutation_policy()


@contextlib.contextmanager
def mutation_policy(policy):
    """Sets the calling thread's mutation policy ("error" or "snapshot") inside the block."""
    previous = _C._get_mutation_policy()
    _C._set_mutation_policy(policy)
    try:
        yield
    finally:
        _C._set_mutation_policy(previous)


class _AllowMutationOnSavedContext:
    """What allow_mutation_on_saved_tensors() yields (torch 2's context object). Tensors saved
    inside keep their values through later writes; a backward through them after the block
    closed raises, as torch 2 (C++: Note [Snapshot scopes] in autograd/mutation_policy.h)."""

    def __init__(self):
        self._previous = None
        self._scope = None

    def __enter__(self):
        if _C._in_snapshot_scope():
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        self._previous = _C._get_mutation_policy()
        _C._set_mutation_policy("snapshot")
        self._scope = _C._enter_snapshot_scope()
        return self

    def __exit__(self, *exc):
        _C._exit_snapshot_scope(self._scope)
        _C._set_mutation_policy(self._previous)


def allow_mutation_on_saved_tensors():
    """As torch 2: inside `with allow_mutation_on_saved_tensors() as ctx:`, an in-place write to
    a tensor saved for backward first copies the saved value (mutation_policy("snapshot")), so
    backward inside the block uses the values as saved; a backward after the block raises
    "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context ...".
    Contexts cannot be nested."""
    return _AllowMutationOnSavedContext()


# A graph node (torch 2's torch.autograd.graph.Node): every grad_fn is an instance, of a
# subclass named after the node (type(y.grad_fn).__name__ == "MulBackward0").
Node = _C.Node


class GradientEdge(tuple):
    """(node, output_nr): where the gradient of a tensor goes (torch 2's GradientEdge)."""

    __slots__ = ()

    def __new__(cls, node, output_nr):
        return tuple.__new__(cls, (node, output_nr))

    @property
    def node(self):
        return self[0]

    @property
    def output_nr(self):
        return self[1]

    def __repr__(self):
        return f"GradientEdge(node={self[0]!r}, output_nr={self[1]})"


def get_gradient_edge(tensor):
    """The GradientEdge of `tensor`: its grad_fn and output number, or for a leaf its
    AccumulateGrad (made if needed) and 0. Raises RuntimeError, as torch 2, for a tensor that
    does not require grad."""
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"get_gradient_edge: expected a Tensor, got {type(tensor).__name__}")
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    return GradientEdge(*_C._gradient_edge(tensor))


def increment_version(tensor):
    """Bumps `tensor`'s version counter once, as an in-place write would (torch 2): saved
    copies of it become stale, and the stale error names this call's line."""
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"increment_version: expected a Tensor, got {type(tensor).__name__}")
    _C._increment_version(tensor)


class saved_tensors_hooks:
    """Inside the block, every tensor a node saves for backward goes through
    pack_hook(tensor) -> object, and unpack_hook(object) -> tensor gives it back when backward
    needs it (torch's semantics). The version check applies when pack keeps an alias of the
    saved tensor (returns it, a view or detach() of it, in a tuple, list, dict or object, or
    stores it elsewhere) or unpack returns one, not when pack copies; pack must not write its
    input in place; MutationPolicy "snapshot" does not apply to packed tensors
    (docs/extending.md)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        _C._pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device in backward
    (pin_memory is accepted for torch's signature and ignored)."""

    def __init__(self, pin_memory=False):
        def pack(tensor):
            return (tensor.device, tensor.cpu())

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack, unpack)


# ---------------------------------------------------------------------------------------------
# Inspection (issue 14): a dry run of backward.


class BackwardCheck:
    """What check() found: `problems` (one per saved tensor backward would refuse, in the order
    backward meets them; each has kind "stale" or "released", node, field, shape, dtype,
    saved_version, current_version and the first write after the save as write_op, write_file,
    write_line; kind "view" first for a root that is a no_grad or multi-output view whose base
    was written since, which backward refuses before running anything), and `ok` (True when
    backward would succeed). str() is the report."""

    def __init__(self, problems, nodes_checked, saved_checked, text):
        self.problems = list(problems)
        self.nodes_checked = nodes_checked
        self.saved_checked = saved_checked
        self._text = text

    @property
    def ok(self):
        return not self.problems

    def __len__(self):
        return len(self.problems)

    def __iter__(self):
        return iter(self.problems)

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"<BackwardCheck: {self._text}>"


def _roots(tensors, what):
    roots = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    for i, t in enumerate(roots):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"{what}: element {i} must be a Tensor, got {type(t).__name__}; "
                            "pass the tensor(s) you would call backward() on")
    return roots


def check(tensors):
    """Walks the graph of `tensors` (a tensor or a list) as backward would, computing nothing,
    and reports every saved tensor backward would refuse: modified in place since it was saved
    (with the write's op and Python file:line) or freed by an earlier backward.

        report = mutagrad.autograd.graph.check(loss)
        if not report.ok:
            print(report)      # backward would fail: ... the first in-place write ... at f.py:12
    """
    return BackwardCheck(*_C._check_backward(_roots(tensors, "check")))


class mutation_log:
    """Records every in-place write (version bump) made inside the block, on any thread: op,
    Python (or C++) file:line, storage number (views share their base's), version before and
    after, the saved tensors of the watched graphs the write makes stale, and the bytes the
    "snapshot" policy copied. C++: mutagrad::autograd::MutationLog.

        with mutagrad.autograd.graph.mutation_log(watch=loss) as log:
            h.add_(1.0)
        log.records          # [{"op": "add_", "file": ..., "line": ..., "saved_by": [...]}]
        log.summary()        # "1 writes, 1 hit saved tensors, 0 bytes snapshotted"
        log.save("mutations.jsonl")

    `watch` (a tensor or a list; also log.watch(t) inside the block): the graphs whose saved
    tensors a write is checked against. Without it, saved_by stays empty."""

    def __init__(self, watch=None):
        self._watch = [] if watch is None else _roots(watch, "mutation_log(watch=...)")
        self._log = None

    def __enter__(self):
        self._log = _C._MutationLog()
        if self._watch:
            self._log.watch(self._watch)
        return self

    def __exit__(self, *exc):
        self._log.stop()

    def _started(self):
        if self._log is None:
            raise RuntimeError("mutation_log: the log has not started; use it as "
                               "`with mutagrad.autograd.graph.mutation_log() as log:`")
        return self._log

    def watch(self, tensors):
        """Also look for the saved tensors of the graphs of `tensors` at later writes."""
        self._started().watch(_roots(tensors, "mutation_log.watch"))

    @property
    def records(self):
        """One dict per write, in order."""
        return self._started().records()

    def __len__(self):
        return self._started().num_writes

    def summary(self):
        """"N writes, K hit saved tensors, B bytes snapshotted"."""
        return self._started().summary()

    def to_jsonl(self):
        """The records as JSON Lines (one object per line)."""
        return self._started().to_jsonl()

    def save(self, path):
        """Writes to_jsonl() to `path`."""
        self._started().write_jsonl(str(path))


class GraphPicture:
    """A picture of a backward graph: `source` is the DOT text (mutagrad::autograd::to_dot:
    saved tensors with their saved and current versions, stale ones red with the write that
    made them stale), render(path) draws it with Graphviz's library in process, and Jupyter
    shows it inline through _repr_svg_."""

    def __init__(self, source):
        self.source = source

    def pipe(self, format="svg"):
        """The rendered bytes in `format` ("svg", "png", "pdf", ...)."""
        return _C._render_dot(self.source, format)

    def render(self, path, format=None):
        """Writes the picture to `path`, in `format` or the format its extension names."""
        path = str(path)
        if format is None:
            base = path.rsplit("/", 1)[-1]
            if "." not in base or base.endswith("."):
                raise ValueError(f"render: the path '{path}' has no extension to name the "
                                 "format; use e.g. graph.svg, or pass format=")
            format = base.rsplit(".", 1)[-1]
        with open(path, "wb") as f:
            f.write(self.pipe(format))
        return path

    def _repr_svg_(self):
        return self.pipe("svg").decode("utf-8")

    def __repr__(self):
        return f"<GraphPicture: {self.source.count('label=')} vertices>"


def draw(tensors):
    """The picture of the graph of `tensors` (a tensor or a list) as it is now.

        pic = mutagrad.autograd.graph.draw(loss)
        pic.render("graph.svg")       # or display it in Jupyter
    """
    return GraphPicture(_C._to_dot(_roots(tensors, "draw")))
