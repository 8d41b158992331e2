"""mutagrad.autograd.functional: vjp, jvp, vhp, hvp, jacobian, hessian with torch's signatures.

    from mutagrad.autograd.functional import hvp
    out, hv = hvp(lambda x: (x ** 3).sum(), x, v)   # hv == 6 * x * v

As in torch, a Tensor argument gives Tensor results and a tuple gives tuples. The transforms
run in C++ (mutagrad._C); this module only converts arguments and results.
"""

from mutagrad import _C


def _as_tuple(x):
    is_tuple = isinstance(x, (tuple, list))
    return (tuple(x) if is_tuple else (x,)), is_tuple


def _unpack(values, is_tuple):
    return tuple(values) if is_tuple else values[0]


def _ones_like_list(xs):
    return [_C.ones_like(x) for x in xs]


def _product(name, func, inputs, v, create_graph, v_defaults):
    ins, ins_tuple = _as_tuple(inputs)
    if v is None:
        vs = v_defaults(ins)
    else:
        vs, _ = _as_tuple(v)
    outs, res = getattr(_C, name)(func, list(ins), list(vs), create_graph)
    return outs, res, ins_tuple


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): one gradient per input."""
    ins, ins_tuple = _as_tuple(inputs)
    if v is None:
        vs = [None]
    else:
        vs, _ = _as_tuple(v)
    outs, res = _C._vjp(func, list(ins), list(vs), create_graph)
    out_tuple = len(outs) > 1
    return _unpack(outs, out_tuple), _unpack(res, ins_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): one product per output."""
    outs, res, _ = _product("_jvp", func, inputs, v, create_graph, _ones_like_list)
    out_tuple = len(outs) > 1
    return _unpack(outs, out_tuple), _unpack(res, out_tuple)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar func."""
    outs, res, ins_tuple = _product("_vhp", func, inputs, v, create_graph, _ones_like_list)
    return outs[0], _unpack(res, ins_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar func."""
    outs, res, ins_tuple = _product("_hvp", func, inputs, v, create_graph, _ones_like_list)
    return outs[0], _unpack(res, ins_tuple)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """J[i][j] = d outputs[i] / d inputs[j]; nesting follows whether inputs/outputs are tuples."""
    ins, ins_tuple = _as_tuple(inputs)
    out_tuple = isinstance(func(*ins), (tuple, list))
    rows = _C._jacobian(func, list(ins), create_graph)
    rows = [_unpack(row, ins_tuple) for row in rows]
    return _unpack(rows, out_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """H[i][j] = d^2 func / d inputs[i] d inputs[j] for a scalar func."""
    ins, ins_tuple = _as_tuple(inputs)
    rows = _C._hessian(func, list(ins), create_graph)
    rows = [_unpack(row, ins_tuple) for row in rows]
    return _unpack(rows, ins_tuple)
