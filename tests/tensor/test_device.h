// The device a test binary puts its tensors on: MUTAGRAD_TEST_DEVICE=cuda (set by the *_cuda
// test targets, which link the host-run CUDA backend; a GPU under --config=cuda), else the CPU.
// One test source, run on every device: parameterized by the build, not copied.
//
//   Tensor x = on_test_device(arange(6, kFloat64));   // CPU or cuda:0
#pragma once

#include <cstdlib>
#include <string>

#include "tensor/native/copy.h"
#include "tensor/tensor.h"

namespace mutagrad::testing_device {

inline Device test_device() {
  static const Device device = [] {
    const char* env = std::getenv("MUTAGRAD_TEST_DEVICE");
    return env != nullptr && std::string(env) == "cuda" ? Device(DeviceType::CUDA, 0) : kCPU;
  }();
  return device;
}

// `t` (built on the CPU) on the test's device; the same tensor when that is the CPU.
inline Tensor on_test_device(const Tensor& t) {
  return t.defined() ? native::to(t, test_device()) : t;
}

// A contiguous CPU copy of any tensor (for reading its elements).
inline Tensor host_copy(const Tensor& t) {
  return t.device().is_cpu() ? t : native::contiguous(native::to(t, kCPU));
}

}  // namespace mutagrad::testing_device
