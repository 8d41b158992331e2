"""no_grad / enable_grad / set_grad_enabled over the C++ GradMode, as torch's.

    with mutagrad.no_grad():
        y = x * 2                      # not recorded
    mutagrad.set_grad_enabled(False)   # a plain call switches the mode until changed again
"""

import functools

from mutagrad import _C


class _GradModeContext:
    """A context manager (and function decorator) that sets grad mode and restores it."""

    _enabled = True

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._enabled)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_GradModeContext):
    """Disables gradient recording inside the block (in-place ops still bump versions)."""

    _enabled = False


class enable_grad(_GradModeContext):
    """Enables gradient recording inside the block, even within no_grad."""

    _enabled = True


class set_grad_enabled(_GradModeContext):
    """set_grad_enabled(mode): sets grad mode now; as a context manager, restores the previous
    mode on exit."""

    def __init__(self, mode):
        self._prev = _C.is_grad_enabled()
        self._enabled = bool(mode)
        _C.set_grad_enabled(self._enabled)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)

    def clone(self):
        return self.__class__(self._enabled)


class inference_mode(_GradModeContext):
    """inference_mode(mode=True): as torch, a context manager and decorator that turns
    inference mode and, with it, grad mode off (mode=True) or back on (mode=False) inside the
    block. Tensors made inside are inference tensors (Tensor.is_inference()): they keep no
    version counter (_version raises), cannot be saved for backward, and refuse in-place
    writes and requires_grad_() outside inference mode (tensor/inference_mode.h)."""

    def __init__(self, mode=True):
        self._mode = bool(mode)

    def __enter__(self):
        self._prev = (_C.is_grad_enabled(), _C.is_inference_mode_enabled())
        _C._set_inference_mode(self._mode)
        _C.set_grad_enabled(not self._mode)

    def __exit__(self, *exc):
        grad, inference = self._prev
        _C._set_inference_mode(inference)
        _C.set_grad_enabled(grad)

    def clone(self):
        return self.__class__(self._mode)
