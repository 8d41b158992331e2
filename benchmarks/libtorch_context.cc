// Which libtorch a *_vs_libtorch / *_vs_torch2 binary runs against, in Google Benchmark's
// context (the header of the console output, "context" in --benchmark_out JSON):
//   libtorch:          TORCH_VERSION of the headers compiled against (1.13.0 for Debian's
//                      1.13.1, whose headers carry 1.13.0; 2.15.0 for the PyPI wheel)
//   libtorch_library:  the libtorch_cpu.so loaded at run time (proves which one ran)
//   libtorch_config:   its BLAS and the CPU capability its kernels dispatch to
// Linked (alwayslink) into every binary with libtorch cases: benchmarks/benchmarks.bzl.
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <torch/version.h>

#include <sstream>
#include <string>

namespace mutagrad_vs_libtorch {
namespace {

std::string loaded_library() {
  Dl_info info{};
  void (*probe)(int) = &at::set_num_threads;
  if (dladdr(reinterpret_cast<void*>(probe), &info) == 0 || info.dli_fname == nullptr) {
    return "unknown";
  }
  return info.dli_fname;
}

// The lines of at::show_config() that explain kernel speed: BLAS_INFO and CPU capability.
std::string config_summary() {
  std::istringstream config(at::show_config());
  std::string summary;
  for (std::string line; std::getline(config, line);) {
    const auto capability = line.find("CPU capability usage:");
    if (capability != std::string::npos) {
      summary += (summary.empty() ? "" : ", ") + line.substr(capability);
    }
    const auto blas = line.find("BLAS_INFO=");
    if (blas != std::string::npos) {
      summary += (summary.empty() ? "" : ", ") + line.substr(blas, line.find(',', blas) - blas);
    }
  }
  return summary.empty() ? "BLAS and CPU capability not reported" : summary;
}

[[maybe_unused]] const bool kRegistered = [] {
  benchmark::AddCustomContext("libtorch", TORCH_VERSION);
  benchmark::AddCustomContext("libtorch_library", loaded_library());
  benchmark::AddCustomContext("libtorch_config", config_summary());
  return true;
}();

}  // namespace
}  // namespace mutagrad_vs_libtorch
