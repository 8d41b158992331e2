// PyTorch's checkpoint format (torch.save since 1.6) in C++: mutagrad::save / mutagrad::load.
//
//   mutagrad::save(serialize::Value::dict({{"w", w}, {"step", 7}}), "ckpt.pt");
//   serialize::Value v = mutagrad::load("ckpt.pt");   // v.at("w").to_tensor()
//
// The file is a zip archive (stored, not compressed) of records under one folder `<name>/`:
//   data.pkl   the object, pickled (protocol 2; Note [Restricted unpickler] in pickle.h)
//   data/<key> each storage's bytes, little-endian; tensors refer to it by key
//   version    "3"          byteorder  "little"
// Tensors that share a storage in the saved object share one storage, and one version
// counter, after loading; every tensor keeps its offset and strides. Saving is atomic (Note
// [Atomic save] in atomic_file.h). Loading validates the archive, the pickle and every
// tensor's bounds before returning anything; storages are read by pread into fresh memory and
// CRC-checked (Note [Storage records are read with pread] in checkpoint.cc: a file another
// writer made need not align its records, so no mmap view). The records we write start at
// multiples of 64 bytes, as torch's (Note [Zip writer] in zip_writer.h).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "serialize/value.h"
#include "tensor/device.h"
#include "tensor/storage.h"

namespace mutagrad {

void save(const serialize::Value& obj, const std::string& path);
// The archive's bytes, in memory (`name` is the records' folder).
std::string save_to_bytes(const serialize::Value& obj, const std::string& name = "archive");
namespace serialize {
// save_to_bytes with zip64 fields in every record (Note [Zip writer]): for tests.
std::string save_to_bytes_forcing_zip64(const Value& obj, const std::string& name = "archive");
}  // namespace serialize

// Note [map_location]
// Where each storage goes, as torch.load's map_location: every storage is first read into CPU
// memory, then restored to a device chosen from its saved location ("cpu", "cuda:0", ...):
//   {}                      the saved location
//   a Device                that device, whatever the saved location
//   {{"cuda:0", "cpu"}}     the saved location renamed where it is a key (exact match, as
//                           torch's dict lookup), else kept
//   fn(cpu_storage, loc)    fn's storage; std::nullopt means the saved location
// A location that is not a device ("xla:0") is a FormatError unless remapped.
class MapLocation {
 public:
  using Fn = std::function<std::optional<Storage>(const Storage& cpu, const std::string& location)>;
  MapLocation() = default;
  MapLocation(Device device) : device_(device) {}                 // NOLINT: implicit
  MapLocation(std::optional<Device> device) : device_(device) {}  // NOLINT: implicit
  MapLocation(std::map<std::string, std::string> remap)           // NOLINT: implicit
      : remap_(std::move(remap)) {}
  MapLocation(Fn fn) : fn_(std::move(fn)) {}  // NOLINT: implicit

  // The storage `cpu` (read from the record `key`, saved at `location`) where it belongs.
  Storage restore(const Storage& cpu, const std::string& key, const std::string& location) const;

 private:
  std::optional<Device> device_;
  std::map<std::string, std::string> remap_;
  Fn fn_;
};

serialize::Value load(const std::string& path, const MapLocation& map_location = {});
serialize::Value load_from_bytes(const std::string& bytes, const MapLocation& map_location = {});

}  // namespace mutagrad
