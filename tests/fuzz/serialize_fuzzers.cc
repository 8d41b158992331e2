// The checkpoint readers' fuzz targets (targets.h): safetensors headers and PyTorch archives /
// pickles. A hostile input must end in a mutagrad::Error (a typed refusal); anything else
// (another exception, a crash, a sanitizer report) is a finding. What loads must save and load
// back to the same bytes.
#include <cstring>
#include <string>

#include "serialize/checkpoint.h"
#include "serialize/errors.h"
#include "serialize/pickle.h"
#include "serialize/safetensors.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/targets.h"

namespace mutagrad::fuzz {

void safetensors_header(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  safetensors::TensorMap loaded;
  try {
    loaded = safetensors::load(bytes);
  } catch (const Error&) {
    return;  // refused with a typed error
  }
  safetensors::TensorMap again = safetensors::load(safetensors::save(loaded));
  if (again.size() != loaded.size()) fail("safetensors: a re-saved file lost tensors");
  for (const auto& [name, t] : loaded) {
    const Tensor& u = again.at(name);
    if (u.dtype() != t.dtype() || u.numel() != t.numel() ||
        std::memcmp(u.unsafe_impl()->data(), t.unsafe_impl()->data(),
                    static_cast<size_t>(t.numel() * element_size(t.dtype()))) != 0) {
      fail("safetensors: a re-saved tensor differs: " + name);
    }
  }
}

// Bytes starting with "PK": a whole archive; otherwise a pickle whose storages are made up
// (numel elements, at most 2^16).
void checkpoint(const uint8_t* data, size_t size) {
  const char* p = reinterpret_cast<const char*>(data);
  try {
    if (size >= 2 && p[0] == 'P' && p[1] == 'K') {
      serialize::Value v = load_from_bytes(std::string(p, size));
      load_from_bytes(save_to_bytes(v));
    } else {
      serialize::StorageLoader loader = [](const std::string&, ScalarType dtype, int64_t numel,
                                           const std::string&) {
        if (numel > (1 << 16)) throw serialize::SizeMismatchError("fuzz: storage too large");
        return Storage::allocate(kCPU, static_cast<size_t>(numel * element_size(dtype)));
      };
      serialize::unpickle(p, size, loader);
    }
  } catch (const Error&) {
    return;
  }
}

}  // namespace mutagrad::fuzz
