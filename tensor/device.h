// Where a tensor's storage lives: the CPU, or one CUDA device.
//
//   Device cpu = kCPU;                 // Device(DeviceType::CPU)
//   Device gpu(DeviceType::CUDA, 0);   // kCUDA; prints as "cuda:0"
//   Device(DeviceType::CUDA)           // the process's CUDA device (cuda::current_device())
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace mutagrad {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;

// The index of the process's CUDA device, which a CUDA Device made without an index takes
// (Note [One device per process] in cuda/runtime.h). //cuda:api installs the hook at load time;
// without it, 0.
int8_t current_cuda_index();
void set_current_cuda_index_hook(int8_t (*hook)());

class Device {
 public:
  // A CUDA device without an index (-1) is the process's current one, as torch's "cuda".
  constexpr Device(DeviceType type = DeviceType::CPU, int8_t index = -1)  // NOLINT: implicit
      : type_(type), index_(type == DeviceType::CUDA && index < 0 ? current_cuda_index() : index) {}
  constexpr DeviceType type() const { return type_; }
  constexpr int8_t index() const { return index_; }
  constexpr bool is_cpu() const { return type_ == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type_ == DeviceType::CUDA; }
  constexpr bool operator==(const Device& o) const {
    return type_ == o.type_ && index_ == o.index_;
  }
  constexpr bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_;
  int8_t index_;
};

constexpr Device kCPU{DeviceType::CPU};
// cuda:0. A process that drives another device (LOCAL_RANK=1) names it Device(DeviceType::CUDA).
constexpr Device kCUDA{DeviceType::CUDA, 0};

// "cpu", "cuda", "cuda:0", ... as torch.device parses them; ValueError (with torch's text)
// for anything else.
Device parse_device(const std::string& text);

std::ostream& operator<<(std::ostream& os, DeviceType t);
std::ostream& operator<<(std::ostream& os, const Device& d);

// DeviceError with PyTorch's text when an op meets tensors on two devices `a` != `b`:
// "add(): Expected all tensors to be on the same device, but found at least two devices,
// cuda:0 and cpu! Move them to one device with .to(device) first".
void check_same_device(const char* op, Device a, Device b);

}  // namespace mutagrad
