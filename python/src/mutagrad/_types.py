"""mutagrad.Size, the type of tensor.shape and tensor.size(), shaped like torch.Size.

    x = mutagrad.zeros(2, 3)
    x.shape                      # mutagrad.Size([2, 3]); a tuple: x.shape == (2, 3)
"""

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
    """Where a tensor lives (tensor.device): ``device(type='cpu')``, str() ``cpu``."""

    __slots__ = ("type", "index")

    def __init__(self, spec):
        name, _, index = str(spec).partition(":")
        self.type = name
        self.index = int(index) if index else None

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
