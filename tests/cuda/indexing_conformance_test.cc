// Backend conformance for the indexing kernels, on every device: gather, scatter with and
// without accumulate (duplicate indices included: last write wins, sums in index order) and
// masked_fill, over random geometry, every dtype, negative and broadcast indices, indexed dims
// that are adjacent or not, and bool masks. The device must give the CPU's bits (Note
// [Deterministic index_put_ on the device] in cuda/indexing.cu), errors included.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tests/cuda/conformance_util.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using conformance::check_op;
using conformance::input;
using tensor_testing::kAllDtypes;
using tensor_testing::Random;

using IndexingConformance = conformance::DeviceTest;

// int64 indices in [-size, size) of `shape`, many duplicates when `size` is small.
Tensor index_tensor(Random& rnd, IntArrayRef shape, int64_t size) {
  Tensor t = empty(shape, kInt64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_ptr<int64_t>()[i] = rnd.uniform(-size, size - 1);
  return t;
}

// Which dims of a [5, 4, 6] tensor are indexed (undefined = taken whole), with index shapes
// that broadcast.
struct Pattern {
  std::vector<bool> indexed;
  std::vector<DimVector> shapes;
};

const Pattern kPatterns[] = {
    {{true}, {{7}}},                          // duplicates along dim 0
    {{false, true}, {{3, 1}}},                // a middle dim, 2-D index
    {{true, true}, {{4}, {4}}},               // adjacent pair
    {{true, false, true}, {{2, 3}, {3}}},     // not adjacent: index dims go first
    {{true, true, true}, {{10}, {1}, {10}}},  // all three, broadcast
    {{false, false, true}, {{}}},             // a 0-dim index
};

TEST_P(IndexingConformance, GatherAndScatterWithDuplicates) {
  const DimVector self_shape = {5, 4, 6};
  for (const Pattern& pattern : kPatterns) {
    for (ScalarType dtype : kAllDtypes) {
      std::vector<Tensor> inputs = {input(rnd_, self_shape, dtype)};
      size_t k = 0;
      for (size_t d = 0; d < pattern.indexed.size(); ++d) {
        if (pattern.indexed[d]) {
          inputs.push_back(index_tensor(rnd_, pattern.shapes[k++], self_shape[d]));
        }
      }
      auto index_list = [&](const std::vector<Tensor>& t) {
        std::vector<Tensor> list;
        size_t next = 1;
        for (bool indexed : pattern.indexed) list.push_back(indexed ? t[next++] : Tensor());
        return list;
      };
      const std::string what = str(dtype, " pattern of ", pattern.indexed.size(), " dims");
      check_op(
          GetParam(), inputs,
          [&](const std::vector<Tensor>& t) { return native::index(t[0], index_list(t)); }, 0,
          "index " + what);
      // Values of the indexed shape (from a CPU gather), and a broadcast scalar-like row.
      const DimVector result_shape(native::index(inputs[0], index_list(inputs)).sizes());
      inputs.push_back(input(rnd_, result_shape, dtype));
      for (bool accumulate : {false, true}) {
        check_op(
            GetParam(), inputs,
            [&](const std::vector<Tensor>& t) {
              native::index_put_(t[0], index_list(t), t.back(), accumulate);
              return t[0];
            },
            0, str(accumulate ? "index_put_ accumulate " : "index_put_ ", what));
      }
    }
  }
}

TEST_P(IndexingConformance, ManyDuplicatesAccumulateInIndexOrder) {
  // 20,000 writes into 3 floats: the order of additions decides the rounding.
  for (ScalarType dtype : {kFloat32, kFloat64, kInt32}) {
    Tensor self = input(rnd_, {3}, dtype);
    Tensor idx = index_tensor(rnd_, {20000}, 3);
    Tensor values = rnd_.tensor({20000}, dtype, -1e3, 1e3);
    check_op(
        GetParam(), {self, idx, values},
        [](const std::vector<Tensor>& t) {
          native::index_put_(t[0], {t[1]}, t[2], /*accumulate=*/true);
          return t[0];
        },
        0, str("accumulate ", dtype));
  }
}

// Without accumulate the last write in index order wins. The device decides the winner per
// destination with an atomic max of positions (Note [index_put_ without a sort] in
// cuda/indexing.cu), or sorts when the destination's span is much larger than the write; both
// must be the CPU's bits, over contiguous and strided destinations and every dtype width.
TEST_P(IndexingConformance, NonAccumulatingDuplicatesLastWriteWins) {
  for (ScalarType dtype : {kFloat32, kFloat64, kInt64, kBool, kFloat16}) {
    // 200,000 writes into 50,000 elements: about four per destination.
    Tensor self = input(rnd_, {50000}, dtype);
    Tensor idx = index_tensor(rnd_, {200000}, 50000);
    Tensor values = input(rnd_, {200000}, dtype);
    check_op(
        GetParam(), {self, idx, values},
        [](const std::vector<Tensor>& t) {
          native::index_put_(t[0], {t[1]}, t[2], /*accumulate=*/false);
          return t[0];
        },
        0, str("index_put_ duplicates ", dtype));
    // A transposed destination (strided rows), a 2-D index and values broadcast along rows.
    Tensor grid = input(rnd_, {40, 300}, dtype);
    Tensor rows = index_tensor(rnd_, {50, 20}, 300);
    Tensor row_values = input(rnd_, {20, 40}, dtype);
    check_op(
        GetParam(), {grid, rows, row_values},
        [](const std::vector<Tensor>& t) {
          native::index_put_(native::transpose(t[0], 0, 1), {t[1]}, t[2], false);
          return t[0];
        },
        0, str("index_put_ strided destination ", dtype));
    // Five writes (three to one element) into 3M elements: the sorted kernel.
    Tensor big = zeros({3000000}, TensorOptions(dtype));
    Tensor few = tensor({7, 2999999, 7, -1, 7});
    Tensor few_values = input(rnd_, {5}, dtype);
    check_op(
        GetParam(), {big, few, few_values},
        [](const std::vector<Tensor>& t) {
          native::index_put_(t[0], {t[1]}, t[2], false);
          return t[0];
        },
        0, str("index_put_ few into many ", dtype));
  }
}

// Out-of-range values in any of several index tensors, or below -size: the checked gather and
// the screen find them on the device, with the CPU's text.
TEST_P(IndexingConformance, EveryIndexTensorIsChecked) {
  Tensor x = input(rnd_, {4, 3}, kFloat32);
  for (const auto& [first, second] :
       std::vector<std::pair<Tensor, Tensor>>{{tensor({0, 1, 2}), tensor({0, 3, 1})},
                                              {tensor({0, -5, 2}), tensor({0, 2, 1})},
                                              {tensor({-4, 3, 0}), tensor({-3, 2, -4})}}) {
    check_op(
        GetParam(), {x, first, second},
        [](const std::vector<Tensor>& t) {
          return native::index(t[0], {t[1], t[2]});
        },
        0, "x[i, j]");
    check_op(
        GetParam(), {x, first, second, input(rnd_, {3}, kFloat32)},
        [](const std::vector<Tensor>& t) {
          native::index_put_(t[0], {t[1], t[2]}, t[3], false);
          return t[0];
        },
        0, "x[i, j] = v");
  }
}

TEST_P(IndexingConformance, BoolMasksAndMaskedFill) {
  for (const DimVector& shape : shapes()) {
    for (ScalarType dtype : kAllDtypes) {
      Tensor x = input(rnd_, shape, dtype);
      Tensor mask = input(rnd_, shape, kBool);
      check_op(
          GetParam(), {x, mask},
          [](const std::vector<Tensor>& t) { return native::index(t[0], {t[1]}); }, 0,
          str("x[mask] ", dtype, shape));
      check_op(
          GetParam(), {x, mask},
          [](const std::vector<Tensor>& t) {
            native::masked_fill_(t[0], t[1], 3);
            return t[0];
          },
          0, str("masked_fill_ ", dtype, shape));
    }
  }
}

TEST_P(IndexingConformance, OutOfRangeIndicesAreRefusedWithTheCpuText) {
  Tensor x = input(rnd_, {4, 3}, kFloat32);
  Tensor bad = tensor({0, 4});
  check_op(
      GetParam(), {x, bad},
      [](const std::vector<Tensor>& t) { return native::index(t[0], {t[1]}); }, 0, "x[[0, 4]]");
  check_op(
      GetParam(), {x, bad, input(rnd_, {2, 3}, kFloat32)},
      [](const std::vector<Tensor>& t) {
        native::index_put_(t[0], {t[1]}, t[2], false);
        return t[0];
      },
      0, "x[[0, 4]] = v");
}

INSTANTIATE_TEST_SUITE_P(Devices, IndexingConformance, conformance::kDevices,
                         conformance::device_name);

}  // namespace
}  // namespace mutagrad
