#include "serialize/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "serialize/errors.h"

namespace mutagrad {
namespace serialize {

MappedFile map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw SerializationError(str("load: cannot open '", path, "': ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw SerializationError(str("load: '", path, "' is not a regular file"));
  }
  MappedFile m;
  m.size = static_cast<size_t>(st.st_size);
  if (m.size == 0) {
    ::close(fd);
    m.owner = std::make_shared<char>(0);
    m.data = static_cast<const char*>(m.owner.get());
    return m;
  }
  void* addr = ::mmap(nullptr, m.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (addr == MAP_FAILED) {
    throw SerializationError(str("load: cannot mmap '", path, "': ", std::strerror(err)));
  }
  size_t len = m.size;
  m.owner = std::shared_ptr<void>(addr, [len](void* p) { ::munmap(p, len); });
  m.data = static_cast<const char*>(addr);
  return m;
}

}  // namespace serialize
}  // namespace mutagrad
