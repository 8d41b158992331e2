"""mutagrad.autograd.set_detect_anomaly / detect_anomaly: the stale-tensor error names the Python
line where the needing node's forward ran (and still the write's line); off, it does not."""

import inspect
import os

import pytest

import mutagrad as mg

THIS_FILE = os.path.basename(__file__)


def line():
    return inspect.currentframe().f_back.f_lineno


def test_detect_anomaly_names_the_forward_line():
    a = mg.tensor([1.0, 2.0], dtype=mg.float64).requires_grad_()
    h = a * 2
    assert not mg.autograd.is_anomaly_enabled()
    with mg.autograd.detect_anomaly():
        assert mg.autograd.is_anomaly_enabled()
        loss = (h * h).sum(); forward = line()  # noqa: E702
        h.add_(1.0); write = line()  # noqa: E702
        with pytest.raises(RuntimeError) as info:
            loss.backward()
    assert not mg.autograd.is_anomaly_enabled()
    message = str(info.value)
    assert f"add_ at " in message, message
    assert f"{THIS_FILE}:{write}" in message, message
    assert f"The forward of MulBackward0 ran at {__file__}:{forward}." in message, message


def test_a_node_installed_by_an_in_place_write_names_the_write_line():
    a = mg.tensor([1.0, 2.0], dtype=mg.float64).requires_grad_()
    h = a * 1
    w = a * 3
    with mg.autograd.detect_anomaly():
        h.mul_(w); forward = line()  # noqa: E702  (MulBackward0 saves w)
        w.add_(1.0)
        with pytest.raises(RuntimeError) as info:
            h.sum().backward()
    message = str(info.value)
    assert f"The forward of MulBackward0 ran at {__file__}:{forward}." in message, message


def test_off_by_default_and_set_detect_anomaly():
    a = mg.tensor([1.0, 2.0], dtype=mg.float64).requires_grad_()
    h = a * 2
    loss = (h * h).sum()
    h.add_(1.0)
    with pytest.raises(RuntimeError) as info:
        loss.backward()
    assert "The forward of" not in str(info.value)
    with mg.autograd.set_detect_anomaly(True):
        assert mg.autograd.is_anomaly_enabled()
    assert not mg.autograd.is_anomaly_enabled()
    mg.autograd.set_detect_anomaly(True)
    assert mg.autograd.is_anomaly_enabled()
    mg.autograd.set_detect_anomaly(False)
    assert not mg.autograd.is_anomaly_enabled()
