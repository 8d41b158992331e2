"""mutagrad.backends.cpu: which build of the CPU kernels runs (tensor/cpu/vec_kernels.h).

    import mutagrad as mg
    mg.backends.cpu.get_cpu_capability()     # "AVX2" on x86-64 CPUs since 2013, else "DEFAULT"

The library is compiled for baseline x86-64; matmul's GEMM and the vectorized exp, log, sin,
cos, tanh and sigmoid are compiled a second time for AVX2+FMA and chosen at the first call
when the CPU has both (Note [CPU capability dispatch]). ``MUTAGRAD_CPU_CAPABILITY=baseline``
(or ``avx2``) in the environment pins a build, as ``ATEN_CPU_CAPABILITY`` does for torch; the
two builds may differ in the last bits of those ops, as torch's do.
"""

from mutagrad import _C

_cpu = _C._cpu

# torch.backends.cpu.get_cpu_capability()'s spelling of each build.
_TORCH_NAMES = {"baseline": "DEFAULT", "avx2": "AVX2"}


def get_cpu_capability():
    """The build of the CPU kernels in use, as torch names it: "DEFAULT" or "AVX2"."""
    return _TORCH_NAMES[_cpu.capability()]


def supported_cpu_capability():
    """The best build this CPU runs ("DEFAULT" or "AVX2"); mutagrad only."""
    return _TORCH_NAMES[_cpu.supported()]


def set_cpu_capability(name):
    """Switches the CPU kernels' build: "DEFAULT"/"baseline" or "AVX2"/"avx2" (mutagrad only;
    ValueError when the CPU cannot run it). Not while another thread runs ops."""
    lowered = str(name).lower()
    _cpu.set_capability("baseline" if lowered == "default" else lowered)
