#include "tensor/device.h"

#include "tensor/error.h"

namespace mutagrad {

std::ostream& operator<<(std::ostream& os, DeviceType t) {
  return os << (t == DeviceType::CPU ? "cpu" : "cuda");
}

std::ostream& operator<<(std::ostream& os, const Device& d) {
  os << d.type();
  if (d.is_cuda()) os << ':' << static_cast<int>(d.index());
  return os;
}

void check_same_device(const char* op, Device a, Device b) {
  if (a == b) return;
  throw DeviceError(str(op,
                        "(): Expected all tensors to be on the same device, but found at least "
                        "two devices, ",
                        a, " and ", b, "! Move them to one device with .to(device) first"));
}

}  // namespace mutagrad
