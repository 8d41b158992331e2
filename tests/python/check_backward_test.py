"""mutagrad.autograd.graph.check: the dry run of backward agrees with backward, over the random
in-place programs of differential_autograd_test.py (every program: the report is empty iff
backward succeeds, and its first problem names the node backward's error names), and reports
the write's Python file:line."""

import os
import random

import pytest

import mutagrad as mg
from differential_autograd_test import PROGRAMS_PER_SEED, SEEDS, random_program, run_program

THIS_FILE = os.path.basename(__file__)


def dry_run_then_backward(loss):
    """(report, None) when backward succeeds, else (report, error message)."""
    report = mg.autograd.graph.check(loss)
    try:
        loss.backward(retain_graph=True)
    except RuntimeError as e:
        return report, str(e)
    return report, None


@pytest.mark.parametrize("seed", SEEDS)
def test_check_agrees_with_backward_on_random_programs(seed):
    rng = random.Random(seed)
    outcomes = {"ok": 0, "refused": 0}
    for n in range(PROGRAMS_PER_SEED):
        spec = random_program(rng)
        seen = []
        run_program(mg, spec, before_backward=lambda loss: seen.append(dry_run_then_backward(loss)))
        if not seen:
            continue  # the program failed before backward (a refused write)
        report, error = seen[0]
        what = f"program {n}: steps {spec['steps']}\nreport: {report}\nerror: {error}"
        if error is None:
            assert report.ok, what
            outcomes["ok"] += 1
        else:
            assert not report.ok, what
            first = report.problems[0]
            assert first.kind == "stale", what
            assert f"{first.node} saved it" in error, what
            assert (f"is at version {first.current_version}; expected version "
                    f"{first.saved_version}") in error, what
            if first.write_file is not None:
                assert f"{first.write_op} at {first.write_file}:{first.write_line}" in error, what
            outcomes["refused"] += 1
    # Both outcomes occur among the programs that reach backward.
    assert outcomes["ok"] > 10 and outcomes["refused"] > 5, outcomes


def test_check_names_the_python_line_of_the_write():
    a = mg.tensor([1.0, 2.0, 3.0], dtype=mg.float64).requires_grad_()
    h = a * 2
    loss = (h * h).sum()
    assert mg.autograd.graph.check(loss).ok
    line = 0
    h[1] = 0.0; line = _line()  # noqa: E702
    report = mg.autograd.graph.check(loss)
    assert not report.ok and len(report) == 2
    for p in report:
        assert (p.kind, p.node, p.saved_version, p.current_version) == ("stale", "MulBackward0", 0, 1)
        assert tuple(p.shape) == (3,) and p.dtype == "float64"
        assert os.path.basename(p.write_file) == THIS_FILE and p.write_line == line
    assert [p.field for p in report] == ["self", "other"]
    assert f"{THIS_FILE}:{line}" in str(report)
    with pytest.raises(RuntimeError, match="MulBackward0 saved it"):
        loss.backward()


def test_check_released_and_type_errors():
    a = mg.tensor([1.0, 2.0], dtype=mg.float64).requires_grad_()
    loss = (a.exp() * a).sum()
    loss.backward()
    report = mg.autograd.graph.check([loss])
    assert {p.kind for p in report} == {"released"}
    assert "retain_graph" in str(report)
    with pytest.raises(TypeError, match="element 0 must be a Tensor"):
        mg.autograd.graph.check([1.0])


def _line():
    import inspect
    return inspect.currentframe().f_back.f_lineno
