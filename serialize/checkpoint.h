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
// tensor's bounds before returning anything; storages are read into fresh memory (a record
// in a zip archive has no alignment guarantee, so no mmap view).
#pragma once

#include <optional>
#include <string>

#include "serialize/value.h"
#include "tensor/device.h"

namespace mutagrad {

void save(const serialize::Value& obj, const std::string& path);
// The archive's bytes, in memory (`name` is the records' folder).
std::string save_to_bytes(const serialize::Value& obj, const std::string& name = "archive");

// `map_location`: the device every tensor goes to; by default the one it was saved from
// ("cpu", or "cuda:n").
serialize::Value load(const std::string& path, std::optional<Device> map_location = {});
serialize::Value load_from_bytes(const std::string& bytes, std::optional<Device> map_location = {});

}  // namespace mutagrad
