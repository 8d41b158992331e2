#include "tensor/device.h"

namespace mutagrad {

std::ostream& operator<<(std::ostream& os, DeviceType t) {
  return os << (t == DeviceType::CPU ? "cpu" : "cuda");
}

std::ostream& operator<<(std::ostream& os, const Device& d) {
  os << d.type();
  if (d.is_cuda()) os << ':' << static_cast<int>(d.index());
  return os;
}

}  // namespace mutagrad
