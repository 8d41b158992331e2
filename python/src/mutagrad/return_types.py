"""Named result pairs of the ops that return two tensors, as torch.return_types.

    values, indices = x.max(dim=1)        # or x.max(dim=1).values / .indices
"""

import collections


def _pair(name):
    base = collections.namedtuple(name, ["values", "indices"])

    def __repr__(self):
        return f"mutagrad.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                                "__module__": "mutagrad.return_types"})


max = _pair("max")  # noqa: A001 (torch's name)
min = _pair("min")  # noqa: A001 (torch's name)
sort = _pair("sort")
topk = _pair("topk")
kthvalue = _pair("kthvalue")
