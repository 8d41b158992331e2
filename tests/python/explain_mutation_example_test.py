"""examples/explain_mutation.py, the Python twin of examples/explain_mutation.cc, run as a user
would: the three pictures, the dry run naming the stale write's line and the write log (each
record's op, line, shape and the saved tensors it made stale) are checked against its source."""

import contextlib
import io
import json
import os
import runpy

import pytest

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "explain_mutation.py")
EXAMPLE_NAME = "explain_mutation.py"


def line_of(text):
    with open(EXAMPLE) as f:
        lines = [i + 1 for i, line in enumerate(f) if text in line]
    assert len(lines) == 1, (text, lines)
    return lines[0]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pictures")
    namespace = runpy.run_path(EXAMPLE, run_name="explain_mutation")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = namespace["main"](str(folder))
    return folder, status, out.getvalue()


def test_pictures_are_svgs_naming_the_nodes(run):
    folder, _, _ = run
    svgs = {name: (folder / name).read_text() for name in ("safe.svg", "stale.svg", "snapshot.svg")}
    assert all(s.lstrip().startswith("<?xml") and "<svg" in s for s in svgs.values())
    assert "CopySlices" in svgs["safe.svg"]
    stale_line = line_of("h2.add_(1.0)")
    assert f"explain_mutation.py:{stale_line}" in svgs["stale.svg"]
    assert "MulBackward0" in svgs["snapshot.svg"]


def test_dry_run_names_the_stale_write(run):
    _, status, printed = run
    assert status == 0  # main returns 0 when the dry run found the stale tensor
    assert f"add_ at {EXAMPLE_NAME}:{line_of('h2.add_(1.0)')}" in printed.replace(
        os.path.dirname(EXAMPLE) + os.sep, "")
    assert "MulBackward0" in printed
    assert "3 writes, 2 hit saved tensors" in printed


def test_write_log_has_each_write_with_its_line_shape_and_hits(run):
    folder, _, _ = run
    with open(folder / "writes.jsonl") as f:
        records = [json.loads(line) for line in f]
    assert [r["op"] for r in records] == ["mul_", "add_", "add_"]
    assert [r["line"] for r in records] == [
        line_of("h[1].mul_(3.0)"), line_of("h2.add_(1.0)"), line_of("h3.add_(1.0)")]
    assert all(os.path.basename(r["file"]) == "explain_mutation.py" for r in records)
    assert [r["shape"] for r in records] == [[3], [2, 3], [2, 3]]
    assert all(r["dtype"] == "float64" and r["index_expression"] is None for r in records)
    assert records[0]["saved_by"] == []
    assert sorted(records[1]["saved_by"]) == [
        "ExpBackward0.result", "MulBackward0.other", "MulBackward0.self"]
    # h3 saved by ExpBackward0 (its result) and by MulBackward0 (twice): one copy per node.
    assert records[2]["snapshot_bytes"] == 2 * 6 * 8
