// data/: the loader's non-template parts. See data.h.
#include "data/data.h"

namespace mutagrad::data::detail {

void check_options(const DataLoaderOptions& options) {
  if (options.batch_size < 1) {
    throw ValueError(
        str("DataLoader: batch_size should be a positive integer value, but got "
            "batch_size=",
            options.batch_size));
  }
}

std::vector<int64_t> epoch_order(int64_t n, const DataLoaderOptions& options) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (!options.shuffle) {
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    return order;
  }
  Generator gen = options.generator ? *options.generator : default_generator(kCPU);
  Tensor perm = randperm(n, gen);
  const int64_t* p = perm.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = p[i];
  return order;
}

}  // namespace mutagrad::data::detail
