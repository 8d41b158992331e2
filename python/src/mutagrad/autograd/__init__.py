"""mutagrad.autograd: grad, backward, gradcheck and gradgradcheck, with torch's signatures.

    (g,) = mutagrad.autograd.grad((x * x).sum(), x, create_graph=True)   # g == 2 * x
    mutagrad.autograd.gradcheck(lambda t: t.sin().sum(), (x64,))       # True, or raises
"""

import warnings

from mutagrad import _C
from mutagrad.autograd import forward_ad  # noqa: F401
from mutagrad.autograd import functional  # noqa: F401
from mutagrad.autograd import graph  # noqa: F401
from mutagrad.autograd import function  # noqa: F401
from mutagrad.autograd.function import Function  # noqa: F401
from mutagrad.autograd.variable import Variable  # noqa: F401  (torch's alias of Tensor)
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


def _not_implemented(where, **flags):
    for name, value in flags.items():
        if value:
            raise NotImplementedError(
                f"{where}(): {name}=True is not supported by mutagrad (no forward-mode AD and no "
                f"sparse tensors); leave {name} False")


def _check_inputs(inputs):
    # torch's checks, warnings and messages (torch/autograd/gradcheck.py: _check_inputs).
    any_requires_grad = False
    for idx, inp in enumerate(inputs):
        if not (isinstance(inp, _C.Tensor) and inp.requires_grad):
            continue
        if inp.dtype != _C.float64:
            warnings.warn(
                f"Input #{idx} requires gradient and is not a double precision floating point "
                "or complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ")
        if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.size())):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck only supports "
                "inputs that are non-overlapping to be able to compute the numerical gradients "
                "correctly. You should call .contiguous on the input before passing it to "
                "gradcheck.")
        any_requires_grad = True
    if not any_requires_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")


def _run_check(func, inputs, grad_outputs, *, eps, atol, rtol, raise_exception, nondet_tol,
               check_undefined_grad, check_grad_dtypes, check_batched_grad, fast_mode,
               second_order, gen_non_contig_grad_outputs=False, check_forward_ad=False):
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    # Non-tensor arguments (numbers, None, ...) are passed through to func unchanged.
    where = [i for i, v in enumerate(inputs) if isinstance(v, _C.Tensor)]
    tensors = [inputs[i] for i in where]

    def call(*ts):
        args = list(inputs)
        for i, t in zip(where, ts):
            args[i] = t
        return func(*args)

    fn = call if len(where) != len(inputs) else func
    if grad_outputs is not None:
        grad_outputs = list(_tensors(grad_outputs, "grad_outputs"))
    ok, report = _C._gradcheck(fn, tensors, eps, atol, rtol, second_order, float(nondet_tol),
                               bool(check_undefined_grad), bool(check_grad_dtypes),
                               bool(check_batched_grad), bool(fast_mode),
                               bool(gen_non_contig_grad_outputs), grad_outputs, 0,
                               bool(check_forward_ad))
    if not ok and raise_exception:
        raise GradcheckError(report)
    return ok


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              check_sparse_nnz=False, nondet_tol=0.0, check_undefined_grad=True,
              check_grad_dtypes=False, check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False):
    """Compares the gradients backward computes with central differences of `func` at the
    `inputs` that require grad (float64; other floating dtypes warn, as in torch). True when
    every check passes; otherwise raises GradcheckError (or returns False with
    raise_exception=False). Each flag does what torch 1.13's does (docs/python.md, "gradcheck"):
    fast_mode compares random projections v^T J u, nondet_tol bounds the difference between two
    runs of backward, check_undefined_grad backpropagates undefined output gradients,
    check_grad_dtypes compares gradient and input dtypes, check_batched_grad (no vmap here)
    compares backwards for random grad_outputs on rebuilt graphs. check_forward_ad also compares
    the Jacobians from forward-mode AD (mutagrad.autograd.forward_ad) with the numeric ones.
    check_batched_forward_grad and check_sparse_nnz raise NotImplementedError."""
    assert check_forward_ad or check_backward_ad, \
        "Expected at least one of check_forward_ad or check_backward_ad to be True"
    assert not (check_batched_grad and not check_backward_ad), (
        "Setting check_batched_grad=True requires check_backward_ad to be True")
    assert not (check_batched_forward_grad and not check_forward_ad), (
        "Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    _not_implemented("gradcheck", check_batched_forward_grad=check_batched_forward_grad,
                     check_sparse_nnz=check_sparse_nnz)
    return _run_check(func, inputs, None, eps=eps, atol=atol, rtol=rtol,
                      raise_exception=raise_exception, nondet_tol=nondet_tol,
                      check_undefined_grad=check_undefined_grad,
                      check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                      fast_mode=fast_mode, second_order=False,
                      check_forward_ad=check_forward_ad)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False):
    """gradcheck of the first derivatives: checks second derivatives. The first derivatives are
    taken with `grad_outputs` (one per output that requires grad; those requiring grad are
    differentiated too), or random ones (non-contiguous with gen_non_contig_grad_outputs).
    True, or GradcheckError / False as gradcheck. check_fwd_over_rev raises
    NotImplementedError."""
    assert check_fwd_over_rev or check_rev_over_rev, (
        "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    assert not (check_undefined_grad and not check_rev_over_rev), (
        "Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    assert not (check_batched_grad and not check_rev_over_rev), (
        "Setting check_batched_grad=True requires check_rev_over_rev to be True")
    _not_implemented("gradgradcheck", check_fwd_over_rev=check_fwd_over_rev)
    return _run_check(func, inputs, grad_outputs, eps=eps, atol=atol, rtol=rtol,
                      raise_exception=raise_exception, nondet_tol=nondet_tol,
                      check_undefined_grad=check_undefined_grad,
                      check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                      fast_mode=fast_mode, second_order=True,
                      gen_non_contig_grad_outputs=gen_non_contig_grad_outputs)
