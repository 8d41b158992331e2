"""Every example of docs/functionalization.md runs as written and round-trips: each Python block
is run (in one namespace, as a reader would, each block as a file f.py so that the sites it
prints name f.py and its lines), what it prints must be the output block that follows it, and
every graph it captures (mutagrad.func.capture, also inside report/verify/functionalize) is
printed, interpreted on fresh copies of its inputs and functionalized: the replay and the pure
graph give eager's results and leave the inputs as eager does, bit for bit. A docs example that
stops working, or whose printed text drifts from what the library prints, fails here."""

import contextlib
import io
import os
import re
import struct

import pytest

import mutagrad as mg

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                   "functionalization.md")


def fences(text):
    """The fenced blocks of a markdown text, as (language, body) in order."""
    return [(m.group(1), m.group(2))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)]


def bits(t):
    values = t.detach().cpu().reshape(-1).tolist()
    return (str(t.dtype), list(t.shape),
            [struct.pack("<d", v) if isinstance(v, float) else v for v in values])


def copies(inputs):
    out = []
    for t in inputs:
        c = t.detach().clone()
        out.append(c.requires_grad_() if t.requires_grad else c)
    return out


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.fixture(scope="module")
def examples(monkeypatch_module):
    with open(DOC) as f:
        blocks = fences(f.read())
    captured = []  # (program, copies of its inputs before the capture ran, graph)
    real_capture = mg.func.capture

    def recording_capture(f, *inputs):
        before = copies(inputs)
        g = real_capture(f, *inputs)
        captured.append((f, before, g))
        return g

    monkeypatch_module.setattr(mg.func, "capture", recording_capture)
    namespace = {"__name__": "f"}
    runs = []  # (source, printed, expected output or None)
    for i, (lang, body) in enumerate(blocks):
        if lang != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(body, "f.py", "exec"), namespace)  # noqa: S102 (the docs' own code)
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        expected = following[1] if following is not None and following[0] == "" else None
        runs.append((body, out.getvalue(), expected))
    return runs, captured


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_every_python_example_prints_its_documented_output(examples):
    runs, _ = examples
    assert len(runs) >= 5, "the docs lost their examples"
    checked = 0
    for source, printed, expected in runs:
        if expected is None:
            continue
        assert printed.rstrip("\n") == expected.rstrip("\n"), source
        checked += 1
    assert checked >= 5


def test_every_captured_graph_round_trips(examples):
    _, captured = examples
    # The write into a view, the optimizer step, the report's program (verify captures in C++).
    assert len(captured) >= 3
    for f, inputs, g in captured:
        code = g.code
        assert code.startswith("graph(") and "return (" in code
        eager_in = copies(inputs)
        eager = as_list(f(*eager_in))
        for graph in (g, g.functionalize(), g.functionalize("mutations_and_views")):
            run_in = copies(inputs)
            out = as_list(graph(*run_in))
            assert [bits(t) for t in out] == [bits(t) for t in eager], (code, str(graph))
            assert [bits(t) for t in run_in] == [bits(t) for t in eager_in], (code, str(graph))
        assert g.functionalize().num_inplace() <= len(inputs)


def test_every_captured_graph_round_trips_through_its_text(examples):
    # print -> parse -> interpret: the graph read back from its code (the captured one and its
    # functional forms) prints the same text and gives eager's results, bit for bit.
    _, captured = examples
    assert len(captured) >= 3
    for f, inputs, g in captured:
        eager_in = copies(inputs)
        eager = as_list(f(*eager_in))
        for graph in (g, g.functionalize(), g.functionalize("mutations_and_views")):
            text = str(graph)
            back = mg.func.parse(text, graph.constants)
            assert back.code == text
            run_in = copies(inputs)
            out = as_list(back(*run_in))
            assert [bits(t) for t in out] == [bits(t) for t in eager], text
            assert [bits(t) for t in run_in] == [bits(t) for t in eager_in], text


def test_parse_refuses_malformed_code_naming_the_line():
    head = "graph(%0: float32[3]):\n"
    with pytest.raises(ValueError, match=r'line 2: "    %1 = mul\(%0, 2.0  # float32\[3\]": '
                                         r'expected "\)"'):
        mg.func.parse(head + "    %1 = mul(%0, 2.0  # float32[3]\n    return (%1)\n")
    with pytest.raises(ValueError, match=r"pass \{1: tensor\}"):
        mg.func.parse(head + "    %1 = constant()  # float32[3]\n"
                      "    %2 = mul(%0, %1)                          # float32[3]\n"
                      "    return (%2)\n")
    with pytest.raises(mg.func.CaptureError) as e:
        mg.func.parse(head + "    %1 = frobnicate(%0)  # float32[3]\n    return (%1)\n")
    assert e.value.op == "frobnicate"
    w = mg.ones(3) * 0.5
    g = mg.func.capture(lambda x: x * w + 1, mg.ones(3))
    assert "constant()" in g.code
    back = mg.func.parse(g.code, g.constants)
    x = mg.arange(3.0)
    assert bits(back(x)) == bits(g(x))
