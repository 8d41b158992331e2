// map_file: a whole file mapped read-only-from-disk (MAP_PRIVATE: writes stay in this process).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace mutagrad {
namespace serialize {

struct MappedFile {
  std::shared_ptr<void> owner;  // unmaps when the last holder goes
  const char* data = nullptr;
  size_t size = 0;
};

// SerializationError if the file cannot be opened or mapped. An empty file maps to size 0.
MappedFile map_file(const std::string& path);

}  // namespace serialize
}  // namespace mutagrad
