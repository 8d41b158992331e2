"""Forward-mode AD, as torch.autograd.forward_ad: dual tensors carry a tangent per level, and
each op with a tangent formula gives its result the tangent J(inputs) . tangents. In-place ops,
writes into views and indexed writes update tangents the way docs/forward-ad.md describes.

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, direction)
        y = (x * x).sum()
        jvp = forward_ad.unpack_dual(y).tangent

Unlike torch 1.13, levels nest (each dual_level enters a new, innermost level)."""
from collections import namedtuple

from mutagrad import _C

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
           "make_dual", "unpack_dual"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level():
    """Enters a new, innermost level and returns its index (0 for the outermost)."""
    return _C._enter_dual_level()


def exit_dual_level(*, level=None):
    """Exits `level` (default: the innermost), erasing its tangents from every tensor."""
    if level is None:
        level = _C._current_dual_level()
        if level is None:
            raise RuntimeError("exit_dual_level(): no forward AD level is active")
    _C._exit_dual_level(level)


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` whose tangent at `level` (default: the innermost) is `tangent` (same
    shape, dtype and device; copied into tensor's strides when they differ)."""
    return _C._make_dual(tensor, tangent, level)


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of `tensor` at `level` (default: the innermost); tangent is None when
    it has none (and outside every level)."""
    primal, tangent = _C._unpack_dual(tensor, level)
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Context manager: enters a new level on entry, exits it (erasing its tangents) on exit."""

    def __enter__(self):
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level(level=self.level)
        return False
