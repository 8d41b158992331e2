"""mutagrad.safetensors: the API of `safetensors.torch` over serialize/safetensors.h.

save_file / load_file / save / load / safe_open. A CPU load views the file's copy-on-write
mapping (no copy); see docs/checkpoints.md.
"""
import os

from mutagrad import _C
from mutagrad.serialization import SerializationError

# What a refused or unreadable file raises, by the package's name (safetensors.SafetensorError):
# mutagrad.serialization's hierarchy (FormatError, OffsetError, SizeMismatchError, ...).
SafetensorError = SerializationError


def save_file(tensors, filename, metadata=None):
    _C._safetensors_save_file(dict(tensors), os.fsdecode(filename), dict(metadata or {}))


def save(tensors, metadata=None):
    return _C._safetensors_save(dict(tensors), dict(metadata or {}))


def load_file(filename, device="cpu"):
    return _C._safetensors_load_file(os.fsdecode(filename), device)


def load(data, device="cpu"):
    return _C._safetensors_load(bytes(data), device)


class safe_open:
    """with safe_open(path, framework="pt") as f: f.keys(), f.get_tensor(k), f.metadata()."""

    def __init__(self, filename, framework="pt", device="cpu"):
        if framework not in ("pt", "torch", "mutagrad"):
            raise ValueError(f"safe_open: framework {framework!r} is not supported; use 'pt'")
        self._f = _C._SafeOpen(os.fsdecode(filename), device)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f = None
        return False

    def keys(self):
        return self._f.keys()

    def get_tensor(self, name):
        return self._f.get_tensor(name)

    def metadata(self):
        return self._f.metadata()
