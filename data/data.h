// data/: torch.utils.data's TensorDataset and DataLoader for C++ loops over tensors.
//
//   data::TensorDataset ds(x, y);                        // x: [N, ...], y: [N, ...]
//   data::DataLoaderOptions o;
//   o.batch_size = 64;
//   o.shuffle = true;                                    // a new order each epoch
//   o.generator = Generator().manual_seed(0);            // else default_generator(kCPU)
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     for (auto& [xb, yb] : data::DataLoader(ds, o)) { ... }   // xb: [64, ...]
//   }
//   for (auto& [xb, yb] : data::DataLoader(ds, {.batch_size = 64, .shuffle = true})) { ... }
//                                        // designated initializers: C++20, or g++'s C++17
//
// Note [A batch is a copy]
// A batch is index_select(0, indices) of each tensor: new tensors on the dataset's device, as
// torch's default_collate stacks copies. Writing a batch in place does not touch the dataset
// (nor its version counters); the dataset's tensors are only read.
//
// Note [Shuffle order]
// An epoch's order is randperm(N) drawn from the generator when begin() is called (each range-
// for over a loader is one epoch). mutagrad's generators are Philox counters, not torch's
// mt19937, so a seed gives another order than torch's: the same properties (a permutation,
// each sample once per epoch, the same orders for the same seed), not the same indices.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "mutagrad.h"

namespace mutagrad::data {

// Samples along dim 0 of N tensors with the same size there; a batch is std::array<Tensor, N>
// (structured bindings: auto& [x, y]).
template <size_t N>
class TensorDataset {
 public:
  using Batch = std::array<Tensor, N>;

  template <typename... T, typename = std::enable_if_t<sizeof...(T) == N>>
  explicit TensorDataset(T... tensors) : tensors_{std::move(tensors)...} {
    static_assert(N > 0, "TensorDataset needs at least one tensor");
    for (size_t i = 0; i < N; ++i) {
      const Tensor& t = tensors_[i];
      if (!t.defined() || t.dim() == 0) {
        throw ValueError(str("TensorDataset: tensor ", i,
                             " is undefined or 0-dim; give tensors with the samples along dim 0"));
      }
      if (t.size(0) != tensors_[0].size(0)) {
        throw ShapeError(str("TensorDataset: size mismatch between tensors: tensor 0 has ",
                             tensors_[0].size(0), " samples in dim 0 but tensor ", i, " has ",
                             t.size(0), "; every tensor needs one row per sample"));
      }
    }
  }

  int64_t size() const { return tensors_[0].size(0); }
  const std::array<Tensor, N>& tensors() const { return tensors_; }

  // Sample `index` (negative counts from the end): views t.select(0, index).
  Batch get(int64_t index) const {
    const int64_t n = size();
    if (index < -n || index >= n) {
      throw IndexError(str("TensorDataset: index ", index, " is out of range for ", n, " samples"));
    }
    Batch out;
    for (size_t i = 0; i < N; ++i) out[i] = tensors_[i].select(0, index < 0 ? index + n : index);
    return out;
  }

  // The samples at `indices` (int64, on the CPU), stacked: see Note [A batch is a copy].
  Batch get_batch(const Tensor& indices) const {
    Batch out;
    for (size_t i = 0; i < N; ++i) {
      const Tensor& t = tensors_[i];
      out[i] = t.index_select(0, t.device().is_cpu() ? indices : indices.to(t.device()));
    }
    return out;
  }

 private:
  std::array<Tensor, N> tensors_;
};

template <typename... T>
TensorDataset(T...) -> TensorDataset<sizeof...(T)>;

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  bool drop_last = false;
  // The shuffle's generator (a handle: its state advances); default_generator(kCPU) if unset.
  std::optional<Generator> generator = std::nullopt;
};

namespace detail {
// The index order of one epoch: 0..n-1, or randperm(n) from `generator`.
std::vector<int64_t> epoch_order(int64_t n, const DataLoaderOptions& options);
void check_options(const DataLoaderOptions& options);
}  // namespace detail

// Batches of a dataset with size() and get_batch(int64 index tensor) (TensorDataset). Each
// begin() is an epoch; see Note [Shuffle order].
template <typename Dataset>
class DataLoader {
 public:
  using Batch = typename Dataset::Batch;

  // ValueError for batch_size < 1.
  DataLoader(Dataset dataset, DataLoaderOptions options = {})
      : dataset_(std::move(dataset)), options_(std::move(options)) {
    detail::check_options(options_);
  }

  // Batches per epoch: ceil(N / batch_size), or floor with drop_last.
  int64_t size() const {
    const int64_t n = dataset_.size(), b = options_.batch_size;
    return options_.drop_last ? n / b : (n + b - 1) / b;
  }
  const Dataset& dataset() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  class iterator {
   public:
    using value_type = Batch;
    using reference = Batch&;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::input_iterator_tag;

    Batch& operator*() { return batch_; }
    Batch* operator->() { return &batch_; }
    iterator& operator++() {
      ++index_;
      load();
      return *this;
    }
    bool operator==(const iterator& other) const { return index_ == other.index_; }
    bool operator!=(const iterator& other) const { return index_ != other.index_; }

   private:
    friend class DataLoader;
    iterator(const DataLoader* loader, int64_t index, std::vector<int64_t> order)
        : loader_(loader), index_(index), order_(std::move(order)) {
      load();
    }
    void load() {
      if (loader_ == nullptr || index_ >= loader_->size()) return;
      const int64_t b = loader_->options_.batch_size;
      const int64_t start = index_ * b;
      const int64_t stop = std::min<int64_t>(start + b, static_cast<int64_t>(order_.size()));
      std::vector<int64_t> ids(order_.begin() + start, order_.begin() + stop);
      batch_ = loader_->dataset_.get_batch(from_vector(ids, {stop - start}));
    }

    const DataLoader* loader_;
    int64_t index_;
    std::vector<int64_t> order_;
    Batch batch_;
  };

  iterator begin() const {
    return iterator(this, 0, detail::epoch_order(dataset_.size(), options_));
  }
  iterator end() const { return iterator(nullptr, size(), {}); }

 private:
  Dataset dataset_;
  DataLoaderOptions options_;
};

}  // namespace mutagrad::data
