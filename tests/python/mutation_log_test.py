"""mutagrad.autograd.graph.mutation_log: exactly the writes inside the block (count = the version
deltas), in order, with the Python file:line of each; saved tensors of watched graphs made stale;
kSnapshot's bytes; JSON Lines."""

import inspect
import json
import os

import pytest

import mutagrad as mg

THIS_FILE = os.path.basename(__file__)


def here():
    return inspect.currentframe().f_back.f_lineno


def test_records_exactly_the_writes_inside_the_block():
    x = mg.zeros(4, dtype=mg.float64)
    y = mg.zeros(2, 3, dtype=mg.float64)
    x.add_(1.0)  # before: not recorded
    v0 = x._version + y._version
    lines = []
    with mg.autograd.graph.mutation_log() as log:
        x.mul_(2.0); lines.append(here())  # noqa: E702
        y[1] = 3.0; lines.append(here())  # noqa: E702
        x[1:3].zero_(); lines.append(here())  # noqa: E702
        y.index_put_((mg.tensor([0]),), mg.tensor([[1.0, 2.0, 3.0]], dtype=mg.float64)); lines.append(here())  # noqa: E501,E702
        _ = x * 2  # not a write
    x.add_(1.0)  # after: not recorded
    records = log.records
    assert len(records) == len(log) == (x._version + y._version - v0 - 1) == 4
    assert [r["op"] for r in records] == ["mul_", "set_item_", "zero_", "index_put_"]
    assert [r["line"] for r in records] == lines
    assert all(os.path.basename(r["file"]) == THIS_FILE for r in records)
    assert [r["index"] for r in records] == [0, 1, 2, 3]
    assert [r["storage"] for r in records] == [0, 1, 0, 1]
    assert all(r["version_after"] == r["version_before"] + 1 for r in records)
    assert records[0]["version_before"] == 1
    # The tensor written (x[idx] = v, index_put_: the indexed tensor) and the index expression.
    assert [r["shape"] for r in records] == [[4], [2, 3], [2], [2, 3]]
    assert all(r["dtype"] == "float64" for r in records)
    assert [r["index_expression"] for r in records] == [
        None, "[1]", None, "[tensor(shape=[1], dtype=int64)]"]
    assert log.summary() == "4 writes, 0 hit saved tensors, 0 bytes snapshotted"
    assert [json.loads(line) for line in log.to_jsonl().splitlines()] == records


def test_saved_tensors_hit_and_snapshot_bytes(tmp_path):
    a = mg.tensor([1.0, 2.0, 3.0], dtype=mg.float64).requires_grad_()
    h = a * 2
    loss = (h * h).sum()
    with mg.autograd.graph.mutation_log(watch=loss) as log:
        h.add_(1.0)
        h.add_(1.0)
    assert [r["saved_by"] for r in log.records] == [["MulBackward0.self", "MulBackward0.other"], []]
    assert log.summary() == "2 writes, 1 hit saved tensors, 0 bytes snapshotted"

    h2 = a * 1
    with mg.autograd.graph.mutation_policy("snapshot"):  # backward runs after the block
        loss2 = (h2 * h2.exp()).sum()
    with mg.autograd.graph.mutation_log() as log2:
        log2.watch(loss2)
        h2[0] = 5.0
    (r,) = log2.records
    assert r["snapshot_bytes"] == 3 * 8 and r["op"] == "set_item_"
    assert r["saved_by"] == ["MulBackward0.self"]  # ExpBackward0 saves its result, not h2
    loss2.backward()
    path = tmp_path / "log.jsonl"
    log2.save(path)
    assert json.loads(path.read_text()) == r


def test_errors():
    with pytest.raises(RuntimeError, match="has not started"):
        mg.autograd.graph.mutation_log().records
    with pytest.raises(TypeError, match="must be a Tensor"):
        mg.autograd.graph.mutation_log(watch=[3])
