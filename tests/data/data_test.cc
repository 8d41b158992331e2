// data::TensorDataset and data::DataLoader on the test's device: batch contents equal the
// dataset's rows in the epoch's order, a shuffled epoch is a permutation (each sample once),
// drop_last sizes, the same orders for the same seed and new ones each epoch, a batch is a copy
// (writing it changes neither the dataset nor its version), bad arguments.
#include "data/data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "mutagrad.h"
#include "tests/tensor/test_device.h"

namespace mutagrad {
namespace {

using testing_device::host_copy;
using testing_device::on_test_device;

std::vector<int64_t> ints(const Tensor& t) {
  Tensor c = host_copy(t).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

std::vector<double> doubles(const Tensor& t) {
  Tensor c = host_copy(t).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// x[i] = [i, 10 i] (float64), y[i] = i (int64).
data::TensorDataset<2> make_dataset(int64_t n) {
  Tensor y = on_test_device(arange(n, kInt64));
  Tensor x =
      on_test_device(arange(n, kFloat64).unsqueeze(1) * from_vector<double>({1.0, 10.0}, {2}));
  return data::TensorDataset(x, y);
}

TEST(DataLoader, SequentialBatchesAreTheRowsInOrder) {
  for (int64_t bs : {1, 3, 4, 10, 11}) {
    for (bool drop_last : {false, true}) {
      data::DataLoaderOptions o;
      o.batch_size = bs;
      o.drop_last = drop_last;
      data::DataLoader loader(make_dataset(10), o);
      const int64_t want_batches = drop_last ? 10 / bs : (10 + bs - 1) / bs;
      EXPECT_EQ(loader.size(), want_batches);
      int64_t next = 0, batches = 0;
      for (auto& [x, y] : loader) {
        ++batches;
        EXPECT_EQ(x.device(), testing_device::test_device());
        EXPECT_EQ(x.dim(), 2);
        EXPECT_EQ(x.size(1), 2);
        const int64_t rows = y.size(0);
        EXPECT_EQ(x.size(0), rows);
        if (drop_last || batches < want_batches) {
          EXPECT_EQ(rows, bs);
        }
        std::vector<double> xs = doubles(x);
        for (int64_t r = 0; r < rows; ++r, ++next) {
          EXPECT_EQ(ints(y)[static_cast<size_t>(r)], next);
          EXPECT_EQ(xs[static_cast<size_t>(2 * r)], next);
          EXPECT_EQ(xs[static_cast<size_t>(2 * r + 1)], 10.0 * next);
        }
      }
      EXPECT_EQ(batches, want_batches);
      EXPECT_EQ(next, drop_last ? want_batches * bs : 10);
    }
  }
}

std::vector<std::vector<int64_t>> epochs(const data::DataLoader<data::TensorDataset<2>>& loader,
                                         int count) {
  std::vector<std::vector<int64_t>> out;
  for (int e = 0; e < count; ++e) {
    std::vector<int64_t> order;
    for (auto& [x, y] : loader) {
      std::vector<int64_t> ys = ints(y);
      std::vector<double> xs = doubles(x);
      for (size_t r = 0; r < ys.size(); ++r) {
        EXPECT_EQ(xs[2 * r], static_cast<double>(ys[r]));  // rows stay together
        order.push_back(ys[r]);
      }
    }
    out.push_back(order);
  }
  return out;
}

TEST(DataLoader, ShuffleIsAPermutationPerEpochDeterministicPerSeed) {
  for (bool drop_last : {false, true}) {
    data::DataLoaderOptions o;
    o.batch_size = 7;
    o.shuffle = true;
    o.drop_last = drop_last;
    o.generator = Generator().manual_seed(42);
    data::DataLoader loader(make_dataset(50), o);
    auto runs = epochs(loader, 3);
    for (const auto& order : runs) {
      std::set<int64_t> unique(order.begin(), order.end());
      EXPECT_EQ(unique.size(), order.size());  // each sample at most once
      EXPECT_EQ(order.size(), drop_last ? 49u : 50u);
      EXPECT_TRUE(*unique.rbegin() < 50 && *unique.begin() >= 0);
    }
    EXPECT_NE(runs[0], runs[1]);  // a new order each epoch
    std::vector<int64_t> sorted = runs[0];
    std::sort(sorted.begin(), sorted.end());
    EXPECT_NE(runs[0], sorted);  // shuffled

    o.generator = Generator().manual_seed(42);
    EXPECT_EQ(epochs(data::DataLoader(make_dataset(50), o), 3), runs);  // same seed
    o.generator = Generator().manual_seed(7);
    EXPECT_NE(epochs(data::DataLoader(make_dataset(50), o), 1)[0], runs[0]);
  }
  // Without a generator: the default CPU generator.
  data::DataLoaderOptions o;
  o.batch_size = 5;
  o.shuffle = true;
  default_generator(kCPU).manual_seed(3);
  auto a = epochs(data::DataLoader(make_dataset(20), o), 1);
  default_generator(kCPU).manual_seed(3);
  EXPECT_EQ(epochs(data::DataLoader(make_dataset(20), o), 1), a);
}

TEST(DataLoader, OptionsByDesignatedInitializers) {
  // C++20's designated initializers (g++ accepts them in C++17 too).
  default_generator(kCPU).manual_seed(11);
  int64_t rows = 0, batches = 0;
  std::set<int64_t> seen;
  for (auto& [x, y] : data::DataLoader(make_dataset(10), {.batch_size = 4, .shuffle = true})) {
    rows += x.size(0);
    ++batches;
    for (int64_t v : ints(y)) seen.insert(v);
  }
  EXPECT_EQ(rows, 10);
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(seen.size(), 10u);
  int64_t dropped = 0;
  for (auto& [x, y] : data::DataLoader(make_dataset(10), {.batch_size = 4, .drop_last = true})) {
    EXPECT_EQ(y.size(0), 4);
    ++dropped;
  }
  EXPECT_EQ(dropped, 2);
}

TEST(DataLoader, ABatchIsACopy) {
  data::TensorDataset ds = make_dataset(6);
  data::DataLoaderOptions o;
  o.batch_size = 4;
  data::DataLoader loader(ds, o);
  for (auto& [x, y] : loader) {
    x.mul_(0);
    y.add_(100);
  }
  EXPECT_EQ(ints(ds.tensors()[1]), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(ds.tensors()[0].version(), 0u);
  EXPECT_EQ(ds.tensors()[1].version(), 0u);
}

TEST(DataLoader, DatasetIndexingAndBadInput) {
  data::TensorDataset<2> ds = make_dataset(5);
  EXPECT_EQ(ds.size(), 5);
  auto [x, y] = ds.get(-1);
  EXPECT_EQ(y.item<int64_t>(), 4);
  EXPECT_EQ(doubles(x), (std::vector<double>{4.0, 40.0}));
  EXPECT_THROW(ds.get(5), IndexError);
  Tensor a = on_test_device(zeros({3, 2}));
  Tensor b = on_test_device(zeros({4}));
  try {
    data::TensorDataset bad(a, b);
    ADD_FAILURE() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 0 has 3 samples"), std::string::npos);
  }
  EXPECT_THROW(data::TensorDataset<1>(on_test_device(scalar_tensor(1.0))), ValueError);
  data::DataLoaderOptions o;
  o.batch_size = 0;
  EXPECT_THROW(data::DataLoader(ds, o), ValueError);
  // One tensor: a batch is std::array<Tensor, 1>.
  data::DataLoaderOptions three;
  three.batch_size = 3;
  int64_t count = 0;
  for (auto& [only] :
       data::DataLoader(data::TensorDataset(on_test_device(arange(7, kInt64))), three)) {
    count += only.size(0);
  }
  EXPECT_EQ(count, 7);
}

}  // namespace
}  // namespace mutagrad
