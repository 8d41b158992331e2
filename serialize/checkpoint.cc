// PyTorch's zip checkpoint format (checkpoint.h) over libzip.
#include "serialize/checkpoint.h"

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
#include "serialize/errors.h"
#include "serialize/pickle.h"

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

// A reader of one archive's records, all stored (uncompressed): sizes are bounded by the file.
class Archive {
 public:
  // Reads `bytes` (kept alive by the caller).
  static Archive of_bytes(const std::string& bytes) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
    zip_error_fini(&error);
    if (src == nullptr) throw SerializationError("load: libzip cannot read from memory");
    return Archive(src, bytes.size());
  }
  // Reads the file at `path` as records are asked for: never the whole file at once.
  static Archive of_file(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
      throw SerializationError(str("load: cannot open '", path, "': ", std::strerror(errno)));
    }
    std::fseek(f, 0, SEEK_END);
    long end = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_filep_create(f, 0, -1, &error);
    zip_error_fini(&error);
    if (src == nullptr) {
      std::fclose(f);
      throw SerializationError(str("load: libzip cannot read '", path, "'"));
    }
    return Archive(src, end < 0 ? 0 : static_cast<uint64_t>(end));
  }

  // Takes `src` (freed on failure too).
  // `file_size`: the archive's bytes; no record may claim more (memory bounded by the file).
  Archive(zip_source_t* src, uint64_t file_size) : file_size_(file_size) {
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

  // Note [Storage records are not CRC-checked]
  // A storage's bytes are read raw (ZIP_FL_COMPRESSED: a stored record's raw bytes are its data,
  // size() having checked it is stored and its sizes agree), without libzip's CRC-32, as torch
  // reads them: zlib's CRC runs at about a third of a plain read's speed, and a weights file
  // has no checksum in safetensors either. data.pkl, version and byteorder keep the check, so
  // a damaged pickle is still caught before it is interpreted; a flipped bit in a tensor's
  // data is not (docs/checkpoints.md).
  void read(const std::string& name, void* out, uint64_t n, bool check_crc = true) const {
    zip_file_t* f =
        zip_fopen(zip_.get(), (prefix_ + name).c_str(), check_crc ? 0 : ZIP_FL_COMPRESSED);
    if (f == nullptr) {
      throw FormatError(
          str("load: cannot open the record '", prefix_, name, "': ", zip_strerror(zip_.get())));
    }
    zip_int64_t got = n == 0 ? 0 : zip_fread(f, out, n);
    zip_fclose(f);
    if (got < 0 || static_cast<uint64_t>(got) != n) {
      throw FormatError(str("load: the record '", prefix_, name, "' is truncated or corrupt"));
    }
  }

  std::string read_all(const std::string& name) const {
    std::string s(static_cast<size_t>(size(name)), '\0');
    read(name, s.data(), s.size());
    return s;
  }

 private:
  ZipPtr zip_;
  std::string prefix_;
  uint64_t file_size_ = 0;
};

// The bytes of `storage` on `device` (the storage itself if it is there already).
Storage to_device(const Storage& storage, Device device) {
  if (device == storage.device()) return storage;
  auto numel = static_cast<int64_t>(storage.nbytes());
  Tensor flat(std::make_shared<TensorImpl>(storage, DimVector{numel}, DimVector{1}, 0, kUInt8,
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
// libzip writes the archive through ZipSink, a zip_source of our own whose writes go to a
// WriteAt (the AtomicFile's file, or a string for save_to_bytes) through a 4 MiB buffer. Each
// storage is a StorageSource that libzip opens when it writes that record: a CPU storage is
// read in place, a CUDA one is copied to the CPU on open and freed on close. So a save's extra
// memory is the pickle, the buffer and at most one storage's CPU copy, whatever the total size.
using WriteAt = std::function<void(uint64_t offset, const char* data, size_t n)>;

// Runs `body` for a libzip callback: an exception becomes -1 with a ZIP_ER_WRITE error, and is
// kept to be rethrown once libzip returns (it must not unwind through C code).
template <typename F>
zip_int64_t guarded(zip_error_t* error, std::exception_ptr* failure, F&& body) {
  try {
    return body();
  } catch (...) {
    if (!*failure) *failure = std::current_exception();
    zip_error_set(error, ZIP_ER_WRITE, 0);
    return -1;
  }
}

class ZipSink {
 public:
  explicit ZipSink(WriteAt write_at) : write_at_(std::move(write_at)) { zip_error_init(&error_); }
  ~ZipSink() { zip_error_fini(&error_); }
  ZipSink(const ZipSink&) = delete;
  ZipSink& operator=(const ZipSink&) = delete;

  static zip_int64_t callback(void* self, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    auto* sink = static_cast<ZipSink*>(self);
    return guarded(&sink->error_, &sink->failure, [&] { return sink->handle(data, len, cmd); });
  }

  std::exception_ptr failure;

 private:
  static constexpr size_t kBuffer = size_t{4} << 20;

  zip_int64_t handle(void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    switch (cmd) {
      case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(
            ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR,
            ZIP_SOURCE_FREE, ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL, ZIP_SOURCE_BEGIN_WRITE,
            ZIP_SOURCE_COMMIT_WRITE, ZIP_SOURCE_ROLLBACK_WRITE, ZIP_SOURCE_WRITE,
            ZIP_SOURCE_SEEK_WRITE, ZIP_SOURCE_TELL_WRITE, ZIP_SOURCE_SUPPORTS, ZIP_SOURCE_REMOVE,
            -1);
      case ZIP_SOURCE_STAT: {  // a new, empty archive
        auto* st = static_cast<zip_stat_t*>(data);
        zip_stat_init(st);
        st->size = 0;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof(zip_stat_t);
      }
      case ZIP_SOURCE_OPEN:
      case ZIP_SOURCE_READ:
      case ZIP_SOURCE_CLOSE:
      case ZIP_SOURCE_SEEK:
      case ZIP_SOURCE_TELL:
      case ZIP_SOURCE_FREE:
      case ZIP_SOURCE_REMOVE:
        return 0;
      case ZIP_SOURCE_BEGIN_WRITE:
        pos_ = end_ = start_ = 0;
        buffer_.clear();
        return 0;
      case ZIP_SOURCE_WRITE:
        write(static_cast<const char*>(data), static_cast<size_t>(len));
        return static_cast<zip_int64_t>(len);
      case ZIP_SOURCE_SEEK_WRITE: {
        zip_int64_t to = zip_source_seek_compute_offset(pos_, end_, data, len, &error_);
        if (to < 0) return -1;
        pos_ = static_cast<uint64_t>(to);
        return 0;
      }
      case ZIP_SOURCE_TELL_WRITE:
        return static_cast<zip_int64_t>(pos_);
      case ZIP_SOURCE_COMMIT_WRITE:
        flush();
        return 0;
      case ZIP_SOURCE_ROLLBACK_WRITE:
        buffer_.clear();
        return 0;
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&error_, data, len);
      default:
        zip_error_set(&error_, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
  }

  // The buffer holds the bytes at [start_, start_ + size); a write elsewhere flushes it.
  void write(const char* p, size_t n) {
    if (pos_ != start_ + buffer_.size() || buffer_.size() + n > kBuffer) flush();
    if (buffer_.empty()) start_ = pos_;
    if (n >= kBuffer) {
      write_at_(pos_, p, n);
      start_ = pos_ + n;
    } else {
      buffer_.insert(buffer_.end(), p, p + n);
    }
    pos_ += n;
    end_ = std::max(end_, pos_);
  }

  void flush() {
    if (!buffer_.empty()) write_at_(start_, buffer_.data(), buffer_.size());
    start_ += buffer_.size();
    buffer_.clear();
  }

  WriteAt write_at_;
  zip_error_t error_;
  std::vector<char> buffer_;
  uint64_t start_ = 0, pos_ = 0, end_ = 0;
};

// One storage's bytes as a zip_source, read in place (CPU) or copied on open (CUDA).
class StorageSource {
 public:
  explicit StorageSource(Tensor flat) : flat_(std::move(flat)) {
    zip_error_init(&error_);
    size_ = static_cast<uint64_t>(flat_.numel() * element_size(flat_.dtype()));
  }
  ~StorageSource() { zip_error_fini(&error_); }
  StorageSource(const StorageSource&) = delete;
  StorageSource& operator=(const StorageSource&) = delete;

  static zip_int64_t callback(void* self, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    auto* s = static_cast<StorageSource*>(self);
    return guarded(&s->error_, &s->failure, [&] { return s->handle(data, len, cmd); });
  }

  std::exception_ptr failure;

 private:
  zip_int64_t handle(void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    switch (cmd) {
      case ZIP_SOURCE_SUPPORTS:
        return ZIP_SOURCE_SUPPORTS_READABLE;
      case ZIP_SOURCE_STAT: {
        auto* st = static_cast<zip_stat_t*>(data);
        zip_stat_init(st);
        st->size = size_;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof(zip_stat_t);
      }
      case ZIP_SOURCE_OPEN:
        host_ = flat_.device().is_cpu() ? flat_ : flat_.cpu();
        pos_ = 0;
        return 0;
      case ZIP_SOURCE_READ: {
        uint64_t n = std::min<uint64_t>(len, size_ - pos_);
        if (n > 0) {
          std::memcpy(data, static_cast<const char*>(host_.unsafe_impl()->data()) + pos_, n);
        }
        pos_ += n;
        return static_cast<zip_int64_t>(n);
      }
      case ZIP_SOURCE_CLOSE:
        host_ = Tensor();
        return 0;
      case ZIP_SOURCE_FREE:
        return 0;
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&error_, data, len);
      default:
        zip_error_set(&error_, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
  }

  Tensor flat_, host_;
  uint64_t size_ = 0, pos_ = 0;
  zip_error_t error_;
};

void add_source(zip_t* z, const std::string& name, zip_source_t* src) {
  zip_int64_t index = src == nullptr ? -1 : zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8);
  if (index < 0) {
    if (src != nullptr) zip_source_free(src);
    throw SerializationError(str("save: libzip cannot add '", name, "': ", zip_strerror(z)));
  }
  zip_set_file_compression(z, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
}

void add_record(zip_t* z, const std::string& name, const void* data, size_t n) {
  add_source(z, name, zip_source_buffer(z, data, n, 0));
}

// Writes the archive of `obj` (records under `name/`) through write_at.
void write_archive(const Value& obj, const std::string& name, const WriteAt& write_at) {
  std::vector<serialize::PickledStorage> storages;
  std::string pkl = serialize::pickle(obj, &storages);
  const std::string version = "3\n", byteorder = "little";
  std::vector<std::unique_ptr<StorageSource>> sources;
  for (const auto& s : storages) sources.push_back(std::make_unique<StorageSource>(s.bytes));
  ZipSink sink(write_at);
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* out = zip_source_function_create(&ZipSink::callback, &sink, &error);
  zip_t* z = out == nullptr ? nullptr : zip_open_from_source(out, ZIP_TRUNCATE, &error);
  if (z == nullptr) {
    if (out != nullptr) zip_source_free(out);
    std::string why = zip_error_strerror(&error);
    zip_error_fini(&error);
    throw SerializationError(str("save: libzip cannot start an archive: ", why));
  }
  zip_error_fini(&error);
  auto rethrow_first = [&] {
    if (sink.failure) std::rethrow_exception(sink.failure);
    for (const auto& s : sources) {
      if (s->failure) std::rethrow_exception(s->failure);
    }
  };
  try {
    std::string dir = name + "/";
    add_record(z, dir + "data.pkl", pkl.data(), pkl.size());
    for (size_t k = 0; k < storages.size(); ++k) {
      zip_error_init(&error);
      zip_source_t* src =
          zip_source_function_create(&StorageSource::callback, sources[k].get(), &error);
      zip_error_fini(&error);
      add_source(z, dir + "data/" + storages[k].key, src);
    }
    add_record(z, dir + "version", version.data(), version.size());
    add_record(z, dir + "byteorder", byteorder.data(), byteorder.size());
  } catch (...) {
    zip_discard(z);
    throw;
  }
  if (zip_close(z) != 0) {
    std::string why = zip_strerror(z);
    zip_discard(z);
    rethrow_first();
    throw SerializationError(str("save: libzip cannot finish the archive: ", why));
  }
  rethrow_first();
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

std::string save_to_bytes(const Value& obj, const std::string& name) {
  std::string bytes;
  write_archive(obj, name, [&](uint64_t offset, const char* data, size_t n) {
    if (bytes.size() < offset + n) bytes.resize(offset + n);
    std::memcpy(&bytes[offset], data, n);
  });
  return bytes;
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
    archive.read(name, storage.data(), n, /*check_crc=*/false);
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
