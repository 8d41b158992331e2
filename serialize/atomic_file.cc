// AtomicFile (Note [Atomic save] in atomic_file.h).
#include "serialize/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "serialize/errors.h"

namespace mutagrad {
namespace serialize {
namespace {

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw SerializationError(str(what, " '", path, "': ", std::strerror(errno)));
}

// The process's umask, read without changing it (umask(2) would, racing other threads).
mode_t current_umask() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  unsigned mask = 022;
  if (f != nullptr) {
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      if (std::sscanf(line, "Umask: %o", &mask) == 1) break;
    }
    std::fclose(f);
  }
  return static_cast<mode_t>(mask);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::vector<char> name(path_.begin(), path_.end());
  const char suffix[] = ".tmp.XXXXXX";
  name.insert(name.end(), suffix, suffix + sizeof(suffix));  // with the terminating NUL
  fd_ = ::mkstemp(name.data());
  if (fd_ < 0) fail("save: cannot create a temporary file beside", path_);
  temp_path_ = name.data();
  // mkstemp makes it 0600; a checkpoint is an ordinary file (0666 less the umask).
  ::fchmod(fd_, 0666 & ~current_umask());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("save: cannot write", temp_path_);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("save: cannot write", temp_path_);
    }
    p += w;
    offset += static_cast<uint64_t>(w);
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("save: cannot fsync", temp_path_);
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("save: cannot close", temp_path_);
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("save: cannot rename onto", path_);
  committed_ = true;
  std::string folder = folder_of(path_);
  int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd < 0) fail("save: cannot open the folder", folder);
  int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) fail("save: cannot fsync the folder", folder);
}

}  // namespace serialize
}  // namespace mutagrad
