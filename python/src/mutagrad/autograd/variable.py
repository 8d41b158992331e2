"""torch.autograd.Variable, kept by torch as an alias of Tensor (issue 35).

    isinstance(t, mutagrad.autograd.Variable)      # True for every tensor
    v = mutagrad.autograd.Variable(t, requires_grad=True)   # a new leaf sharing t's memory
"""

from mutagrad import _C


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data=None, requires_grad=False, volatile=False): as torch, data.detach() (a new
    leaf sharing data's memory and version counter) with requires_grad set; no data gives an
    empty float tensor. data must be a tensor (torch's TypeError otherwise)."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            out = _C.empty(0)
        elif isinstance(data, _C.Tensor):
            out = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad:
            out.requires_grad_(True)
        return out
