"""Anomaly mode (torch.autograd's names): while on, every node remembers the Python file:line
where its forward ran, and the "modified by an inplace operation" error adds "The forward of
<node> ran at file:line" to the write that made the tensor stale.

    with mutagrad.autograd.detect_anomaly():
        loss = (h * h).sum()      # MulBackward0's forward: this line
        h.add_(1.0)
        loss.backward()           # ... The forward of MulBackward0 ran at train.py:12.

check_nan is accepted for torch's signature; mutagrad does not check for NaN gradients.
"""

from mutagrad import _C


def is_anomaly_enabled():
    return _C._is_anomaly_enabled()


class set_detect_anomaly:
    """Turns anomaly mode on or off; also a context manager restoring the previous mode."""

    def __init__(self, mode, check_nan=True):
        self.prev = _C._is_anomaly_enabled()
        _C._set_detect_anomaly(bool(mode))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_detect_anomaly(self.prev)


class detect_anomaly:
    """Anomaly mode inside the block."""

    def __init__(self, check_nan=True):
        self.prev = False

    def __enter__(self):
        self.prev = _C._is_anomaly_enabled()
        _C._set_detect_anomaly(True)
        return self

    def __exit__(self, *exc):
        _C._set_detect_anomaly(self.prev)
