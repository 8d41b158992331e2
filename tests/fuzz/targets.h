// The fuzz targets, as plain functions: libFuzzer's LLVMFuzzerTestOneInput (fuzz_entry.cc) calls
// one of them, and fuzz_regression_test replays the checked-in corpora through all of them.
//
//   mutagrad::fuzz::index_expression(data, size);   // aborts on a broken invariant
//
// See docs/reliability.md for what each checks and how to run them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mutagrad::fuzz {

// bytes -> a tensor (any dtype, 0-5 dims incl. size 0, non-contiguous, expanded, views of views),
// an index list of every kind, a value and an op (get_item, set_item_, index_put_ with and
// without accumulate, the index_add_/index_copy_/index_fill_/scatter_/put_/masked_* family).
// get_item, set_item_ and index_put_ are checked against reference_index().
void index_expression(const uint8_t* data, size_t size);

// bytes -> a short program of differentiable ops and in-place writes on views of intermediates
// (float64, small); backward must match finite differences or raise the stale-tensor error,
// exactly when a saved tensor's version moved.
void autograd_program(const uint8_t* data, size_t size);

// bytes -> safetensors::load: a typed error, or tensors that save and load back unchanged.
void safetensors_header(const uint8_t* data, size_t size);

// bytes -> mutagrad::load_from_bytes (an archive, "PK...") or the restricted unpickler (anything
// else): a typed error or a value; never a crash, never another exception.
void checkpoint(const uint8_t* data, size_t size);

}  // namespace mutagrad::fuzz
