// safetensors reader and writer (format and Note [safetensors mmap] in safetensors.h).
#include "serialize/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "mutagrad.h"
#include "serialize/atomic_file.h"
#include "serialize/errors.h"
#include "serialize/mapped_file.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; a big-endian host needs byte swaps");

namespace mutagrad {
namespace safetensors {

using serialize::FormatError;
using serialize::OffsetError;
using serialize::SizeMismatchError;
using serialize::UnknownDTypeError;
using json = nlohmann::json;

namespace {

struct Code {
  const char* name;
  ScalarType dtype;
};
constexpr Code kCodes[] = {
    {"F64", kFloat64}, {"F32", kFloat32}, {"F16", kFloat16}, {"BF16", kBFloat16}, {"I64", kInt64},
    {"I32", kInt32},   {"I16", kInt16},   {"I8", kInt8},     {"U8", kUInt8},      {"BOOL", kBool},
};

uint64_t read_le64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// An unsigned JSON integer, or a FormatError naming `what`.
uint64_t json_uint(const json& v, const std::string& what) {
  if (!v.is_number_unsigned()) {
    throw FormatError(
        str("safetensors: ", what, " is ", v.dump(), "; expected a non-negative integer"));
  }
  return v.get<uint64_t>();
}

TensorInfo parse_entry(const std::string& name, const json& e) {
  if (!e.is_object()) {
    throw FormatError(str("safetensors: the entry of tensor '", name, "' is ", e.dump(),
                          "; expected an object with dtype, shape and data_offsets"));
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!e.contains(key)) {
      throw FormatError(str("safetensors: tensor '", name, "' has no \"", key, "\""));
    }
  }
  if (e.size() != 3) {
    throw FormatError(str("safetensors: tensor '", name,
                          "' has keys other than dtype, shape "
                          "and data_offsets: ",
                          e.dump()));
  }
  TensorInfo info;
  if (!e["dtype"].is_string()) {
    throw FormatError(str("safetensors: the dtype of tensor '", name, "' is ", e["dtype"].dump(),
                          "; expected a string such as \"F32\""));
  }
  info.dtype = dtype_from_code(e["dtype"].get<std::string>());
  const json& shape = e["shape"];
  if (!shape.is_array()) {
    throw FormatError(str("safetensors: the shape of tensor '", name, "' is ", shape.dump(),
                          "; expected a list of sizes"));
  }
  uint64_t nbytes = static_cast<uint64_t>(element_size(info.dtype));
  for (const json& d : shape) {
    uint64_t size = json_uint(d, str("a size of tensor '", name, "'"));
    if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(nbytes, size, &nbytes) ||
        nbytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw SizeMismatchError(str("safetensors: tensor '", name, "' has shape ", shape.dump(),
                                  " whose byte size overflows int64"));
    }
    info.shape.push_back(static_cast<int64_t>(size));
  }
  const json& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2) {
    throw FormatError(str("safetensors: the data_offsets of tensor '", name, "' are ", off.dump(),
                          "; expected [begin, end]"));
  }
  info.begin = json_uint(off[0], str("the begin offset of tensor '", name, "'"));
  info.end = json_uint(off[1], str("the end offset of tensor '", name, "'"));
  if (info.end < info.begin) {
    throw OffsetError(str("safetensors: tensor '", name, "' has data_offsets [", info.begin, ", ",
                          info.end, "] that end before they begin"));
  }
  if (info.end - info.begin != nbytes) {
    throw SizeMismatchError(str("safetensors: tensor '", name, "' of dtype ",
                                dtype_code(info.dtype), " and shape ", shape.dump(), " needs ",
                                nbytes, " bytes but its data_offsets [", info.begin, ", ", info.end,
                                "] hold ", info.end - info.begin));
  }
  return info;
}

// A tensor made from an entry's bytes: a view of the mapping where aligned (`owner` set and
// a CPU load), else a copy.
Tensor make_tensor(const TensorInfo& info, const char* bytes, std::shared_ptr<void> owner,
                   Device device) {
  DimVector strides = contiguous_strides(info.shape);
  size_t nbytes = static_cast<size_t>(info.end - info.begin);
  uintptr_t addr = reinterpret_cast<uintptr_t>(bytes);
  if (owner && device == Device(kCPU) &&
      addr % static_cast<uintptr_t>(element_size(info.dtype)) == 0) {
    return from_blob(const_cast<char*>(bytes), info.shape, strides, info.dtype, std::move(owner),
                     kCPU);
  }
  Tensor t = empty(info.shape, TensorOptions(info.dtype));
  if (nbytes > 0) std::memcpy(t.unsafe_impl()->data(), bytes, nbytes);
  return device == Device(kCPU) ? t : t.to(device);
}

// The bytes a tensor's values take, contiguous, on the CPU.
Tensor host_contiguous(const Tensor& t) { return t.detach().cpu().contiguous(); }

}  // namespace

const char* dtype_code(ScalarType t) {
  for (const Code& c : kCodes) {
    if (c.dtype == t) return c.name;
  }
  throw InternalError(str("safetensors: no code for dtype ", dtype_name(t)));
}

ScalarType dtype_from_code(const std::string& code) {
  for (const Code& c : kCodes) {
    if (code == c.name) return c.dtype;
  }
  throw UnknownDTypeError(str("safetensors: unknown dtype \"", code,
                              "\"; mutagrad has F64, F32, F16, BF16, I64, I32, I16, I8, U8 "
                              "and BOOL"));
}

Header parse_header(const char* data, size_t size) {
  if (size < 8) {
    throw FormatError(str("safetensors: the file has ", size,
                          " bytes, fewer than the 8 of the header length; it is truncated "
                          "or not a safetensors file"));
  }
  uint64_t n = read_le64(data);
  if (n > kMaxHeaderBytes) {
    throw FormatError(str("safetensors: the header length ", n, " exceeds the limit of ",
                          kMaxHeaderBytes, " bytes"));
  }
  if (n > size - 8) {
    throw FormatError(str("safetensors: the header length ", n, " goes beyond the file (", size - 8,
                          " bytes follow the length); the file is truncated"));
  }
  // Nesting deeper than an entry's list is refused while parsing (bounded stack), and so are
  // duplicate top-level keys (a JSON object keeps only the last one).
  std::set<std::string> seen;
  json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > 3) {
      throw FormatError("safetensors: the header nests JSON deeper than an entry does");
    }
    if (event == json::parse_event_t::key && depth == 1) {
      std::string key = parsed.get<std::string>();
      if (!seen.insert(key).second) {
        throw FormatError(str("safetensors: the header names '", key, "' twice"));
      }
    }
    return true;
  };
  json j;
  try {
    j = json::parse(data + 8, data + 8 + n, check);
  } catch (const json::exception& e) {
    throw FormatError(str("safetensors: the header is not valid JSON: ", e.what()));
  }
  if (!j.is_object()) {
    throw FormatError(
        str("safetensors: the header is JSON of type ", j.type_name(), "; expected an object"));
  }
  Header h;
  h.data_start = 8 + n;
  uint64_t data_size = size - h.data_start;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) {
        throw FormatError("safetensors: __metadata__ is not an object of strings");
      }
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string()) {
          throw FormatError(str("safetensors: __metadata__[\"", m.key(), "\"] is ",
                                m.value().dump(), "; expected a string"));
        }
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    h.tensors.emplace(it.key(), parse_entry(it.key(), it.value()));
  }
  // The offsets must tile [0, data_size) exactly.
  std::vector<std::pair<const std::string*, const TensorInfo*>> order;
  for (const auto& kv : h.tensors) order.emplace_back(&kv.first, &kv.second);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.second->begin, a.second->end) <
           std::make_pair(b.second->begin, b.second->end);
  });
  uint64_t covered = 0;
  const std::string* previous = nullptr;
  for (const auto& [name, info] : order) {
    if (info->end > data_size) {
      throw OffsetError(str("safetensors: tensor '", *name, "' has data_offsets [", info->begin,
                            ", ", info->end, "] beyond the data section's ", data_size,
                            " bytes; the file is truncated or the offsets are wrong"));
    }
    if (info->begin < covered) {
      throw OffsetError(str("safetensors: tensor '", *name, "' (bytes [", info->begin, ", ",
                            info->end, ")) overlaps tensor '", *previous, "' (ending at ", covered,
                            ")"));
    }
    if (info->begin > covered) {
      throw OffsetError(str("safetensors: bytes [", covered, ", ", info->begin,
                            ") of the data section belong to no tensor (before '", *name,
                            "'); the data section must be contiguous"));
    }
    covered = info->end;
    previous = name;
  }
  if (covered != data_size) {
    throw OffsetError(str("safetensors: the tensors cover ", covered,
                          " bytes of the data section but it has ", data_size,
                          "; the trailing bytes belong to no tensor"));
  }
  return h;
}

std::string save(const TensorMap& tensors, const Metadata& metadata) {
  for (auto a = tensors.begin(); a != tensors.end(); ++a) {
    if (!a->second.defined()) {
      throw ValueError(str("safetensors: tensor '", a->first, "' is undefined"));
    }
    for (auto b = std::next(a); b != tensors.end(); ++b) {
      if (b->second.defined() &&
          a->second.unsafe_impl()->storage().is_same(b->second.unsafe_impl()->storage())) {
        throw ValueError(str("safetensors: tensors '", a->first, "' and '", b->first,
                             "' share memory, which the format cannot express (it would "
                             "store the bytes twice and load two tensors); save a clone() of "
                             "one, or only one of them"));
      }
    }
  }
  // The package's order: larger elements first (every offset stays aligned), then by name.
  std::vector<std::pair<std::string, Tensor>> order;
  for (const auto& kv : tensors) order.emplace_back(kv.first, host_contiguous(kv.second));
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return element_size(a.second.dtype()) > element_size(b.second.dtype());
  });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : order) {
    uint64_t nbytes = static_cast<uint64_t>(t.numel() * element_size(t.dtype()));
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
    header[name] = {{"dtype", dtype_code(t.dtype())},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t n = text.size();
  std::memcpy(&out[0], &n, 8);
  out += text;
  out.reserve(out.size() + offset);
  for (const auto& kv : order) {
    const Tensor& t = kv.second;
    size_t nbytes = static_cast<size_t>(t.numel() * element_size(t.dtype()));
    if (nbytes > 0) out.append(static_cast<const char*>(t.unsafe_impl()->data()), nbytes);
  }
  return out;
}

void save_file(const TensorMap& tensors, const std::string& path, const Metadata& metadata) {
  std::string bytes = save(tensors, metadata);
  serialize::AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

TensorMap load(const std::string& bytes, Device device) {
  Header h = parse_header(bytes.data(), bytes.size());
  TensorMap out;
  for (const auto& [name, info] : h.tensors) {
    out.emplace(name, make_tensor(info, bytes.data() + h.data_start + info.begin, nullptr, device));
  }
  return out;
}

TensorMap load_file(const std::string& path, Device device) {
  SafeOpen f(path, device);
  TensorMap out;
  for (const std::string& name : f.keys()) out.emplace(name, f.get_tensor(name));
  return out;
}

SafeOpen::SafeOpen(const std::string& path, Device device) : device_(device), path_(path) {
  serialize::MappedFile m = serialize::map_file(path);
  header_ = parse_header(m.data, m.size);
  mapping_ = std::move(m.owner);
  base_ = m.data;
}

std::vector<std::string> SafeOpen::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : header_.tensors) out.push_back(kv.first);
  return out;
}

Tensor SafeOpen::get_tensor(const std::string& name) const {
  auto it = header_.tensors.find(name);
  if (it == header_.tensors.end()) {
    throw IndexError(str("safetensors: '", path_, "' has no tensor named '", name, "'"));
  }
  return make_tensor(it->second, base_ + header_.data_start + it->second.begin, mapping_, device_);
}

}  // namespace safetensors
}  // namespace mutagrad
