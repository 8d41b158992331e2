"""mutagrad.Size (tensor.shape, tensor.size()) and mutagrad.device (tensor.device), shaped
like torch.Size and torch.device.

    x = mutagrad.zeros(2, 3)
    x.shape                      # mutagrad.Size([2, 3]); a tuple: x.shape == (2, 3)
    x.device                     # device(type='cpu')
"""

import builtins
import operator


class Size(tuple):
    """A tensor's sizes: a tuple of ints that prints as ``mutagrad.Size([2, 3])``."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        return super().__new__(cls, (operator.index(s) for s in sizes))

    def __repr__(self):
        return f"mutagrad.Size({list(self)})"

    __str__ = __repr__

    def __getitem__(self, index):
        item = super().__getitem__(index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __mul__(self, times):
        return Size(tuple(self) * times)

    __rmul__ = __mul__

    def numel(self):
        """The number of elements of a tensor of these sizes (1 for ``Size([])``)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __reduce__(self):
        return (Size, (tuple(self),))



class device:
    """Where a tensor lives, as torch.device: ``device("cpu")``, ``device("cuda")``,
    ``device("cuda:0")``, ``device("cuda", 0)``, or an int CUDA index (``device(0)``).

        mutagrad.device("cuda:0")       # device(type='cuda', index=0); str() "cuda:0"
        mutagrad.device("cuda")         # device(type='cuda'): index None, as torch
        x.device                        # device(type='cpu') / device(type='cuda', index=0)

    The string is parsed in C++ (parse_device): anything else raises RuntimeError with
    torch's text ("Expected one of cpu, cuda device type at start of device string: ...").
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):  # noqa: A002  (torch's parameter names)
        if not isinstance(type, (str, builtins.int)) and hasattr(type, "index"):
            # A device, or a torch.device: its (type, index).
            if index is not None:
                raise TypeError("device(): pass either a device or (type, index), not both")
            type, index = builtins.str(type.type), type.index
        if isinstance(type, builtins.int) and not isinstance(type, builtins.bool) and index is None:
            type, index = "cuda", type  # as torch: an int is a CUDA index
        if not isinstance(type, str):
            raise TypeError(
                "device(): expected a str such as 'cpu', 'cuda' or 'cuda:0', a device, or an int "
                f"CUDA index; got {builtins.type(type).__name__}")
        spec = type
        if index is not None:
            if not isinstance(index, builtins.int) or isinstance(index, builtins.bool):
                raise TypeError("device(): argument 'index' (position 2) must be int, not "
                                f"{builtins.type(index).__name__}")
            if ":" in type:
                raise RuntimeError("type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            if index < 0:
                raise RuntimeError("Device index must not be negative")
            spec = f"{type}:{index}"
        parsed_type, parsed_index = _parse_device(spec)
        object.__setattr__(self, "type", parsed_type)
        object.__setattr__(self, "index", parsed_index)

    def __setattr__(self, name, value):
        raise AttributeError(f"device.{name} is read-only: make a new device instead")

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        return isinstance(other, device) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    def __reduce__(self):
        return (device, (self.type, self.index))


def _parse_device(spec):
    from mutagrad import _C  # late: _C imports this module for Tensor.device
    return _C._parse_device(spec)
