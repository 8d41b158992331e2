#include "indexing/tensor_index.h"

#include <cstring>
#include <sstream>

namespace mutagrad::indexing {

TensorIndex::TensorIndex(const char* str) : type_(TensorIndexType::Ellipsis) {
  if (str == nullptr || std::strcmp(str, "...") != 0) {
    throw ValueError(
        mutagrad::str("TensorIndex: the only string index is \"...\" (Ellipsis), got \"",
                      str == nullptr ? "(null)" : str, "\""));
  }
}

TensorIndex::TensorIndex(Tensor tensor)
    : tensor_(std::move(tensor)), type_(TensorIndexType::Tensor) {
  if (!tensor_.defined()) {
    throw ValueError(
        "TensorIndex: an undefined Tensor cannot be an index; use Slice() to take a dim whole");
  }
}

std::ostream& operator<<(std::ostream& os, const Slice& slice) {
  if (slice.start()) os << *slice.start();
  os << ':';
  if (slice.stop()) os << *slice.stop();
  if (slice.has_step()) os << ':' << slice.step();
  return os;
}

std::ostream& operator<<(std::ostream& os, const TensorIndex& index) {
  switch (index.type()) {
    case TensorIndexType::None:
      return os << "None";
    case TensorIndexType::Ellipsis:
      return os << "...";
    case TensorIndexType::Integer:
      return os << index.integer();
    case TensorIndexType::Boolean:
      return os << (index.boolean() ? "True" : "False");
    case TensorIndexType::Slice:
      return os << index.slice();
    case TensorIndexType::Tensor:
      return os << "tensor(shape=" << index.tensor().sizes()
                << ", dtype=" << dtype_name(index.tensor().dtype()) << ")";
  }
  return os;
}

std::string to_string(ArrayRef<TensorIndex> indices) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < indices.size(); ++i) os << (i ? ", " : "") << indices[i];
  os << ']';
  return os.str();
}

}  // namespace mutagrad::indexing
