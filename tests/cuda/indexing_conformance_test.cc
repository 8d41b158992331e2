// Backend conformance for the indexing kernels, on every device: gather, scatter with and
// without accumulate (duplicate indices included: last write wins, sums in index order) and
// masked_fill, over random geometry, every dtype, negative and broadcast indices, indexed dims
// that are adjacent or not, and bool masks. The device must give the CPU's bits (Note
// [Deterministic index_put_ on the device] in cuda/indexing.cu), errors included.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/cpu/indexing.h"
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

// Note [Blocked accumulation order] (tensor/blocked_order.h) written out naively: the values
// of one destination, in index order, folded into d in the dtype (float or double): the first
// 1024 in order, then each later block's partial.
template <typename T>
T blocked_fold(T d, const std::vector<T>& w) {
  for (size_t b = 0; b < w.size(); b += 1024) {
    const size_t e = std::min(w.size(), b + 1024);
    T l = b == 0 ? d + w[0] : w[b];
    for (size_t k = b + 1; k < e; ++k) l = l + w[k];
    d = b == 0 ? l : d + l;
  }
  return d;
}

template <typename T>
std::vector<T> contents(const Tensor& t) {
  const Tensor c = conformance::host(t);
  return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
}

// index_put_(accumulate=true) (the kernel of index_add_ and scatter_add_ too) with long runs of
// one destination (all equal, and mixed with other destinations) fold each destination in the
// blocked order, bitwise, on every device and through every CPU path: one thread into a small
// destination, the partition of a destination beyond L2, a sliced dim split between threads, rows
// sorted by destination. A kernel folding in index order fails: the test checks the orders differ
// on the all-equal run.
TEST_P(IndexingConformance, LongRunsOfOneDestinationFoldInTheBlockedOrder) {
  const Device dev = GetParam();
  auto run_float = [&](auto zero, int64_t size, const std::vector<int64_t>& idx,
                       const std::string& what) {
    using T = decltype(zero);
    const ScalarType dtype = std::is_same_v<T, float> ? kFloat32 : kFloat64;
    const int64_t n = static_cast<int64_t>(idx.size());
    Tensor self = empty({size}, dtype);
    Tensor values = empty({n}, dtype);
    Tensor index = empty({n}, kInt64);
    for (int64_t i = 0; i < size; ++i) self.data_ptr<T>()[i] = static_cast<T>(rnd_.real(-1, 1));
    for (int64_t i = 0; i < n; ++i) {
      values.data_ptr<T>()[i] = static_cast<T>(rnd_.real(-1, 1) * (1 + i % 7));
      index.data_ptr<int64_t>()[i] = idx[static_cast<size_t>(i)];
    }
    std::vector<std::vector<T>> runs(static_cast<size_t>(size));
    for (int64_t i = 0; i < n; ++i) {
      runs[static_cast<size_t>(idx[static_cast<size_t>(i)])].push_back(values.data_ptr<T>()[i]);
    }
    std::vector<T> want = contents<T>(self);
    for (size_t k = 0; k < want.size(); ++k) want[k] = blocked_fold(want[k], runs[k]);
    // One and two CPU threads take different paths (Note [Counting beside the write]).
    const int saved_threads = cpu::indexing_num_threads();
    for (int threads : {1, 2}) {
      cpu::set_indexing_num_threads(threads);
      Tensor a = native::clone(native::to(self, dev));  // `to` may return self
      native::index_put_(a, {native::to(index, dev)}, native::to(values, dev), /*accumulate=*/true);
      EXPECT_EQ(contents<T>(a), want) << what << " " << dtype << ", " << threads << " threads";
    }
    cpu::set_indexing_num_threads(saved_threads);
    return runs;
  };
  {
    const float zero = 0.0f;
    // 100,000 writes to one of 3 elements, then to one of 300,000 (1.2 MB: the partition).
    for (int64_t size : {3, 300000}) {
      const auto runs = run_float(zero, size, std::vector<int64_t>(100000, 1), "all equal");
      float in_order = 0, blocked = blocked_fold(0.0f, runs[1]);
      for (float w : runs[1]) in_order += w;
      EXPECT_NE(in_order, blocked);  // the order is visible
    }
  }
  auto mixed = [&](auto zero) {
    // One destination takes 3,000 of 80,000 writes (the rest spread): mixed runs; into 5,000
    // elements, the rest spread at about 15 per element, no bucket fills.
    for (int64_t size : {50, 5000, 300000}) {
      std::vector<int64_t> idx(80000);
      for (size_t i = 0; i < idx.size(); ++i) {
        idx[i] = i % 27 == 0 && size != 5000 ? 7 : rnd_.uniform(0, size - 1);
      }
      run_float(zero, size, idx, size == 5000 ? "spread" : "mixed");
    }
  };
  mixed(0.0f);
  mixed(0.0);
  // Rows: 30,000 rows of 16 floats into 20,000 rows (1.28 MB, rows sorted by destination on
  // the CPU), and into 50 rows (columns split between threads); row 3 takes every third.
  for (int64_t rows : {20000, 50}) {
    const int64_t width = 16, n = 30000;
    Tensor table = empty({rows, width}, kFloat32);
    Tensor src = empty({n, width}, kFloat32);
    Tensor index = empty({n}, kInt64);
    for (int64_t i = 0; i < rows * width; ++i) table.data_ptr<float>()[i] = float(rnd_.real(-1, 1));
    for (int64_t i = 0; i < n * width; ++i) src.data_ptr<float>()[i] = float(rnd_.real(-3, 3));
    for (int64_t i = 0; i < n; ++i)
      index.data_ptr<int64_t>()[i] = i % 3 == 0 ? 3 : rnd_.uniform(0, rows - 1);
    std::vector<std::vector<int64_t>> by_row(static_cast<size_t>(rows));
    for (int64_t i = 0; i < n; ++i)
      by_row[static_cast<size_t>(index.data_ptr<int64_t>()[i])].push_back(i);
    std::vector<float> want = contents<float>(table);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < width; ++c) {
        std::vector<float> w;
        for (int64_t i : by_row[static_cast<size_t>(r)])
          w.push_back(src.data_ptr<float>()[i * width + c]);
        float& x = want[static_cast<size_t>(r * width + c)];
        x = blocked_fold(x, w);
      }
    }
    Tensor got = native::to(table, dev);
    native::index_put_(got, {native::to(index, dev)}, native::to(src, dev), /*accumulate=*/true);
    EXPECT_EQ(contents<float>(got), want) << "rows into " << rows;
  }
  // A scatter_add_ along dim 1: the index list {row coordinate, index} (Note [Rows named by a
  // coordinate] in tensor/cpu/index_put.cc), 40 rows. 3,000 values a row into 50 columns, row 3
  // putting every second one on column 7 (1,500 values: the blocked order shows); and 1,024
  // values a row into 4,096 columns, where no element can get more than 1,024 (Note [Short runs
  // need no counting]).
  for (auto [width, m] : {std::pair<int64_t, int64_t>{50, 3000}, {4096, 1024}}) {
    const int64_t rows = 40;
    Tensor table = empty({rows, width}, kFloat32);
    Tensor src = empty({rows, m}, kFloat32);
    Tensor index = empty({rows, m}, kInt64);
    for (int64_t i = 0; i < rows * width; ++i) table.data_ptr<float>()[i] = float(rnd_.real(-1, 1));
    for (int64_t i = 0; i < rows * m; ++i) {
      src.data_ptr<float>()[i] = float(rnd_.real(-3, 3));
      index.data_ptr<int64_t>()[i] = i / m == 3 && i % 2 == 0 ? 7 : rnd_.uniform(0, width - 1);
    }
    std::vector<float> want = contents<float>(table);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<std::vector<float>> runs(static_cast<size_t>(width));
      for (int64_t k = 0; k < m; ++k) {
        runs[size_t(index.data_ptr<int64_t>()[r * m + k])].push_back(
            src.data_ptr<float>()[r * m + k]);
      }
      for (int64_t c = 0; c < width; ++c) {
        float& x = want[static_cast<size_t>(r * width + c)];
        x = blocked_fold(x, runs[size_t(c)]);
      }
    }
    const Tensor coordinate = native::view(arange(rows, kInt64), {rows, 1});
    const int saved_threads = cpu::indexing_num_threads();
    for (int threads : {1, 2, 3}) {
      cpu::set_indexing_num_threads(threads);
      Tensor got = native::clone(native::to(table, dev));
      native::index_put_(got, {native::to(coordinate, dev), native::to(index, dev)},
                         native::to(src, dev), /*accumulate=*/true);
      EXPECT_EQ(contents<float>(got), want)
          << "scatter_add_ along dim 1, " << m << " values a row, " << threads << " threads";
    }
    cpu::set_indexing_num_threads(saved_threads);
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
