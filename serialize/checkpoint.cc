// PyTorch's zip checkpoint format (checkpoint.h) over libzip.
#include "serialize/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "mutagrad.h"
#include "serialize/atomic_file.h"
#include "serialize/crc32.h"
#include "serialize/errors.h"
#include "serialize/pickle.h"
#include "serialize/zip_writer.h"

namespace mutagrad {

using serialize::FormatError;
using serialize::SerializationError;
using serialize::SizeMismatchError;
using serialize::Value;

namespace {

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

// The folder torch names the records after: the file's name without folder or extension.
std::string stem(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.find('.');
  base = base.substr(0, dot);
  return base.empty() ? "archive" : base;
}

// Note [Storage records are read with pread]
// An archive is read through RawSource, a zip_source of ours over a descriptor (load) or
// memory (load_from_bytes): libzip parses and checks the directories and the local headers
// through it, and small records (data.pkl, version, byteorder) are read through libzip. A
// storage record is not: libzip checks a stored record's CRC-32 with zlib's (about 0.9 GiB/s
// here, half a plain read's speed), whatever the flags (zip_source_zip_new's needs_crc). So
// read_storage has libzip read the record's first byte, which tells RawSource where the
// record's data begins (the last READ's offset), and then preads the record in 1 MiB chunks
// straight into the tensor's memory, each CRC-32'd while in cache (crc32.h), and compares the
// CRC with the directory's: a damaged storage is a FormatError, as a damaged pickle is (read()
// compares the small records' CRCs itself too: libzip compares only when a read reaches a
// record's end, and a read of exactly its size never asks for more).
// (Advising the storages onto transparent huge pages, as numpy does, made a 1 GiB load slower
// here: the kernel compacts memory to find them.)
class RawSource {
 public:
  RawSource(int fd, uint64_t size) : fd_(fd), size_(size) { zip_error_init(&error_); }
  RawSource(const char* data, uint64_t size) : mem_(data), size_(size) { zip_error_init(&error_); }
  ~RawSource() {
    if (fd_ >= 0) ::close(fd_);
    zip_error_fini(&error_);
  }
  RawSource(const RawSource&) = delete;
  RawSource& operator=(const RawSource&) = delete;
  uint64_t size() const { return size_; }
  uint64_t last_read_offset() const { return last_read_; }

  // Up to `n` bytes at `offset` (fewer only at the end of the file); -1 with errno on failure.
  int64_t read_at(uint64_t offset, char* out, uint64_t n) const {
    n = offset >= size_ ? 0 : std::min<uint64_t>(n, size_ - offset);
    if (fd_ < 0) {
      if (n > 0) std::memcpy(out, mem_ + offset, n);
      return static_cast<int64_t>(n);
    }
    uint64_t done = 0;
    while (done < n) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(n - done, uint64_t{1} << 30));
      ssize_t got = ::pread(fd_, out + done, want, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return -1;
      if (got == 0) break;  // the file shrank under us
      done += static_cast<uint64_t>(got);
    }
    return static_cast<int64_t>(done);
  }

  static zip_int64_t callback(void* self, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    auto* s = static_cast<RawSource*>(self);
    switch (cmd) {
      case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(
            ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR,
            ZIP_SOURCE_FREE, ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL, ZIP_SOURCE_SUPPORTS, -1);
      case ZIP_SOURCE_OPEN:
        s->pos_ = 0;
        return 0;
      case ZIP_SOURCE_READ: {
        s->last_read_ = s->pos_;
        int64_t got = s->read_at(s->pos_, static_cast<char*>(data), len);
        if (got < 0) {
          zip_error_set(&s->error_, ZIP_ER_READ, errno);
          return -1;
        }
        s->pos_ += static_cast<uint64_t>(got);
        return got;
      }
      case ZIP_SOURCE_CLOSE:
        return 0;
      case ZIP_SOURCE_STAT: {
        auto* st = static_cast<zip_stat_t*>(data);
        zip_stat_init(st);
        st->size = s->size_;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof(zip_stat_t);
      }
      case ZIP_SOURCE_SEEK: {
        zip_int64_t to = zip_source_seek_compute_offset(s->pos_, s->size_, data, len, &s->error_);
        if (to < 0) return -1;
        s->pos_ = static_cast<uint64_t>(to);
        return 0;
      }
      case ZIP_SOURCE_TELL:
        return static_cast<zip_int64_t>(s->pos_);
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&s->error_, data, len);
      case ZIP_SOURCE_FREE:
        delete s;
        return 0;
      default:
        zip_error_set(&s->error_, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
  }

 private:
  int fd_ = -1;
  const char* mem_ = nullptr;
  uint64_t size_, pos_ = 0, last_read_ = 0;
  zip_error_t error_;
};

// A reader of one archive's records, all stored (uncompressed): sizes are bounded by the file.
class Archive {
 public:
  // Reads `bytes` (kept alive by the caller).
  static Archive of_bytes(const std::string& bytes) {
    return of_source(new RawSource(bytes.data(), bytes.size()), "memory");
  }
  // Reads the file at `path` as records are asked for: never the whole file at once.
  static Archive of_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      throw SerializationError(str("load: cannot open '", path, "': ", std::strerror(errno)));
    }
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw SerializationError(str("load: '", path, "' is not a regular file"));
    }
    return of_source(new RawSource(fd, static_cast<uint64_t>(st.st_size)), path);
  }

  // Takes `raw` (libzip frees it with the archive, or here on failure).
  static Archive of_source(RawSource* raw, const std::string& what) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_function_create(&RawSource::callback, raw, &error);
    zip_error_fini(&error);
    if (src == nullptr) {
      delete raw;
      throw SerializationError(str("load: libzip cannot read ", what));
    }
    return Archive(src, raw);
  }

  // Takes `src` (freed on failure too), whose RawSource is `raw`: no record may claim more
  // than its bytes (memory bounded by the file).
  Archive(zip_source_t* src, const RawSource* raw) : raw_(raw), file_size_(raw->size()) {
    zip_error_t error;
    zip_error_init(&error);
    zip_ = ZipPtr(zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error));
    if (!zip_) {
      zip_source_free(src);
      std::string why = zip_error_strerror(&error);
      zip_error_fini(&error);
      throw FormatError(str("load: not a readable zip archive (", why,
                            "); torch.save's legacy format (_use_new_zipfile_serialization="
                            "False) is not read: re-save it with a recent torch"));
    }
    zip_error_fini(&error);
    if (zip_get_num_entries(zip_.get(), 0) <= 0) throw FormatError("load: the archive is empty");
    std::string first = zip_get_name(zip_.get(), 0, 0);
    size_t slash = first.find('/');
    if (slash == std::string::npos) {
      throw FormatError(str("load: the record '", first, "' is not inside a folder"));
    }
    prefix_ = first.substr(0, slash + 1);
  }

  bool has(const std::string& name) const {
    return zip_name_locate(zip_.get(), (prefix_ + name).c_str(), 0) >= 0;
  }

  // The record's size; FormatError if absent or compressed.
  uint64_t size(const std::string& name) const {
    zip_stat_t st;
    if (zip_stat(zip_.get(), (prefix_ + name).c_str(), 0, &st) != 0) {
      throw FormatError(str("load: the archive has no record '", prefix_, name, "'"));
    }
    if (!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_METHOD) ||
        st.comp_method != ZIP_CM_STORE) {
      throw FormatError(str("load: the record '", prefix_, name,
                            "' is compressed; torch stores records uncompressed, and a "
                            "compressed one could expand beyond the file's size"));
    }
    if (st.size > file_size_ || ((st.valid & ZIP_STAT_COMP_SIZE) && st.comp_size != st.size)) {
      throw FormatError(str("load: the record '", prefix_, name, "' claims ", st.size,
                            " bytes in an archive of ", file_size_,
                            " bytes; the archive is truncated or corrupt"));
    }
    return st.size;
  }

  // The whole record `name` (n bytes, size() checked) through libzip, CRC-checked by us
  // (libzip compares its CRC only when a read reaches the record's end, which a read of
  // exactly n bytes does not).
  void read(const std::string& name, void* out, uint64_t n) const {
    zip_int64_t got = n == 0 ? 0 : read_prefix(name, out, n);
    if (got < 0 || static_cast<uint64_t>(got) != n) {
      throw FormatError(str("load: the record '", prefix_, name, "' is truncated or corrupt"));
    }
    check_crc(name, serialize::crc32(0, out, static_cast<size_t>(n)));
  }

  // A storage record (n bytes, size() checked) by pread (Note [Storage records are read with
  // pread]).
  void read_storage(const std::string& name, char* out, uint64_t n) const {
    if (n == 0) return check_crc(name, 0);
    if (read_prefix(name, out, 1) != 1) {
      throw FormatError(str("load: the record '", prefix_, name, "' is truncated or corrupt"));
    }
    uint64_t offset = raw_->last_read_offset();
    if (offset > file_size_ || n > file_size_ - offset) {
      throw FormatError(str("load: the record '", prefix_, name, "' of ", n, " bytes at offset ",
                            offset, " runs past the archive's end (", file_size_,
                            " bytes); the archive is truncated"));
    }
    uint32_t crc = 0;
    constexpr uint64_t kChunk = uint64_t{1} << 20;
    for (uint64_t done = 0; done < n;) {
      uint64_t chunk = std::min(kChunk, n - done);
      errno = 0;
      if (raw_->read_at(offset + done, out + done, chunk) != static_cast<int64_t>(chunk)) {
        throw FormatError(str("load: cannot read the record '", prefix_, name, "' at offset ",
                              offset + done, ": ", errno ? std::strerror(errno) : "short read"));
      }
      crc = serialize::crc32(crc, out + done, static_cast<size_t>(chunk));
      done += chunk;
    }
    check_crc(name, crc);
  }

  std::string read_all(const std::string& name) const {
    std::string s(static_cast<size_t>(size(name)), '\0');
    read(name, s.data(), s.size());
    return s;
  }

 private:
  // FormatError unless `crc` is the directory's CRC-32 of the record.
  void check_crc(const std::string& name, uint32_t crc) const {
    zip_stat_t st;
    if (zip_stat(zip_.get(), (prefix_ + name).c_str(), 0, &st) != 0 || !(st.valid & ZIP_STAT_CRC)) {
      throw FormatError(str("load: the record '", prefix_, name, "' has no CRC-32"));
    }
    if (crc != st.crc) {
      throw FormatError(str("load: the record '", prefix_, name, "' fails its CRC-32 check (",
                            "the directory says ", st.crc, ", its bytes give ", crc,
                            "); the archive is corrupt"));
    }
  }

  // Up to n bytes of the record from its start, through libzip (which checks the CRC-32 when
  // the whole record is read); -1 on failure.
  zip_int64_t read_prefix(const std::string& name, void* out, uint64_t n) const {
    zip_file_t* f = zip_fopen(zip_.get(), (prefix_ + name).c_str(), 0);
    if (f == nullptr) {
      throw FormatError(
          str("load: cannot open the record '", prefix_, name, "': ", zip_strerror(zip_.get())));
    }
    zip_int64_t got = zip_fread(f, out, n);
    zip_fclose(f);
    return got;
  }

  ZipPtr zip_;
  const RawSource* raw_;  // zip_'s source, freed with it
  std::string prefix_;
  uint64_t file_size_ = 0;
};

// The bytes of `storage` on `device` (the storage itself if it is there already).
Storage to_device(const Storage& storage, Device device) {
  if (device == storage.device()) return storage;
  auto numel = static_cast<int64_t>(storage.nbytes());
  Tensor flat(make_pooled<TensorImpl>(storage, DimVector{numel}, DimVector{1}, 0, kUInt8,
                                      VersionCounter()));
  return flat.to(device).unsafe_impl()->storage();
}

Device location_device(const std::string& key, const std::string& location) {
  try {
    return parse_device(location);
  } catch (const Error&) {
    throw FormatError(str("load: storage '", key, "' has the location '", location,
                          "', which is not a device; pass map_location (a device, or a dict such "
                          "as {'",
                          location, "': 'cpu'})"));
  }
}

// Note [Streaming save]
// The archive goes to a WriteAt (the AtomicFile's file, or a string for save_to_bytes) through
// ZipWriter (Note [Zip writer]): each storage record is written straight from the tensor's
// memory, a CUDA storage from a CPU copy made for its record and freed after it. So a save's
// extra memory is the pickle and at most one storage's CPU copy, whatever the total size.
using WriteAt = serialize::ZipWriter::WriteAt;

// Writes the archive of `obj` (records under `name/`) through write_at.
void write_archive(const Value& obj, const std::string& name, const WriteAt& write_at,
                   bool force_zip64 = false) {
  std::vector<serialize::PickledStorage> storages;
  std::string pkl = serialize::pickle(obj, &storages);
  const std::string version = "3\n", byteorder = "little";
  serialize::ZipWriter zip(write_at, force_zip64);
  std::string dir = name + "/";
  zip.add(dir + "data.pkl", pkl.data(), pkl.size());
  for (const auto& s : storages) {
    Tensor host = s.bytes.device().is_cpu() ? s.bytes : s.bytes.cpu();
    uint64_t n = static_cast<uint64_t>(host.numel()) * element_size(host.dtype());
    zip.add(dir + "data/" + s.key, host.unsafe_impl()->data(), n);
  }
  zip.add(dir + "version", version.data(), version.size());
  zip.add(dir + "byteorder", byteorder.data(), byteorder.size());
  zip.finish();
}

}  // namespace

Storage MapLocation::restore(const Storage& cpu, const std::string& key,
                             const std::string& location) const {
  if (device_) return to_device(cpu, *device_);
  if (fn_) {
    std::optional<Storage> mapped = fn_(cpu, location);
    if (!mapped) return to_device(cpu, location_device(key, location));
    if (mapped->nbytes() != cpu.nbytes()) {
      throw ValueError(str("load: map_location returned a storage of ", mapped->nbytes(),
                           " bytes for storage '", key, "' of ", cpu.nbytes(),
                           " bytes; return the storage it was given, moved (storage.cuda(), "
                           "storage.cpu()), or None"));
    }
    return *mapped;
  }
  auto it = remap_.find(location);
  const std::string& target = it == remap_.end() ? location : it->second;
  return to_device(cpu, location_device(key, target));
}

namespace {

std::string archive_bytes(const Value& obj, const std::string& name, bool force_zip64) {
  std::string bytes;
  write_archive(
      obj, name,
      [&](uint64_t offset, const char* data, size_t n) {
        if (bytes.size() < offset + n) bytes.resize(offset + n);
        std::memcpy(&bytes[offset], data, n);
      },
      force_zip64);
  return bytes;
}

}  // namespace

std::string save_to_bytes(const Value& obj, const std::string& name) {
  return archive_bytes(obj, name, false);
}

std::string serialize::save_to_bytes_forcing_zip64(const Value& obj, const std::string& name) {
  return archive_bytes(obj, name, true);
}

void save(const Value& obj, const std::string& path) {
  serialize::AtomicFile file(path);
  write_archive(obj, stem(path), [&](uint64_t offset, const char* data, size_t n) {
    file.write_at(offset, data, n);
  });
  file.commit();
}

namespace {

Value load_archive(const Archive& archive, const MapLocation& map_location) {
  std::string version = archive.read_all("version");
  while (!version.empty() && (version.back() == '\n' || version.back() == '\r')) version.pop_back();
  if (version.empty() || version.size() > 2 ||
      version.find_first_not_of("0123456789") != std::string::npos || std::stoi(version) < 1 ||
      std::stoi(version) > 10) {
    throw FormatError(str("load: the archive's version record is '", version,
                          "'; expected a format version from 1 to 10"));
  }
  if (archive.has("byteorder") && archive.read_all("byteorder") != "little") {
    throw FormatError(
        "load: the archive's byteorder is not 'little'; big-endian data is not "
        "read");
  }
  std::string pkl = archive.read_all("data.pkl");
  serialize::StorageLoader loader = [&](const std::string& key, ScalarType dtype, int64_t numel,
                                        const std::string& location) {
    std::string name = "data/" + key;
    uint64_t n = archive.size(name);
    int64_t expected;
    if (__builtin_mul_overflow(numel, element_size(dtype), &expected) ||
        static_cast<uint64_t>(expected) != n) {
      throw SizeMismatchError(str("load: storage '", key, "' of ", numel, " ", dtype_name(dtype),
                                  " elements has a record of ", n, " bytes"));
    }
    Storage storage = Storage::allocate(kCPU, static_cast<size_t>(n));
    archive.read_storage(name, static_cast<char*>(storage.data()), n);
    return map_location.restore(storage, key, location);
  };
  return serialize::unpickle(pkl.data(), pkl.size(), loader);
}

}  // namespace

Value load_from_bytes(const std::string& bytes, const MapLocation& map_location) {
  return load_archive(Archive::of_bytes(bytes), map_location);
}

Value load(const std::string& path, const MapLocation& map_location) {
  return load_archive(Archive::of_file(path), map_location);
}

}  // namespace mutagrad
