"""mutagrad.autograd.graph.draw: the DOT source, the stale tensor in red with the Python line of
the write, SVG/PNG rendered in process, _repr_svg_."""

import inspect
import os
import re

import pytest

import mutagrad as mg

THIS_FILE = os.path.basename(__file__)


def test_draw_source_and_svg(tmp_path):
    a = mg.tensor([1.0, 2.0, 3.0], dtype=mg.float64).requires_grad_()
    h = a * 2
    loss = (h * h).sum() + h.sigmoid().sum()
    fresh = mg.autograd.graph.draw(loss)
    assert "STALE" not in fresh.source and "fillcolor=red" not in fresh.source
    h.add_(1.0); line = inspect.currentframe().f_lineno  # noqa: E702
    pic = mg.autograd.graph.draw(loss)
    assert pic.source == mg.autograd.graph.draw([loss]).source  # stable
    stale = re.findall(r'label="([^"]*STALE[^"]*)"[^\]]*fillcolor=red', pic.source)
    assert len(stale) == 2, pic.source
    assert all(f"add_ at " in s and s.endswith(f"{THIS_FILE}:{line}") for s in stale), stale
    svg = pic._repr_svg_()
    assert svg.lstrip().startswith("<?xml") and svg.rstrip().endswith("</svg>")
    for name in ("SumBackward0", "MulBackward0", "SigmoidBackward0", "AccumulateGrad"):
        assert f">{name}</text>" in svg, name
    assert svg.count("STALE: add_ at ") == 2
    out = pic.render(tmp_path / "g.png")
    assert open(out, "rb").read()[:8] == b"\x89PNG\r\n\x1a\n"
    pic.render(tmp_path / "g.svg")
    assert (tmp_path / "g.svg").read_text() == svg


def test_draw_errors(tmp_path):
    a = mg.tensor([1.0], dtype=mg.float64).requires_grad_()
    pic = mg.autograd.graph.draw((a * a).sum())
    with pytest.raises(ValueError, match="has no extension"):
        pic.render(tmp_path / "graph")
    with pytest.raises(RuntimeError, match=r"cannot write format 'nope' \(Error: renderer for nope is unavailable\)"):
        pic.pipe("nope")
    with pytest.raises(TypeError, match="must be a Tensor"):
        mg.autograd.graph.draw("loss")
