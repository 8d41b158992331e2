// Picks the build of the per-capability kernels: Note [CPU capability dispatch] in vec_kernels.h.
#include "tensor/cpu/vec_kernels.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "tensor/error.h"

namespace mutagrad::cpu {
namespace {

const VecKernels& table_of(CpuCapability c) {
  switch (c) {
    case CpuCapability::kAvx512:
      return avx512::kVecKernels;
    case CpuCapability::kAvx2:
      return avx2::kVecKernels;
    case CpuCapability::kBaseline:
      break;
  }
  return baseline::kVecKernels;
}

// What a build needs from the CPU, for messages.
const char* requirement(CpuCapability c) {
  return c == CpuCapability::kAvx512 ? "AVX-512 F, DQ, VL and BW, AVX2 and FMA" : "AVX2 and FMA";
}

// MUTAGRAD_CPU_CAPABILITY, or the best supported build.
const VecKernels* initial_table() {
  const char* env = std::getenv("MUTAGRAD_CPU_CAPABILITY");
  if (env == nullptr || *env == '\0') return &table_of(cpu_capability_supported());
  for (CpuCapability c : kCpuCapabilities) {
    // "default" as torch's ATEN_CPU_CAPABILITY spells the baseline.
    const bool named = std::strcmp(env, cpu_capability_name(c)) == 0 ||
                       (c == CpuCapability::kBaseline && std::strcmp(env, "default") == 0);
    if (!named) continue;
    if (!cpu_capability_runs(c)) {
      throw ValueError(str("MUTAGRAD_CPU_CAPABILITY=", env, ": this CPU cannot run that build (",
                           "it needs ", requirement(c), "); unset it or use \"",
                           cpu_capability_name(cpu_capability_supported()), "\""));
    }
    return &table_of(c);
  }
  throw ValueError(
      str("MUTAGRAD_CPU_CAPABILITY=", env,
          " is not a CPU capability: expected \"baseline\" (or \"default\"), \"avx2\" or "
          "\"avx512\" (or unset for the best this CPU supports, here \"",
          cpu_capability_name(cpu_capability_supported()), "\")"));
}

std::atomic<const VecKernels*> g_table{nullptr};

}  // namespace

const char* cpu_capability_name(CpuCapability c) {
  switch (c) {
    case CpuCapability::kAvx512:
      return "avx512";
    case CpuCapability::kAvx2:
      return "avx2";
    case CpuCapability::kBaseline:
      break;
  }
  return "baseline";
}

CpuCapability cpu_capability_supported() {
  static const CpuCapability best = [] {
    // libgcc's answers include the OS check (XGETBV): a feature whose registers the OS does not
    // save reads as absent.
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                        __builtin_cpu_supports("avx512bw");
    return avx512 ? CpuCapability::kAvx512 : avx2 ? CpuCapability::kAvx2 : CpuCapability::kBaseline;
  }();
  return best;
}

bool cpu_capability_runs(CpuCapability c) {
  return static_cast<int>(c) <= static_cast<int>(cpu_capability_supported());
}

void set_cpu_capability(CpuCapability c) {
  if (!cpu_capability_runs(c)) {
    throw ValueError(str("set_cpu_capability(", cpu_capability_name(c), "): this CPU has no ",
                         requirement(c), "; use \"",
                         cpu_capability_name(cpu_capability_supported()), "\" or below"));
  }
  g_table.store(&table_of(c), std::memory_order_release);
}

const VecKernels& vec_kernels() {
  const VecKernels* t = g_table.load(std::memory_order_acquire);
  if (__builtin_expect(t != nullptr, 1)) return *t;
  static const VecKernels* const initial = initial_table();  // rethrows until the env is fixed
  const VecKernels* expected = nullptr;
  g_table.compare_exchange_strong(expected, initial, std::memory_order_acq_rel);
  return *g_table.load(std::memory_order_acquire);
}

CpuCapability cpu_capability() { return vec_kernels().capability; }

}  // namespace mutagrad::cpu
