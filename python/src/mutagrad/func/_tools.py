"""verify, the alias/mutation report and the side-by-side pictures of mutagrad.func
(func/verify.h, func/report.h, func/render.h; docs/functionalization.md)."""

import html
from collections import namedtuple

from mutagrad import _C
from mutagrad._C import _func
from mutagrad.autograd.graph import GraphPicture

VerifyError = _func.VerifyError

# The report's records (func::WriteReport, OutputReport, Regeneration): value ids are the
# captured graph's (%3 is 3); positions of inputs and outputs count from 0.
Write = namedtuple("Write", "node op value storage chain seen_by site invalidates")
# Where a captured write happened (func::WriteSite): its storage's version before the write
# (the write makes it version + 1), the op and the program's file and line.
Site = namedtuple("Site", "version op file line")
Output = namedtuple("Output", "value storage input constant other_outputs")
# A tensor the backward graph of the captured run saved (func::SavedTensor, Note [Stale saved
# tensors]): its backward node and field, the node that saved it, the value and storage (None
# when not the program's), the version it was saved at and its storage's version after the run,
# and the in-place node whose write made it stale (None when it is current or a write outside
# the program did).
Saved = namedtuple("Saved", "backward name node value storage version version_now stale_by")
Regeneration = namedtuple("Regeneration", "value node write")
Difference = namedtuple("Difference", "run what detail")


def _svg(dot):
    return _C._render_dot(dot, "svg").decode("utf-8")


class Report:
    """What a captured program's writes and aliases do (func::alias_report):

    mutated_inputs  positions of the inputs some write reaches
    writes          one Write per in-place node: the value it writes, the view chain from the
                    storage's root, the storage's other values that see it, its Site (the
                    version it moved, its op and line; None when the graph does not know it)
                    and the saved tensors it made stale (indices into saved)
    saved           one Saved per tensor the run's backward graph saved: its version and the
                    write that made it stale
    outputs         one Output per output: its storage, the input whose storage it shares (or
                    None), the other outputs of the same storage
    regenerated     the views functionalize replays after a write reached their storage

    str(report) is the text; Jupyter shows the text and the side-by-side picture."""

    def __init__(self, raw, program, functional):
        self.mutated_inputs = list(raw["mutated_inputs"])
        self.writes = [
            Write(**dict(w, site=None if w["site"] is None else Site(**w["site"])))
            for w in raw["writes"]
        ]
        self.outputs = [Output(**o) for o in raw["outputs"]]
        self.regenerated = [Regeneration(**r) for r in raw["regenerated"]]
        self.saved = [Saved(**s) for s in raw["saved"]]
        self.text = raw["text"]
        self.program = program
        self.functional = functional

    def to_dict(self):
        """The report as plain lists and dicts (JSON-ready)."""
        return {
            "mutated_inputs": list(self.mutated_inputs),
            "writes": [
                dict(w._asdict(), site=None if w.site is None else w.site._asdict())
                for w in self.writes
            ],
            "outputs": [o._asdict() for o in self.outputs],
            "regenerated": [r._asdict() for r in self.regenerated],
            "saved": [s._asdict() for s in self.saved],
        }

    def picture(self):
        """The program and its functional form side by side (a GraphPicture)."""
        return side_by_side(self.program, self.functional)

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"<func.Report: {len(self.writes)} writes, mutated inputs {self.mutated_inputs}>"

    def _repr_html_(self):
        return (f"<pre>{html.escape(self.text)}</pre>"
                f"{_svg(_func.side_by_side_dot(self.program._graph, self.functional._graph))}")


class VerifyResult:
    """What func.verify found: ``ok`` (also ``bool(result)``), ``differences`` (run, what,
    detail), ``first_divergent_node`` (an index into ``captured``'s nodes, or None) and its
    ``first_divergent_code``, the ``summary`` text; ``check()`` raises VerifyError unless ok."""

    def __init__(self, raw, wrap):
        self.differences = [Difference(*d) for d in raw["differences"]]
        self.first_divergent_node = raw["first_divergent_node"]
        self.first_divergent_code = raw["first_divergent_code"]
        self.summary = raw["summary"]
        self.captured = wrap(raw["captured"])
        self.functional = wrap(raw["functional"])

    @property
    def ok(self):
        return not self.differences

    def __bool__(self):
        return self.ok

    def check(self):
        if not self.ok:
            raise VerifyError(self.summary)

    def __str__(self):
        return self.summary

    def __repr__(self):
        return f"<func.VerifyResult: {len(self.differences)} differences>"

    def _repr_html_(self):
        return (f"<pre>{html.escape(self.summary)}</pre>"
                f"{_svg(_func.side_by_side_dot(self.captured._graph, self.functional._graph))}")


def side_by_side(program, functional=None):
    """A GraphPicture of ``program`` (a captured Graph) and ``functional`` (default:
    program.functionalize()) side by side: ``.source`` is the DOT text, ``.render(path)`` draws
    it (svg, png, ...), Jupyter shows it inline."""
    if functional is None:
        functional = program.functionalize()
    return GraphPicture(_func.side_by_side_dot(program._graph, functional._graph))


def report(graph):
    return Report(_func.alias_report(graph._graph), graph, graph.functionalize())


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def verify(f, inputs, remove, transform, wrap):
    if transform is None:
        raw_transform = None
    else:
        def raw_transform(raw):
            return transform(wrap(raw))._graph
    raw = _func.verify(lambda args: _as_list(f(*args)), list(inputs), remove, raw_transform)
    return VerifyResult(raw, wrap)
