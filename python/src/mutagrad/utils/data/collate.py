"""default_collate and default_convert: torch.utils.data._utils.collate 1.13's rules, with
mutagrad tensors. NumPy arrays and scalars are recognized only when NumPy is already imported
(Note [NumPy is optional] in python/convert.cc)."""

import collections.abc
import re
import sys

import mutagrad
from mutagrad import _C

_NP_STR_OBJ = re.compile(r"[SaUO]")

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _numpy():
    return sys.modules.get("numpy")


def default_collate(batch):
    """Stacks a list of samples into a batch: tensors with mutagrad.stack (a new dim 0),
    floats to a float64 tensor, ints (and bools) to an int64 (bool) tensor, NumPy arrays and
    scalars as tensors, str and bytes kept as the list, and dicts, namedtuples, tuples and lists
    collated field by field (a tuple gives a list, as torch)."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, _C.Tensor):
        return mutagrad.stack(list(batch), 0)
    np = _numpy()
    if np is not None:
        if isinstance(elem, np.ndarray):
            if _NP_STR_OBJ.search(elem.dtype.str) is not None:
                raise TypeError(_ERR.format(elem.dtype))
            return default_collate([mutagrad.as_tensor(b) for b in batch])
        if isinstance(elem, (np.bool_, np.number, np.object_)):
            return mutagrad.as_tensor(batch)
    if isinstance(elem, float):
        return mutagrad.tensor(batch, dtype=mutagrad.float64)
    if isinstance(elem, int):
        return mutagrad.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return elem_type(collated)
        except TypeError:  # a mapping type without __init__(dict)
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return elem_type(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(s) for s in zip(*batch)]  # s: a tuple, as torch
        if isinstance(elem, tuple):
            return fields
        try:
            return elem_type(fields)
        except TypeError:  # a sequence type without __init__(list), e.g. range
            return fields
    raise TypeError(_ERR.format(elem_type))


def default_convert(data):
    """The collate of batch_size=None: NumPy arrays (not of strings or objects) to tensors,
    recursively through dicts, namedtuples, tuples and lists; the rest unchanged."""
    np = _numpy()
    if isinstance(data, _C.Tensor):
        return data
    if np is not None:
        if isinstance(data, np.ndarray):
            if _NP_STR_OBJ.search(data.dtype.str) is not None:
                return data
            return mutagrad.as_tensor(data)
        if isinstance(data, (np.bool_, np.number)):
            return mutagrad.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
