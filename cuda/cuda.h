// mutagrad::cuda: whether a CUDA device is there, what it is, and the memory its tensors hold
// (torch.cuda's names).
//
//   if (mutagrad::cuda::is_available()) {
//     Tensor g = x.cuda();                         // or x.to(Device(DeviceType::CUDA, 0))
//     std::cout << mutagrad::cuda::device_name();  // "NVIDIA H100 ..." or "host-run (Thrust OMP)"
//     int64_t bytes = mutagrad::cuda::memory_allocated();
//   }
//
// What "available" means depends on the build (docs/cuda.md): the device build asks the CUDA
// driver; the host-run build (tests, --config=cuda_host) is always available and says so in
// device_name(); a build with neither is never available.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/error.h"
#include "tensor/native/factories.h"

namespace mutagrad::cuda {

// The device ran out of memory, even after the caching allocator released its cache. Says what
// was asked, what is allocated and what is cached. Nothing was written.
class OutOfMemoryError : public Error {
  using Error::Error;
};

bool is_available();
// The devices there are (the host-run build simulates MUTAGRAD_HOST_RUN_DEVICE_COUNT of them).
int device_count();
// The process's one device (Note [One device per process] in cuda/runtime.h): chosen from
// LOCAL_RANK (else the MPI launcher's local rank, else rank % device_count(), else 0), or by
// set_device() before the first CUDA tensor; "cuda" without an index means it. DeviceError
// without a device.
int current_device();
// Makes `device` the process's device; DeviceError when it does not exist, or when CUDA memory
// already lives on another device (mutagrad drives one device per process).
void set_device(int device);
// Why is_available() is false ("" when it is true): the CUDA error string, or the build.
std::string unavailable_reason();
// The device's name; in the host-run build "host-run (Thrust OMP)" (or CPP).
std::string device_name(int device = 0);
// "device (nvcc, CUDA runtime 13.0)", "host-run (Thrust OMP), Thrust 3.0.1 headers", or
// "none (built without CUDA)".
std::string build_name();
// Waits for all kernels launched so far (a no-op in the host-run build).
void synchronize();

// Bytes held by live tensors (rounded to the allocator's block sizes), its peak, and the bytes
// the caching allocator holds in total (live + cached).
int64_t memory_allocated();
int64_t max_memory_allocated();
int64_t memory_reserved();
void reset_peak_memory_stats();
// Returns cached, unused blocks to the device.
void empty_cache();

// A CPU tensor in page-locked ("pinned") host memory, which non-blocking transfers copy from
// and into without waiting (torch's Tensor.pin_memory(): self when already pinned, else a
// contiguous copy; Note [Pinned host blocks] in cuda/host_allocator.h). DeviceError for a
// tensor not on the CPU, or without a CUDA device.
Tensor pin_memory(const Tensor& self);
// Whether a tensor's memory is pinned host memory (views of a pinned tensor are); false for
// device tensors and without a CUDA device.
bool is_pinned(const Tensor& self);

// DeviceError naming the reason when no CUDA device is usable; called before a CUDA tensor is
// created.
void check_available();

// The process's CUDA generator (mutagrad::default_generator(kCUDA): Philox, counter-based, Note
// [Counter-based generators] in tensor/generator.h), seed 0 until manual_seed(); torch.cuda's
// names.
//   Tensor r = rand({3}, cuda::default_generator(), TensorOptions().device(kCUDA));
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace mutagrad::cuda
