"""mutagrad.autograd.functional: vjp, jvp, vhp, hvp, jacobian, hessian with torch's signatures.

    from mutagrad.autograd.functional import hvp
    out, hv = hvp(lambda x: (x ** 3).sum(), x, v)   # hv == 6 * x * v

As in torch, inputs (and v) are a Tensor or a tuple of Tensors, and so are the function's
outputs; each result has the structure of what it is indexed by (a Tensor for a Tensor, a tuple
for a tuple). The transforms run in C++ (mutagrad._C); this module only checks and converts
arguments and results.
"""

from mutagrad import _C


def _as_tuple(x, what, fn_name):
    """(tuple of tensors, whether x was a tuple); TypeError for anything but a Tensor or a
    tuple of Tensors (lists included, as torch)."""
    is_tuple = isinstance(x, tuple)
    values = x if is_tuple else (x,)
    for i, v in enumerate(values):
        if not isinstance(v, _C.Tensor):
            where = f"the value at index {i} has" if is_tuple else "it has"
            raise TypeError(f"{fn_name}(): {what} must be a Tensor or a tuple of Tensors, but "
                            f"{where} type {type(v).__name__}")
    return values, is_tuple


def _unpack(values, is_tuple):
    return tuple(values) if is_tuple else values[0]


class _Recorded:
    """Wraps the user's function to check its outputs and record whether they were a tuple."""

    def __init__(self, func, fn_name):
        self.func = func
        self.fn_name = fn_name
        self.is_tuple = None

    def __call__(self, *args):
        out = self.func(*args)
        values, self.is_tuple = _as_tuple(out, "the outputs of the user-provided function",
                                          self.fn_name)
        return values


def _check_v(v, inputs, fn_name, about):
    """v as a list (None entries for None); v=None only for one single-element tensor."""
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(f"{fn_name}(): v can be None only when {about} is a single "
                               "Tensor with one element; pass v with the shape of "
                               f"{about}")
        return [None]
    values, _ = _as_tuple(v, "v", fn_name)
    return list(values)


def _reject_strict(strict, fn_name):
    if strict:
        raise NotImplementedError(f"{fn_name}(): strict=True is not supported; outputs that do "
                                  "not depend on the inputs give zero results")


def _require_vectorize(strategy, vectorize):
    # torch 1.13 batches forward-mode columns with vmap and refuses vectorize=False; we compute
    # them one jvp at a time either way, but accept and refuse the same arguments.
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian is only implemented for `vectorize=True`.")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T J): the products have the structure of `inputs`."""
    _reject_strict(strict, "vjp")
    ins, ins_tuple = _as_tuple(inputs, "inputs", "vjp")
    f = _Recorded(func, "vjp")
    if v is None:
        vs = [None]  # checked in C++: allowed for one one-element output
    else:
        vs = list(_as_tuple(v, "v", "vjp")[0])
    outs, res = _C._vjp(f, list(ins), vs, create_graph)
    return _unpack(outs, f.is_tuple), _unpack(res, ins_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), J v): the products have the structure of func's outputs."""
    _reject_strict(strict, "jvp")
    ins, _ = _as_tuple(inputs, "inputs", "jvp")
    vs = _check_v(v, ins, "jvp", "the input")
    if v is None:
        vs = [_C.ones_like(ins[0])]
    f = _Recorded(func, "jvp")
    outs, res = _C._jvp(f, list(ins), vs, create_graph)
    return _unpack(outs, f.is_tuple), _unpack(res, f.is_tuple)


def _second_order(name, func, inputs, v, create_graph, strict):
    _reject_strict(strict, name)
    ins, ins_tuple = _as_tuple(inputs, "inputs", name)
    vs = _check_v(v, ins, name, "the input")
    if v is None:
        vs = [_C.ones_like(ins[0])]
    f = _Recorded(func, name)
    outs, res = getattr(_C, "_" + name)(f, list(ins), vs, create_graph)
    if f.is_tuple:
        raise RuntimeError(f"{name}(): the function must return a single Tensor with one "
                           "element, not a tuple")
    return outs[0], _unpack(res, ins_tuple)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T H) for a func returning one single-element tensor; the products
    have the structure of `inputs`."""
    return _second_order("vhp", func, inputs, v, create_graph, strict)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), H v) for a func returning one single-element tensor; the products have
    the structure of `inputs`. Forward-over-reverse (one backward pass on dual inputs) unless
    create_graph, which takes the double vjp so that H v can be differentiated again."""
    return _second_order("hvp", func, inputs, v, create_graph, strict)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """J[i][j] = d outputs[i] / d inputs[j], of shape outputs[i].shape + inputs[j].shape.
    A Tensor when inputs and outputs are Tensors; a tuple over the tuple side(s) otherwise.
    strategy="forward-mode" requires vectorize=True, as torch 1.13's (NotImplementedError
    otherwise); the columns are still computed one forward-mode jvp per input element (no vmap:
    a tangent has its primal's shape). With strategy="reverse-mode", vectorize changes nothing."""
    _reject_strict(strict, "jacobian")
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"jacobian(): strategy must be 'reverse-mode' or 'forward-mode', got "
                         f"{strategy!r}")
    _require_vectorize(strategy, vectorize)
    ins, ins_tuple = _as_tuple(inputs, "inputs", "jacobian")
    f = _Recorded(func, "jacobian")
    rows = _C._jacobian(f, list(ins), create_graph, strategy == "forward-mode")
    rows = [_unpack(row, ins_tuple) for row in rows]
    return _unpack(rows, f.is_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """H[i][j] = d^2 func / d inputs[i] d inputs[j] for a func returning one single-element
    tensor. A Tensor for a Tensor input; a tuple of tuples for a tuple of inputs.
    outer_jacobian_strategy="forward-mode": forward-over-reverse (a forward-mode H v per input
    element; requires vectorize=True, as torch 1.13's)."""
    _reject_strict(strict, "hessian")
    if outer_jacobian_strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"hessian(): outer_jacobian_strategy must be 'reverse-mode' or "
                         f"'forward-mode', got {outer_jacobian_strategy!r}")
    _require_vectorize(outer_jacobian_strategy, vectorize)
    ins, ins_tuple = _as_tuple(inputs, "inputs", "hessian")
    f = _Recorded(func, "hessian")
    rows = _C._hessian(f, list(ins), create_graph, outer_jacobian_strategy == "forward-mode")
    if f.is_tuple:
        raise RuntimeError("hessian(): the function must return a single Tensor with one "
                           "element, not a tuple")
    rows = [_unpack(row, ins_tuple) for row in rows]
    return _unpack(rows, ins_tuple)
