"""mutagrad.save / mutagrad.load: torch.save's zip format (docs/checkpoints.md).

The C++ side (serialize/checkpoint.h) writes and reads the archive; loading never runs code
from the file (Note [Restricted unpickler] in serialize/pickle.h), whatever weights_only says.
"""
import io
import os

from mutagrad import _C


def _stem(path):
    base = os.path.basename(os.fspath(path))
    return base.split(".")[0] or "archive"


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

    map_location: None (each tensor where it was saved), a device or a device string.
    weights_only: accepted for torch's API; the loader is always weights-only (a file that
    names any other global is an UnpicklingError and nothing of it runs).
    """
    if isinstance(map_location, dict) or (callable(map_location) and
                                          not isinstance(map_location, type)):
        raise TypeError("mutagrad.load: map_location must be None, a device or a device "
                        "string (callables and dicts are not supported)")
    if isinstance(f, (str, bytes, os.PathLike)):
        return _C._load_file(os.fsdecode(f), map_location)
    if isinstance(f, io.BytesIO):
        return _C._load_bytes(f.getvalue(), map_location)
    return _C._load_bytes(f.read(), map_location)
