"""Custom autograd Functions with torch's API (C++: mutagrad::autograd::Function<T>).

    class Exp(mutagrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)        # y.grad_fn.name() == "ExpBackward"

forward runs in no_grad mode; backward receives one gradient per output of forward and
returns one per argument of forward (None for non-tensor arguments and inputs that need
none). See docs/extending.md for mark_dirty (custom in-place ops) and the version checks.
"""

import functools

from mutagrad import _C


class FunctionCtx:
    """The `ctx` of forward and backward. Attributes set on it in forward are visible in
    backward (non-tensor state; tensors go through save_for_backward)."""

    def __init__(self):
        self._to_save = ()
        self._non_differentiable = ()
        self._materialize_grads = True

    def save_for_backward(self, *tensors):
        """Saves tensors (inputs or outputs) for backward; an in-place write to one of them
        after forward makes backward raise, naming the write."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._to_save = tensors

    def mark_dirty(self, *tensors):
        """Declares the inputs forward writes in place. Call it before the write: each is
        checked as the destination of a built-in in-place op (a leaf that requires grad is
        refused) and must be returned by forward."""
        self._state.mark_dirty(tensors)

    def mark_non_differentiable(self, *tensors):
        """Outputs that get no gradient (backward still receives one: zeros, or None with
        set_materialize_grads(False))."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        """True (default): gradients of unused outputs reach backward as zeros; False: None."""
        self._materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        """The tensors of save_for_backward, version-checked (in backward)."""
        return self._state.saved_tensors()


class Function:
    """Base class of custom Functions: define static forward(ctx, *args) and
    backward(ctx, *grad_outputs), call Function.apply(*args)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} is a custom autograd Function: call "
                           f"{type(self).__name__}.apply(...) instead of instantiating it")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward mode (optional): the tangents of forward's arguments (zeros for a tensor
        without one, None for a non-tensor) -> one tangent per output. forward runs on the
        primals; state for jvp goes on ctx as attributes."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args):
        return _C._function_apply(cls, args)


class InplaceFunction(Function):
    """torch's base of Functions with an `inplace` flag (subclass it as Function; forward may
    write its input and call ctx.mark_dirty). Instantiating it stores the flag and warns, as
    torch 1.13 does."""

    def __init__(self, inplace=False):
        import warnings
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions"
                      "are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)
        self.inplace = inplace


def once_differentiable(fn):
    """Decorates a backward that is not itself differentiable: it runs in no_grad mode, and a
    double backward through it raises instead of returning wrong values."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _C.is_grad_enabled()
        _C.set_grad_enabled(False)
        try:
            return fn(ctx, *args)
        finally:
            _C.set_grad_enabled(prev)

    wrapper._mutagrad_once_differentiable = True
    return wrapper
