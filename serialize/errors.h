// Typed errors of //serialize: what a checkpoint reader refuses, and why.
//
// Every reader validates the whole file before it returns anything: an error leaves no partial
// object behind and never modifies the file. All are mutagrad::Error (a std::runtime_error).
#pragma once

#include "tensor/error.h"

namespace mutagrad {
namespace serialize {

// Base of every checkpoint error (I/O failures too: a missing file, a failed write).
class SerializationError : public Error {
  using Error::Error;
};
// The file is not the format it claims: too short, truncated, a header length beyond the
// file, a header that is not JSON / a zip archive, a malformed entry.
class FormatError : public SerializationError {
  using SerializationError::SerializationError;
};
// Byte ranges that are out of the data section, overlap, leave gaps, or do not cover it.
class OffsetError : public FormatError {
  using FormatError::FormatError;
};
// A shape whose element count times the dtype's size is not the entry's byte length, or
// whose size overflows int64.
class SizeMismatchError : public FormatError {
  using FormatError::FormatError;
};
// A dtype name that mutagrad does not have (safetensors' "U16", "F8_E4M3", ...).
class UnknownDTypeError : public FormatError {
  using FormatError::FormatError;
};
// A pickle that asks for something a weights file never needs: a global outside the allow
// list, a REDUCE of an unknown callable, a stack/memo/depth beyond the limits.
class UnpicklingError : public FormatError {
  using FormatError::FormatError;
};

}  // namespace serialize
}  // namespace mutagrad
