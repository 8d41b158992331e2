"""no_grad / enable_grad: context managers (and decorators) over the C++ GradMode."""

import functools

from mutagrad import _C


class _GradModeContext:
    _enabled = True

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):
    """Disables gradient recording inside the block (in-place ops still bump versions)."""

    _enabled = False


class enable_grad(_GradModeContext):
    """Enables gradient recording inside the block, even within no_grad."""

    _enabled = True
