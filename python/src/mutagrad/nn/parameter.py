"""mutagrad.nn.Parameter: a Tensor that a Module registers as a parameter when assigned to one
of its attributes. requires_grad defaults to True.

    w = mutagrad.nn.Parameter(mutagrad.zeros(3, 4))
    isinstance(w, mutagrad.Tensor)   # True
    w.requires_grad                  # True

Parameter is a Python subclass of mutagrad._C.Tensor (Note [Parameter is a Tensor subclass] in
python/bindings_module.cc): Parameter(data) is data.detach() (the same storage and version
counter, a new tensor), and that Python object is the one every later operation returns for it
(optimizer param_groups, hooks, named_parameters) while it lives. Results of operations on it
are plain Tensors, as in torch.
"""

import copy

import mutagrad
from mutagrad import _C


class Parameter(_C.Tensor):
    """A tensor that is a module parameter (torch.nn.Parameter)."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = mutagrad.empty(0)
        if not isinstance(data, _C.Tensor):
            raise TypeError(
                f"Parameter: data must be a mutagrad Tensor, got {type(data).__name__}; "
                "convert it with mutagrad.tensor(...)")
        return _C.Tensor._make_subclass(cls, data, bool(requires_grad))

    def __init__(self, data=None, requires_grad=True):
        # Built by __new__; the pybind11 base has no constructor to call.
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        for key, value in self.__dict__.items():
            setattr(result, key, copy.deepcopy(value, memo))
        return result

    def __reduce_ex__(self, proto):
        return (Parameter, (self.detach(), self.requires_grad))
