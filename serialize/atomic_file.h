// AtomicFile: writes a file so that a crash at any moment leaves the old one or the new one.
//
// Note [Atomic save]
// The bytes go to a temporary file in the target's folder ("<name>.tmp.XXXXXX", the same file
// system, so the rename is atomic); commit() fsyncs it, renames it over the target and fsyncs
// the folder, so the rename itself is durable. Until commit() returns, the target is the old
// file (or absent); a process killed before that leaves at most a stray temporary, which the
// destructor of an AtomicFile that did not commit removes (a SIGKILL cannot run it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mutagrad {
namespace serialize {

class AtomicFile {
 public:
  // Creates the temporary file; SerializationError if the folder is not writable.
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the temporary unless committed

  void write(const void* data, size_t n);
  // Writes at `offset` (a zip writer seeks back to fill in a header); write() continues from
  // where the last write() ended, not from here.
  void write_at(uint64_t offset, const void* data, size_t n);
  void commit();
  const std::string& temp_path() const { return temp_path_; }

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace serialize
}  // namespace mutagrad
