"""mutagrad.random: the default generators, as torch.random.

    import mutagrad as mg
    mg.manual_seed(0)                     # the CPU and the CUDA generator; returns the CPU's
    state = mg.get_rng_state()            # a uint8 tensor (mutagrad's layout, not torch's)
    a = mg.rand(3)
    mg.set_rng_state(state)
    assert mg.equal(mg.rand(3), a)
    with mg.random.fork_rng():            # draws inside leave the generators as they were
        mg.randn(5)

Every generator is Philox, counter-based: the same seed gives the same numbers on the CPU and
the CUDA device, and other numbers than torch's (docs/python.md).
"""

import contextlib

from mutagrad import _C
from mutagrad._C import Generator, default_generator, manual_seed  # noqa: F401

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]


def seed():
    """Seeds the CPU and the CUDA generator from a non-deterministic source (std::random_device)
    and returns the seed, as torch.seed()."""
    s = default_generator.seed()
    _C._cuda_default_generator.manual_seed(s)
    return s


def initial_seed():
    """The seed of the CPU generator, as torch.initial_seed()."""
    return default_generator.initial_seed()


def get_rng_state():
    """The CPU generator's state, a uint8 tensor (set_rng_state restores it)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restores the CPU generator from get_rng_state()'s tensor."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True):
    """Saves the CPU generator's state (and the CUDA generator's, unless devices is an empty
    list) and restores them when the block ends, as torch.random.fork_rng."""
    if not enabled:
        yield
        return
    cuda = _C._cuda_default_generator
    fork_cuda = devices is None or len(list(devices)) > 0
    cpu_state = default_generator.get_state()
    cuda_state = cuda.get_state() if fork_cuda else None
    try:
        yield
    finally:
        default_generator.set_state(cpu_state)
        if fork_cuda:
            cuda.set_state(cuda_state)
