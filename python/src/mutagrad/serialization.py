"""mutagrad.save / mutagrad.load: torch.save's zip format (docs/checkpoints.md).

The C++ side (serialize/checkpoint.h) writes and reads the archive; loading never runs code
from the file (Note [Restricted unpickler] in serialize/pickle.h), whatever weights_only says.
"""
import io
import os
import pickle

from mutagrad import _C


# Note [Checkpoint errors in Python]
# Each C++ error of serialize/errors.h arrives as the class of the same name below, with the
# same hierarchy; all are RuntimeErrors (what torch.load raises for a corrupt archive), and
# UnpicklingError is also a pickle.UnpicklingError (what torch 2's weights_only loader raises
# for a forbidden global), so code written for torch catches ours.
class SerializationError(RuntimeError):
    """Any checkpoint error: I/O (a missing file, a failed write) or a refused file."""


class FormatError(SerializationError):
    """The file is not the format it claims: not a zip archive / safetensors file, truncated, a
    missing or compressed record, an unknown version or byte order, a malformed header."""


class OffsetError(FormatError):
    """Byte ranges out of the data, overlapping, with gaps; a tensor beyond its storage."""


class SizeMismatchError(FormatError):
    """A shape whose element count times the dtype's size is not the record's byte length, or
    whose size overflows int64."""


class UnknownDTypeError(FormatError):
    """A dtype mutagrad does not have (complex or quantized storages, safetensors' U16, F8_*)."""


class UnpicklingError(FormatError, pickle.UnpicklingError):
    """A pickle asking for what a weights file never needs (a global outside the allow list,
    an unknown opcode), or beyond the depth and size limits; nothing of it ran."""



def _stem(path):
    base = os.path.basename(os.fspath(path))
    return base.split(".")[0] or "archive"


class UntypedStorage:
    """One storage's bytes, as a callable map_location receives them (torch.UntypedStorage's
    basics): .device, .is_cuda, .nbytes(), .size(), .cpu(), .cuda(device=None)."""

    def __init__(self, data):
        self._data = data  # a 1-d uint8 tensor over the storage's bytes

    @property
    def device(self):
        return self._data.device

    @property
    def is_cuda(self):
        return self._data.is_cuda

    def nbytes(self):
        return self._data.numel()

    def size(self):
        return self._data.numel()

    def __len__(self):
        return self._data.numel()

    def cpu(self):
        return self if not self.is_cuda else UntypedStorage(self._data.cpu())

    def cuda(self, device=None, non_blocking=False):
        target = "cuda" if device is None else (
            f"cuda:{device}" if isinstance(device, int) else device)
        return UntypedStorage(self._data.to(target))

    def tolist(self):
        return self._data.tolist()

    def __repr__(self):
        return f"mutagrad.serialization.UntypedStorage(device={self.device}, nbytes={len(self)})"


def save(obj, f):
    """Saves tensors, numbers, strings, None and (nested) lists, tuples and dicts of them.

    f: a path (written atomically: temp file, fsync, rename) or a binary file object.
    """
    if isinstance(f, (str, bytes, os.PathLike)):
        _C._save_file(obj, os.fsdecode(f))
        return
    f.write(_C._save_bytes(obj, "archive"))


def load(f, map_location=None, weights_only=True, **kwargs):
    """Loads a checkpoint written by mutagrad.save or torch.save (torch >= 1.6's zip format).

    map_location: as torch.load's. None: each storage where it was saved ("cpu", "cuda:0").
    A device or device string: every storage there. A dict of saved location to location
    ({"cuda:0": "cpu"}): a saved location found as a key is replaced, others kept. A callable
    fn(storage, location): storage is an UntypedStorage on the CPU; fn returns it, moved
    (storage.cuda(1), storage.cpu()), or None for the saved location.
    weights_only: accepted for torch's API; the loader is always weights-only (a file that
    names any other global is an UnpicklingError and nothing of it runs).
    """
    if isinstance(f, (str, bytes, os.PathLike)):
        return _C._load_file(os.fsdecode(f), map_location)
    if isinstance(f, io.BytesIO):
        return _C._load_bytes(f.getvalue(), map_location)
    return _C._load_bytes(f.read(), map_location)
