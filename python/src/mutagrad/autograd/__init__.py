"""mutagrad.autograd: grad, backward, gradcheck and gradgradcheck, with torch's signatures."""

from mutagrad import _C
from mutagrad.autograd import functional  # noqa: F401


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """Gradients of `outputs` with respect to `inputs`, as torch.autograd.grad."""
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    gos = _as_tuple(grad_outputs) or tuple(None for _ in outs)
    if retain_graph is None:
        retain_graph = create_graph
    return tuple(_C._autograd_grad(list(outs), list(ins), list(gos), retain_graph, create_graph,
                                   allow_unused))


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """Accumulates gradients of `tensors` into the leaves' .grad, as torch.autograd.backward."""
    outs = _as_tuple(tensors)
    gos = _as_tuple(grad_tensors) or tuple(None for _ in outs)
    if retain_graph is None:
        retain_graph = create_graph
    _C._autograd_backward(list(outs), list(gos), retain_graph, create_graph)


def gradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compares analytic and central-difference gradients of `func` at float64 `inputs`."""
    return _C._gradcheck(func, list(_as_tuple(inputs)), eps, atol, rtol, raise_exception, False)


def gradgradcheck(func, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True):
    """gradcheck of the first-order gradients: checks second derivatives."""
    return _C._gradcheck(func, list(_as_tuple(inputs)), eps, atol, rtol, raise_exception, True)
