// safetensors: the format of Hugging Face's `safetensors` package, in C++.
//
//   mutagrad::safetensors::save_file({{"w", w}, {"b", b}}, "model.safetensors", {{"step", "7"}});
//   auto tensors = mutagrad::safetensors::load_file("model.safetensors");     // mmap'd
//
// File layout: an 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {"k": "v"}, "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}
// (padded with spaces to a multiple of 8), then the data section: every tensor's bytes,
// row-major and little-endian, the offsets relative to the section's start. The offsets must
// tile the section exactly: no gap, no overlap, nothing after the last tensor.
// Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL (the package's others, U16/U32/U64/F8_*/C64,
// are an UnknownDTypeError: mutagrad has no such dtype).
//
// Note [safetensors mmap]
// load_file maps the file (mmap, MAP_PRIVATE) and, for a CPU load, returns tensors that VIEW
// the mapping: zero copies; the pages are read when touched. The mapping lives as long as any
// tensor (storage) from it does and is unmapped with the last one. The view is copy-on-write:
// writing a loaded tensor changes this process's copy only, never the file. A tensor whose
// offset is not a multiple of its element size (a file that another writer did not align) is
// copied into fresh memory instead, as is every tensor loaded to a non-CPU device. Replacing
// the file (save_file renames a new file over it) does not disturb a mapping; truncating it in
// place (another program) would (SIGBUS on the lost pages), as for any mmap.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "tensor/tensor.h"

namespace mutagrad {
namespace safetensors {

using TensorMap = std::map<std::string, Tensor>;
using Metadata = std::map<std::string, std::string>;

// The largest header accepted (the package's limit): a bigger one is a FormatError.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Writes `tensors` (any device, layout or autograd state: their values are saved) atomically
// (Note [Atomic save] in serialize/atomic_file.h). Tensors that share a storage are refused
// (ValueError, as the package does): clone() one of them.
void save_file(const TensorMap& tensors, const std::string& path, const Metadata& metadata = {});
// The file's bytes, in memory.
std::string save(const TensorMap& tensors, const Metadata& metadata = {});

// Reads every tensor (Note [safetensors mmap]) onto `device`. Typed errors of
// serialize/errors.h for a hostile or broken file; nothing is returned then.
TensorMap load_file(const std::string& path, Device device = kCPU);
// Parses bytes in memory (copies each tensor).
TensorMap load(const std::string& bytes, Device device = kCPU);

// One entry of a validated header.
struct TensorInfo {
  ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets in the data section
  uint64_t end = 0;
};

// A validated header: parse_header checks everything load_file relies on (it is what the
// fuzz target drives). `data` is the whole file.
struct Header {
  std::map<std::string, TensorInfo> tensors;
  Metadata metadata;
  uint64_t data_start = 0;  // 8 + N
};
Header parse_header(const char* data, size_t size);

// The `safe_open` of the package: a mapped file whose tensors are made on request.
class SafeOpen {
 public:
  explicit SafeOpen(const std::string& path, Device device = kCPU);
  std::vector<std::string> keys() const;  // sorted
  Tensor get_tensor(const std::string& name) const;
  const Metadata& metadata() const { return header_.metadata; }

 private:
  std::shared_ptr<void> mapping_;
  const char* base_ = nullptr;
  Header header_;
  Device device_;
  std::string path_;
};

// The safetensors name of a dtype ("F32") and back (UnknownDTypeError).
const char* dtype_code(ScalarType t);
ScalarType dtype_from_code(const std::string& code);

}  // namespace safetensors
}  // namespace mutagrad
