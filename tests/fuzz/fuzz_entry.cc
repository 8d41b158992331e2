// libFuzzer's entry point for one target, chosen by MUTAGRAD_FUZZ_TARGET (tests/fuzz/BUILD.bazel).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mutagrad::fuzz::MUTAGRAD_FUZZ_TARGET(data, size);
  return 0;
}
