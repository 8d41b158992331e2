// PyTorch's zip checkpoint format (checkpoint.h) over libzip.
#include "serialize/checkpoint.h"

#include <zip.h>

#include <cstring>
#include <memory>

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
  explicit Archive(const std::string& bytes) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
    if (src == nullptr) throw SerializationError("load: libzip cannot read from memory");
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
    return st.size;
  }

  void read(const std::string& name, void* out, uint64_t n) const {
    zip_file_t* f = zip_fopen(zip_.get(), (prefix_ + name).c_str(), 0);
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
};

void add_record(zip_t* z, const std::string& name, const void* data, size_t n) {
  zip_source_t* src = zip_source_buffer(z, data, n, 0);
  zip_int64_t index = src == nullptr ? -1 : zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8);
  if (index < 0) {
    if (src != nullptr) zip_source_free(src);
    throw SerializationError(str("save: libzip cannot add '", name, "': ", zip_strerror(z)));
  }
  zip_set_file_compression(z, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
}

Storage to_device(const Storage& storage, ScalarType dtype, Device device) {
  if (device == Device(kCPU)) return storage;
  int64_t numel = static_cast<int64_t>(storage.nbytes()) / element_size(dtype);
  Tensor flat(std::make_shared<TensorImpl>(storage, DimVector{numel}, DimVector{1}, 0, dtype,
                                           VersionCounter()));
  return flat.to(device).unsafe_impl()->storage();
}

}  // namespace

std::string save_to_bytes(const Value& obj, const std::string& name) {
  std::vector<serialize::PickledStorage> storages;
  std::string pkl = serialize::pickle(obj, &storages);
  const std::string version = "3\n", byteorder = "little";
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_error_fini(&error);
  if (out == nullptr) throw SerializationError("save: libzip cannot write to memory");
  zip_source_keep(out);
  std::unique_ptr<zip_source_t, decltype(&zip_source_free)> keep(out, zip_source_free);
  zip_error_init(&error);
  zip_t* z = zip_open_from_source(out, ZIP_TRUNCATE, &error);
  zip_error_fini(&error);
  if (z == nullptr) throw SerializationError("save: libzip cannot open an archive in memory");
  try {
    std::string dir = name + "/";
    add_record(z, dir + "data.pkl", pkl.data(), pkl.size());
    for (const auto& s : storages) {
      size_t n = static_cast<size_t>(s.bytes.numel() * element_size(s.bytes.dtype()));
      add_record(z, dir + "data/" + s.key, s.bytes.unsafe_impl()->data(), n);
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
    throw SerializationError(str("save: libzip cannot finish the archive: ", why));
  }
  zip_stat_t st;
  if (zip_source_stat(out, &st) != 0 || zip_source_open(out) != 0) {
    throw SerializationError("save: cannot read back the archive libzip wrote");
  }
  std::string bytes(static_cast<size_t>(st.size), '\0');
  zip_int64_t got = zip_source_read(out, bytes.data(), bytes.size());
  zip_source_close(out);
  if (got < 0 || static_cast<zip_uint64_t>(got) != st.size) {
    throw SerializationError("save: cannot read back the archive libzip wrote");
  }
  return bytes;
}

void save(const Value& obj, const std::string& path) {
  std::string bytes = save_to_bytes(obj, stem(path));
  serialize::AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

Value load_from_bytes(const std::string& bytes, std::optional<Device> map_location) {
  Archive archive(bytes);
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
    Device device = kCPU;
    try {
      device = map_location ? *map_location : parse_device(location);
    } catch (const Error&) {
      throw FormatError(str("load: storage '", key, "' has the location '", location,
                            "', which is not a device; pass map_location"));
    }
    Storage storage = Storage::allocate(kCPU, static_cast<size_t>(n));
    archive.read(name, storage.data(), n);
    return to_device(storage, dtype, device);
  };
  return serialize::unpickle(pkl.data(), pkl.size(), loader);
}

Value load(const std::string& path, std::optional<Device> map_location) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw SerializationError(str("load: cannot open '", path, "': ", std::strerror(errno)));
  }
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
  std::fclose(f);
  return load_from_bytes(bytes, map_location);
}

}  // namespace mutagrad
