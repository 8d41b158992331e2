// The index rules of every op that takes index values: whether a negative index counts from the
// end (Python's rule) or is out of range, as PyTorch 1.13 decides it op by op. Ops read their
// rule here and pass it to native::index() / prepare_index_put() (`negative_wraps`); the table
// is documented in docs/indexing.md ("Negative indices") and tested op by op against torch
// (tests/python/index_rules_test.py, tests/autograd/index_rules_ops_test.cc).
//
//   Tensor rows = native::index(x, {Tensor(), idx},
//                               negative_index_wraps(IndexedOp::kIndexSelect));  // refuses -1
//
// Every index value outside the accepted range raises IndexOutOfRangeError (tensor/error.h)
// before anything is written.
#pragma once

#include <cstddef>

namespace mutagrad::native {

enum class IndexedOp {
  kIndex,          // x[idx], index(), an integer index x[i], select()
  kIndexPut,       // x[idx] = v, index_put_, index_put
  kTake,           // take
  kPut,            // put_, put
  kIndexSelect,    // index_select
  kIndexAdd,       // index_add_, index_add
  kIndexCopy,      // index_copy_, index_copy
  kIndexFill,      // index_fill_, index_fill
  kGather,         // gather
  kScatter,        // scatter_, scatter, scatter_add_, scatter_add, scatter_reduce_, scatter_reduce
  kClassIndex,     // nll_loss / cross_entropy targets (ignore_index aside)
  kMaskedScatter,  // masked_scatter_: indices are a mask's nonzero() coordinates, never negative
};

struct IndexRule {
  IndexedOp op;
  const char* name;     // how docs and messages name the op
  bool negative_wraps;  // -1 is the last element (true) or out of range (false)
};

// One entry per IndexedOp, in its order; checked in torch 1.13 (docs/indexing.md lists the
// outcomes: torch's IndexError "index out of range in self" for index_select/index_add_, its
// RuntimeError for gather/scatter).
inline constexpr IndexRule kIndexRules[] = {
    {IndexedOp::kIndex, "index", true},
    {IndexedOp::kIndexPut, "index_put_", true},
    {IndexedOp::kTake, "take", true},
    {IndexedOp::kPut, "put_", true},
    {IndexedOp::kIndexSelect, "index_select", false},
    {IndexedOp::kIndexAdd, "index_add_", false},
    {IndexedOp::kIndexCopy, "index_copy_", false},
    {IndexedOp::kIndexFill, "index_fill_", true},
    {IndexedOp::kGather, "gather", false},
    {IndexedOp::kScatter, "scatter_", false},
    {IndexedOp::kClassIndex, "nll_loss", false},
    {IndexedOp::kMaskedScatter, "masked_scatter_", true},
};

constexpr const IndexRule& index_rule(IndexedOp op) { return kIndexRules[static_cast<size_t>(op)]; }

// Whether op reads a negative index as counting from the end (else it is out of range).
constexpr bool negative_index_wraps(IndexedOp op) { return index_rule(op).negative_wraps; }

namespace detail {
constexpr bool index_rules_in_order() {
  for (size_t i = 0; i < sizeof(kIndexRules) / sizeof(kIndexRules[0]); ++i) {
    if (static_cast<size_t>(kIndexRules[i].op) != i) return false;
  }
  return sizeof(kIndexRules) / sizeof(kIndexRules[0]) ==
         static_cast<size_t>(IndexedOp::kMaskedScatter) + 1;
}
static_assert(index_rules_in_order(), "index_rules.h: one rule per op, in the order of the enum");
}  // namespace detail

}  // namespace mutagrad::native
