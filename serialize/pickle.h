// A restricted pickle reader and writer: the subset torch.save (protocol 2) writes for weights.
//
// Note [Restricted unpickler]
// The reader never calls anything a file names. It knows the opcodes of protocols 2-4 that
// build data (ints, floats, strings, tuples, lists, dicts, memo, marks) and resolves GLOBAL
// only for an allow list: torch._utils._rebuild_tensor_v2 and _rebuild_parameter, the
// torch.*Storage types of mutagrad's dtypes and collections.OrderedDict. Every other global,
// a REDUCE of anything but those, NEWOBJ/INST/OBJ/EXT and unknown opcodes are an
// UnpicklingError before anything else happens. The object graph lives in an arena (no
// recursion while reading); the result is then copied out depth-first with a depth limit
// (kMaxDepth, which also rejects cycles) and a count limit (kMaxObjects, which rejects a
// graph whose shared references would expand into a huge tree).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "serialize/value.h"
#include "tensor/storage.h"

namespace mutagrad {
namespace serialize {

constexpr int kMaxDepth = 256;
constexpr int64_t kMaxObjects = 10'000'000;

// Called once per distinct storage key of the file: the storage's bytes on the CPU (numel
// elements of dtype; the loader checks the record's size). `location` is "cpu" or "cuda[:n]".
using StorageLoader = std::function<Storage(const std::string& key, ScalarType dtype, int64_t numel,
                                            const std::string& location)>;
Value unpickle(const char* data, size_t size, const StorageLoader& load_storage);

// What pickle() writes besides the pickle: each distinct storage once, as a flat tensor of its
// whole memory on its device, under its key ("0", "1", ...).
struct PickledStorage {
  std::string key;
  Tensor bytes;  // 1-d, contiguous, on the storage's device, the storage's dtype
};
std::string pickle(const Value& value, std::vector<PickledStorage>* storages);

// torch's storage type name ("FloatStorage") of a dtype and back (UnknownDTypeError).
const char* storage_type_name(ScalarType dtype);
ScalarType dtype_of_storage_type(const std::string& name);

}  // namespace serialize
}  // namespace mutagrad
