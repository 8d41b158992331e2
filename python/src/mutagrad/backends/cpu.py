"""mutagrad.backends.cpu: which build of the CPU kernels runs (tensor/cpu/vec_kernels.h).

    import mutagrad as mg
    mg.backends.cpu.get_cpu_capability()     # "AVX512", "AVX2" or "DEFAULT"

The library is compiled for baseline x86-64; matmul's GEMM, the vectorized exp, log, sin, cos,
tanh and sigmoid and the one-pass optimizer steps are compiled again for AVX2+FMA and for
AVX-512, and the best build the CPU runs is chosen at the first call (Note [CPU capability
dispatch]). ``MUTAGRAD_CPU_CAPABILITY=baseline`` (or ``avx2``, ``avx512``) in the environment
pins a build, as ``ATEN_CPU_CAPABILITY`` does for torch; the builds may differ in the last bits
of GEMM and the transcendentals, as torch's do (the optimizer steps' bits are the same).
"""

from mutagrad import _C

_cpu = _C._cpu

# torch.backends.cpu.get_cpu_capability()'s spelling of each build.
_TORCH_NAMES = {"baseline": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}


def get_cpu_capability():
    """The build of the CPU kernels in use, as torch names it: "DEFAULT", "AVX2" or "AVX512"."""
    return _TORCH_NAMES[_cpu.capability()]


def supported_cpu_capability():
    """The best build this CPU runs ("DEFAULT", "AVX2" or "AVX512"); mutagrad only."""
    return _TORCH_NAMES[_cpu.supported()]


def set_cpu_capability(name):
    """Switches the CPU kernels' build: "DEFAULT"/"baseline", "AVX2"/"avx2" or "AVX512"/"avx512"
    (mutagrad only; ValueError when the CPU cannot run it). Not while another thread runs ops."""
    lowered = str(name).lower()
    _cpu.set_capability("baseline" if lowered == "default" else lowered)
