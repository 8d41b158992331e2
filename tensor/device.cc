#include "tensor/device.h"

#include "tensor/error.h"

namespace mutagrad {
namespace {
int8_t (*cuda_index_hook)() = nullptr;
}  // namespace

int8_t current_cuda_index() { return cuda_index_hook != nullptr ? cuda_index_hook() : 0; }

void set_current_cuda_index_hook(int8_t (*hook)()) { cuda_index_hook = hook; }

std::ostream& operator<<(std::ostream& os, DeviceType t) {
  return os << (t == DeviceType::CPU ? "cpu" : "cuda");
}

std::ostream& operator<<(std::ostream& os, const Device& d) {
  os << d.type();
  if (d.is_cuda()) os << ':' << static_cast<int>(d.index());
  return os;
}

Device parse_device(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string type = text.substr(0, colon);
  if (type != "cpu" && type != "cuda") {
    throw ValueError(
        str("Expected one of cpu, cuda device type at start of device string: ", text));
  }
  if (colon == std::string::npos) return type == "cpu" ? kCPU : Device(DeviceType::CUDA);
  const std::string index = text.substr(colon + 1);
  const bool digits = !index.empty() && index.size() <= 3 &&
                      index.find_first_not_of("0123456789") == std::string::npos &&
                      (index.size() == 1 || index[0] != '0');
  if (!digits || std::stoi(index) > 127) {
    throw ValueError(str("Invalid device string: '", text, "'; write cpu, cuda or cuda:<index>"));
  }
  if (type == "cpu" && index != "0") {
    throw ValueError(
        str("Invalid device string: '", text, "': CPU device index must be -1 or zero"));
  }
  return type == "cpu" ? kCPU : Device(DeviceType::CUDA, static_cast<int8_t>(std::stoi(index)));
}

void check_same_device(const char* op, Device a, Device b) {
  if (a == b) return;
  throw DeviceError(str(op,
                        "(): Expected all tensors to be on the same device, but found at least "
                        "two devices, ",
                        a, " and ", b, "! Move them to one device with .to(device) first"));
}

}  // namespace mutagrad
