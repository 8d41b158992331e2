"""mutagrad.cuda: the CUDA device's queries, with torch.cuda's names.

    import mutagrad as mg
    if mg.cuda.is_available():
        x = mg.randn(1000, 1000, device="cuda")
        y = (x @ x).sum().item()              # item() copies the result to the host
        mg.cuda.synchronize()
        print(mg.cuda.get_device_name(), mg.cuda.memory_allocated())

mutagrad drives one GPU per process: the one LOCAL_RANK names (else the MPI launcher's local
rank, else rank % device_count(), else 0), or set_device(n) before the first CUDA tensor;
"cuda" means it, tensors report it (cuda:N), and another index is refused (docs/cuda.md).
Which device a build has (docs/cuda.md, docs/python.md): the default
``./bazelw build //python:mutagrad`` has none (``is_available()`` is False and
``unavailable_reason()`` says how to get one); ``--config=cuda`` is the GPU build;
``--config=cuda_host`` and the Python test suite run the CUDA kernels on the CPU
("host-run"). Everything here is mutagrad::cuda (cuda/cuda.h).
"""

import builtins

from mutagrad import _C
from mutagrad._types import device as _device

_cuda = _C._cuda


def is_available():
    """Whether a CUDA device is usable (False in a build without a CUDA backend)."""
    return _cuda.is_available()


def device_count():
    """The number of CUDA devices there are (0 without one). This process uses one of them,
    current_device()."""
    return _cuda.device_count()


def unavailable_reason():
    """Why is_available() is False ("" when it is True): the build, or the CUDA error."""
    return _cuda.unavailable_reason()


def build_name():
    """Which CUDA backend this build has, e.g. "host-run (Thrust OMP), Thrust 3.0.1 headers"."""
    return _cuda.build_name()


def _index(device, fn):
    """A CUDA device argument (None, an int, "cuda:0", a device) as its index."""
    if device is None:
        return _current_or_zero()
    if isinstance(device, builtins.int) and not isinstance(device, builtins.bool):
        index = device
    else:
        d = _device(device) if isinstance(device, str) else device
        if getattr(d, "type", None) != "cuda":
            raise ValueError(f"{fn}(): expected a cuda device, but got: {device}")
        index = _current_or_zero() if d.index is None else d.index
    count = device_count()
    if count and not 0 <= index < count:
        devices = "1 CUDA device (cuda:0)" if count == 1 else \
            f"{count} CUDA devices (cuda:0 to cuda:{count - 1})"
        raise RuntimeError(f"{fn}(): CUDA device {index} does not exist; there is {devices}. "
                           "Select another GPU with CUDA_VISIBLE_DEVICES")
    return index


def _current_or_zero():
    return current_device() if is_available() else 0


def current_device():
    """The index of this process's CUDA device (raises when there is no CUDA device)."""
    return _cuda.current_device()


def set_device(device):
    """Makes `device` (an int, "cuda:n" or a device) this process's CUDA device. Only before
    the first CUDA tensor: mutagrad drives one device per process, so changing it once memory
    lives on another device raises."""
    if isinstance(device, builtins.int) and not isinstance(device, builtins.bool):
        index = device
    else:
        d = _device(device) if isinstance(device, str) else device
        if getattr(d, "type", None) != "cuda":
            raise ValueError(f"set_device(): expected a cuda device, but got: {device}")
        if d.index is None:
            return
        index = d.index
    if index < 0:  # torch: a negative index is a no-op
        return
    _cuda.set_device(index)


def get_device_name(device=None):
    """The device's name, e.g. "NVIDIA H100 80GB HBM3" or "host-run (Thrust OMP)"."""
    return _cuda.device_name(_index(device, "get_device_name"))


def synchronize(device=None):
    """Waits for all CUDA work launched so far (raises when there is no CUDA device)."""
    _index(device, "synchronize")
    _cuda.synchronize()


def memory_allocated(device=None):
    """Bytes held by live CUDA tensors (in the caching allocator's block sizes); 0 without a
    device."""
    if _index(device, "memory_allocated") != _current_or_zero():
        return 0  # no memory on a device this process does not drive
    return _cuda.memory_allocated()


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since the start or reset_peak_memory_stats()."""
    if _index(device, "max_memory_allocated") != _current_or_zero():
        return 0  # no memory on a device this process does not drive
    return _cuda.max_memory_allocated()


def memory_reserved(device=None):
    """Bytes the caching allocator holds: live tensors and cached free blocks."""
    if _index(device, "memory_reserved") != _current_or_zero():
        return 0  # no memory on a device this process does not drive
    return _cuda.memory_reserved()


def reset_peak_memory_stats(device=None):
    """Starts max_memory_allocated() again from the current memory_allocated()."""
    _index(device, "reset_peak_memory_stats")
    _cuda.reset_peak_memory_stats()


def empty_cache():
    """Returns the caching allocator's unused blocks to the device."""
    _cuda.empty_cache()


def manual_seed(seed):
    """Seeds the CUDA generator (Philox), which rand/randn/randint use for CUDA tensors.
    mutagrad.manual_seed(seed) seeds it too, as torch's does."""
    _cuda.manual_seed(seed)


def manual_seed_all(seed):
    """Seeds every CUDA device's generator: the one device's."""
    _cuda.manual_seed(seed)


def initial_seed():
    """The seed of the CUDA generator."""
    return _cuda.seed()


def seed():
    """Seeds the CUDA generator from a non-deterministic source and returns the seed."""
    return _C._cuda_default_generator.seed()


def seed_all():
    """seed() for every CUDA device: the one device's."""
    return seed()


def get_rng_state(device="cuda"):
    """The CUDA generator's state, a uint8 tensor on the CPU (mutagrad's layout, not torch's)."""
    _index(device, "get_rng_state")
    return _C._cuda_default_generator.get_state()


def get_rng_state_all():
    """[get_rng_state()]: one state per device."""
    return [get_rng_state()]


def set_rng_state(new_state, device="cuda"):
    """Restores the CUDA generator from get_rng_state()'s tensor."""
    _index(device, "set_rng_state")
    _C._cuda_default_generator.set_state(new_state)


def set_rng_state_all(new_states):
    """set_rng_state for each device's state in new_states (one device)."""
    for state in new_states:
        set_rng_state(state)


# torch.cuda.default_generators: one per device (the device's generator, even before the device
# is used; an empty tuple without a device).
default_generators = (_C._cuda_default_generator,) if is_available() else ()
