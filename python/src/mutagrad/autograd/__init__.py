"""mutagrad.autograd: grad, backward, gradcheck and gradgradcheck, with torch's signatures.

    (g,) = mutagrad.autograd.grad((x * x).sum(), x, create_graph=True)   # g == 2 * x
    mutagrad.autograd.gradcheck(lambda t: t.sin().sum(), (x64,))       # True, or raises
"""

from mutagrad import _C
from mutagrad.autograd import functional  # noqa: F401
from mutagrad.autograd import graph  # noqa: F401
from mutagrad.autograd import function  # noqa: F401
from mutagrad.autograd.function import Function  # noqa: F401
from mutagrad.autograd.anomaly_mode import (  # noqa: F401
    detect_anomaly, is_anomaly_enabled, set_detect_anomaly)


# After an in-place write through a view, the view's grad_fn is its own view op replayed on the
# base (SelectBackward0, ...) by default; False gives torch 1.13's AsStridedBackward0 for views
# made afterwards. Gradients are the same either way.
_set_view_replay_enabled = _C._set_view_replay_enabled
_is_view_replay_enabled = _C._is_view_replay_enabled


class GradcheckError(RuntimeError):
    """gradcheck / gradgradcheck found analytic and numeric gradients that differ."""


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _tensors(values, what):
    out = _as_tuple(values)
    for i, v in enumerate(out):
        if v is not None and not isinstance(v, _C.Tensor):
            raise TypeError(f"{what}[{i}] must be a Tensor, got {type(v).__name__}")
    return out


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=False, is_grads_batched=False):
    """Gradients of `outputs` with respect to `inputs` (a tuple, one per input; None for an
    unused input when allow_unused). Nothing is accumulated into .grad."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(): is_grads_batched=True is not supported; "
                                  "call grad once per grad_outputs instead")
    outs = _tensors(outputs, "outputs")
    ins = _tensors(inputs, "inputs")
    gos = _tensors(grad_outputs, "grad_outputs") if grad_outputs is not None else None
    gos = gos or tuple(None for _ in outs)
    if len(gos) != len(outs):
        raise RuntimeError(f"autograd.grad(): got {len(gos)} grad_outputs for {len(outs)} "
                           "outputs; pass one per output (None for a one-element output)")
    if retain_graph is None:
        retain_graph = create_graph
    return tuple(_C._autograd_grad(list(outs), list(ins), list(gos), retain_graph, create_graph,
                                   allow_unused))


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates gradients of `tensors` into the .grad of the leaves (or only of `inputs`)."""
    outs = _tensors(tensors, "tensors")
    gos = _tensors(grad_tensors, "grad_tensors") if grad_tensors is not None else None
    gos = gos or tuple(None for _ in outs)
    if len(gos) != len(outs):
        raise RuntimeError(f"autograd.backward(): got {len(gos)} grad_tensors for {len(outs)} "
                           "tensors; pass one per tensor (None for a one-element tensor)")
    only = list(_tensors(inputs, "inputs")) if inputs is not None else []
    if retain_graph is None:
        retain_graph = create_graph
    _C._autograd_backward(list(outs), list(gos), retain_graph, create_graph, only)


def _check(func, inputs, eps, atol, rtol, raise_exception, second_order):
    ok, report = _C._gradcheck(func, list(_as_tuple(inputs)), eps, atol, rtol, second_order)
    if not ok and raise_exception:
        raise GradcheckError(report)
    return ok


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_backward_ad=True, fast_mode=False):
    """Compares the gradients backward computes with central differences of `func` at the
    float64 `inputs` that require grad. True when they agree; otherwise raises GradcheckError
    (or returns False with raise_exception=False). The check_* flags and fast_mode are
    accepted for torch's signature; the full backward check always runs."""
    return _check(func, inputs, eps, atol, rtol, raise_exception, False)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_rev_over_rev=True, fast_mode=False):
    """gradcheck of the first derivatives (with random grad_outputs): checks second derivatives.
    True, or GradcheckError / False as gradcheck."""
    if grad_outputs is not None:
        raise NotImplementedError("gradgradcheck(): explicit grad_outputs are not supported; "
                                  "leave them None (random ones are drawn)")
    return _check(func, inputs, eps, atol, rtol, raise_exception, True)
