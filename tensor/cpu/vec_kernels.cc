// Picks the build of the per-capability kernels: Note [CPU capability dispatch] in vec_kernels.h.
#include "tensor/cpu/vec_kernels.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "tensor/error.h"

namespace mutagrad::cpu {
namespace {

const VecKernels& table_of(CpuCapability c) {
  return c == CpuCapability::kAvx2 ? avx2::kVecKernels : baseline::kVecKernels;
}

// MUTAGRAD_CPU_CAPABILITY, or the best supported build.
const VecKernels* initial_table() {
  const char* env = std::getenv("MUTAGRAD_CPU_CAPABILITY");
  if (env == nullptr || *env == '\0') return &table_of(cpu_capability_supported());
  for (CpuCapability c : {CpuCapability::kBaseline, CpuCapability::kAvx2}) {
    // "default" as torch's ATEN_CPU_CAPABILITY spells the baseline.
    const bool named = std::strcmp(env, cpu_capability_name(c)) == 0 ||
                       (c == CpuCapability::kBaseline && std::strcmp(env, "default") == 0);
    if (!named) continue;
    if (c != CpuCapability::kBaseline && cpu_capability_supported() != c) {
      throw ValueError(str("MUTAGRAD_CPU_CAPABILITY=", env, ": this CPU cannot run that build (",
                           "it has no AVX2 and FMA); unset it or use \"baseline\""));
    }
    return &table_of(c);
  }
  throw ValueError(
      str("MUTAGRAD_CPU_CAPABILITY=", env,
          " is not a CPU capability: expected \"baseline\" (or \"default\") or \"avx2\" (or "
          "unset for the best this CPU supports, here \"",
          cpu_capability_name(cpu_capability_supported()), "\")"));
}

std::atomic<const VecKernels*> g_table{nullptr};

}  // namespace

const char* cpu_capability_name(CpuCapability c) {
  return c == CpuCapability::kAvx2 ? "avx2" : "baseline";
}

CpuCapability cpu_capability_supported() {
  static const CpuCapability best = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
               ? CpuCapability::kAvx2
               : CpuCapability::kBaseline;
  }();
  return best;
}

void set_cpu_capability(CpuCapability c) {
  if (c == CpuCapability::kAvx2 && cpu_capability_supported() != CpuCapability::kAvx2) {
    throw ValueError(str("set_cpu_capability(avx2): this CPU has no AVX2 and FMA; use \"",
                         cpu_capability_name(CpuCapability::kBaseline), "\""));
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
