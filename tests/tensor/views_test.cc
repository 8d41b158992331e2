// Every raw view op checked against naive index arithmetic, over random (seeded) base
// geometries: shapes, gappy or permuted strides, and storage offsets. The storage holds
// storage[p] == p, so a value read through a view names the storage position it came from.
#include "tensor/native/views.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "tensor/native/factories.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers

// Storage position of `idx` in the geometry of t.
int64_t position(const Tensor& t, const Index& idx) {
  int64_t p = t.storage_offset();
  for (size_t d = 0; d < idx.size(); ++d) p += idx[d] * t.strides()[d];
  return p;
}

class RandomViews : public ::testing::Test {
 protected:
  std::mt19937_64 rng_{20240601};

  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  // A storage of float64 with storage[p] == p, and a random strided view `base` of it.
  void make_base(int64_t min_dim = 0, int64_t max_dim = 4, int64_t max_size = 5) {
    int64_t ndim = uniform(min_dim, max_dim);
    DimVector sizes;
    for (int64_t d = 0; d < ndim; ++d) sizes.push_back(uniform(1, max_size));
    if (uniform(0, 9) == 0 && ndim > 0) sizes[uniform(0, ndim - 1)] = 0;
    // Strides: a random permutation of a contiguous layout, with random gaps.
    std::vector<int64_t> order(ndim);
    for (int64_t d = 0; d < ndim; ++d) order[d] = d;
    std::shuffle(order.begin(), order.end(), rng_);
    DimVector strides(static_cast<size_t>(ndim));
    int64_t acc = uniform(1, 2);
    for (int64_t k = ndim - 1; k >= 0; --k) {
      strides[order[k]] = acc;
      acc *= std::max<int64_t>(sizes[order[k]], 1) + uniform(0, 2);
    }
    int64_t offset = uniform(0, 7);
    int64_t span = offset + 1;
    for (int64_t d = 0; d < ndim; ++d) span += (std::max<int64_t>(sizes[d], 1) - 1) * strides[d];
    storage_ = empty({span + uniform(0, 3)}, kFloat64);
    double* p = storage_.data_ptr<double>();
    for (int64_t i = 0; i < storage_.numel(); ++i) p[i] = static_cast<double>(i);
    base_ = native::as_strided(storage_, sizes, strides, offset);
  }

  // Checks that `view` has `sizes` and that each element idx sits where `expected_base_index`
  // says in the base's geometry; also that it aliases the base and records the root base.
  void expect_view(const Tensor& view, IntArrayRef sizes,
                   const std::function<Index(const Index&)>& expected_base_index) {
    ASSERT_EQ(view.sizes().vec(), sizes.vec())
        << "base sizes " << base_.sizes() << " strides " << base_.strides();
    EXPECT_TRUE(view.is_alias_of(base_));
    EXPECT_TRUE(view.version_counter().is_same(base_.version_counter()));
    ASSERT_TRUE(view.is_view());
    EXPECT_TRUE(view.base().is_same(storage_)) << "the view base must be the root";
    EXPECT_EQ(view.is_contiguous(), compute_is_contiguous(view.sizes(), view.strides()));
    for (const Index& idx : all_indices(view.sizes())) {
      int64_t want = position(base_, expected_base_index(idx));
      ASSERT_EQ(position(view, idx), want);
      ASSERT_EQ(read(view, idx), static_cast<double>(want));
    }
  }

  // Row-major flat index <-> multi-index.
  static Index unflatten(int64_t flat, IntArrayRef sizes) {
    Index idx(sizes.size());
    for (size_t d = sizes.size(); d-- > 0;) {
      idx[d] = flat % sizes[d];
      flat /= sizes[d];
    }
    return idx;
  }
  static int64_t flatten_index(const Index& idx, IntArrayRef sizes) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) flat = flat * sizes[d] + idx[d];
    return flat;
  }

  Tensor storage_;
  Tensor base_;
};

constexpr int kTrials = 200;

TEST_F(RandomViews, Select) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(1);
    int64_t d = uniform(0, base_.dim() - 1);
    int64_t n = base_.size(d);
    if (n == 0) continue;
    int64_t i = uniform(-n, n - 1);
    int64_t wrapped = i < 0 ? i + n : i;
    int64_t dim_arg = uniform(0, 1) ? d : d - base_.dim();
    Tensor v = native::select(base_, dim_arg, i);
    DimVector sizes(base_.sizes());
    sizes.erase(static_cast<size_t>(d));
    expect_view(v, sizes, [&](const Index& idx) {
      Index b = idx;
      b.insert(b.begin() + d, wrapped);
      return b;
    });
  }
}

// Python's range(len)[start:stop:step], computed by brute force.
std::vector<int64_t> python_slice(int64_t len, std::optional<int64_t> start,
                                  std::optional<int64_t> stop, int64_t step) {
  std::vector<int64_t> out;
  auto norm = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += len;
    if (x < 0) x = 0;
    if (x > len) x = len;
    return x;
  };
  int64_t b = norm(start, 0);
  int64_t e = norm(stop, len);
  for (int64_t i = 0; i < len; ++i) {
    if (i >= b && i < e && (i - b) % step == 0) out.push_back(i);
  }
  return out;
}

TEST_F(RandomViews, Slice) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(1);
    int64_t d = uniform(0, base_.dim() - 1);
    int64_t n = base_.size(d);
    std::optional<int64_t> start, stop;
    if (uniform(0, 3)) start = uniform(-n - 3, n + 3);
    if (uniform(0, 3)) stop = uniform(-n - 3, n + 3);
    int64_t step = uniform(1, 4);
    std::vector<int64_t> picked = python_slice(n, start, stop, step);
    Tensor v = native::slice(base_, d, start, stop, step);
    DimVector sizes(base_.sizes());
    sizes[d] = static_cast<int64_t>(picked.size());
    expect_view(v, sizes, [&](const Index& idx) {
      Index b = idx;
      b[d] = picked[idx[d]];
      return b;
    });
  }
}

TEST_F(RandomViews, Narrow) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(1);
    int64_t d = uniform(0, base_.dim() - 1);
    int64_t n = base_.size(d);
    int64_t start = uniform(0, n);
    int64_t length = uniform(0, n - start);
    int64_t start_arg = (start < n && uniform(0, 1)) ? start - n : start;
    Tensor v = native::narrow(base_, d, start_arg, length);
    DimVector sizes(base_.sizes());
    sizes[d] = length;
    expect_view(v, sizes, [&](const Index& idx) {
      Index b = idx;
      b[d] += start;
      return b;
    });
  }
}

TEST_F(RandomViews, PermuteAndTranspose) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(1);
    int64_t n = base_.dim();
    std::vector<int64_t> perm(n);
    for (int64_t i = 0; i < n; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng_);
    std::vector<int64_t> perm_arg = perm;
    for (auto& p : perm_arg) {
      if (uniform(0, 1)) p -= n;
    }
    DimVector sizes;
    for (int64_t p : perm) sizes.push_back(base_.size(p));
    expect_view(native::permute(base_, perm_arg), sizes, [&](const Index& idx) {
      Index b(n);
      for (int64_t i = 0; i < n; ++i) b[perm[i]] = idx[i];
      return b;
    });

    int64_t a = uniform(0, n - 1);
    int64_t c = uniform(0, n - 1);
    DimVector tsizes(base_.sizes());
    std::swap(tsizes[a], tsizes[c]);
    expect_view(native::transpose(base_, a, c - n), tsizes, [&](const Index& idx) {
      Index b = idx;
      std::swap(b[a], b[c]);
      return b;
    });
  }
}

TEST_F(RandomViews, T) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(0, 2);
    Tensor v = native::t(base_);
    DimVector sizes(base_.sizes());
    if (base_.dim() == 2) std::swap(sizes[0], sizes[1]);
    expect_view(v, sizes, [&](const Index& idx) {
      Index b = idx;
      if (b.size() == 2) std::swap(b[0], b[1]);
      return b;
    });
  }
}

TEST_F(RandomViews, Expand) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(0, 3, 3);
    // Make some dims size 1 so they can grow.
    DimVector bsizes(base_.sizes());
    for (auto& s : bsizes) {
      if (uniform(0, 1)) s = 1;
    }
    base_ = native::as_strided(base_, bsizes, base_.strides());
    int64_t lead = uniform(0, 2);
    std::vector<int64_t> target;
    DimVector sizes;
    for (int64_t i = 0; i < lead; ++i) {
      target.push_back(uniform(0, 3));
      sizes.push_back(target.back());
    }
    for (int64_t s : bsizes) {
      int64_t choice = uniform(0, 2);
      int64_t t = choice == 0 ? -1 : (s == 1 ? uniform(0, 4) : s);
      target.push_back(t);
      sizes.push_back(t == -1 ? s : t);
    }
    Tensor v = native::expand(base_, target);
    expect_view(v, sizes, [&](const Index& idx) {
      Index b(idx.begin() + lead, idx.end());
      for (size_t d = 0; d < b.size(); ++d) {
        if (bsizes[d] == 1) b[d] = 0;
      }
      return b;
    });
    for (size_t d = 0; d < sizes.size(); ++d) {
      int64_t src = static_cast<int64_t>(d) - lead;
      bool grown = src < 0 ? sizes[d] != 1 : bsizes[src] != sizes[d];
      if (grown) {
        EXPECT_EQ(v.stride(static_cast<int64_t>(d)), 0);
      }
    }
  }
}

TEST_F(RandomViews, UnsqueezeAndSqueeze) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(0, 4, 3);
    int64_t n = base_.dim();
    int64_t d = uniform(0, n);
    Tensor u = native::unsqueeze(base_, uniform(0, 1) ? d : d - n - 1);
    DimVector usizes(base_.sizes());
    usizes.insert(static_cast<size_t>(d), 1);
    expect_view(u, usizes, [&](const Index& idx) {
      Index b = idx;
      b.erase(b.begin() + d);
      return b;
    });

    DimVector ssizes;
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < n; ++i) {
      if (base_.size(i) != 1) {
        ssizes.push_back(base_.size(i));
        kept.push_back(i);
      }
    }
    expect_view(native::squeeze(base_), ssizes, [&](const Index& idx) {
      Index b(n, 0);
      for (size_t k = 0; k < kept.size(); ++k) b[kept[k]] = idx[k];
      return b;
    });

    if (n == 0) continue;
    int64_t sd = uniform(0, n - 1);
    DimVector sdsizes(base_.sizes());
    bool removes = base_.size(sd) == 1;
    if (removes) sdsizes.erase(static_cast<size_t>(sd));
    expect_view(native::squeeze(base_, sd), sdsizes, [&](const Index& idx) {
      Index b = idx;
      if (removes) b.insert(b.begin() + sd, 0);
      return b;
    });
  }
}

// A random shape with the given numel (its prime factors spread over a few dims).
std::vector<int64_t> random_shape_with_numel(int64_t numel, std::mt19937_64& rng) {
  std::vector<int64_t> factors;
  int64_t m = numel;
  for (int64_t p = 2; p <= m; ++p) {
    while (m % p == 0) {
      factors.push_back(p);
      m /= p;
    }
  }
  int64_t ndim = std::uniform_int_distribution<int64_t>(1, 4)(rng);
  std::vector<int64_t> shape(ndim, 1);
  for (int64_t f : factors) shape[std::uniform_int_distribution<int64_t>(0, ndim - 1)(rng)] *= f;
  return shape;
}

TEST_F(RandomViews, ViewAndReshapeFollowRowMajorOrder) {
  int views = 0;
  int copies = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(1, 4, 4);
    if (base_.numel() == 0) continue;
    std::vector<int64_t> shape = random_shape_with_numel(base_.numel(), rng_);
    std::vector<int64_t> requested = shape;
    if (uniform(0, 1)) requested[uniform(0, static_cast<int64_t>(shape.size()) - 1)] = -1;
    auto in_base = [&](const Index& idx) {
      return unflatten(flatten_index(idx, shape), base_.sizes());
    };
    bool viewable = compute_view_strides(base_.sizes(), base_.strides(), shape).has_value();
    if (viewable) {
      ++views;
      expect_view(native::view(base_, requested), shape, in_base);
      expect_view(native::reshape(base_, requested), shape, in_base);
    } else {
      ++copies;
      EXPECT_THROW(native::view(base_, requested), ShapeError);
      Tensor r = native::reshape(base_, requested);
      ASSERT_EQ(r.sizes().vec(), shape);
      EXPECT_TRUE(r.is_contiguous());
      EXPECT_FALSE(r.is_alias_of(base_));
      EXPECT_FALSE(r.is_view());
      EXPECT_FALSE(r.version_counter().is_same(base_.version_counter()));
      for (const Index& idx : all_indices(shape)) {
        ASSERT_EQ(read(r, idx), static_cast<double>(position(base_, in_base(idx))));
      }
    }
  }
  // The random geometries exercise both paths.
  EXPECT_GT(views, 20);
  EXPECT_GT(copies, 20);
}

TEST_F(RandomViews, ContiguousBaseAlwaysViews) {
  for (int trial = 0; trial < kTrials; ++trial) {
    int64_t numel = uniform(1, 60);
    storage_ = empty({numel}, kFloat64);
    double* p = storage_.data_ptr<double>();
    for (int64_t i = 0; i < numel; ++i) p[i] = static_cast<double>(i);
    base_ = native::view(storage_, random_shape_with_numel(numel, rng_));
    std::vector<int64_t> shape = random_shape_with_numel(numel, rng_);
    Tensor v = native::view(base_, shape);
    expect_view(v, shape, [&](const Index& idx) {
      return unflatten(flatten_index(idx, shape), base_.sizes());
    });
    EXPECT_TRUE(v.is_contiguous());
  }
}

TEST_F(RandomViews, Flatten) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(1, 4, 4);
    int64_t n = base_.dim();
    int64_t s = uniform(0, n - 1);
    int64_t e = uniform(s, n - 1);
    DimVector shape;
    for (int64_t i = 0; i < s; ++i) shape.push_back(base_.size(i));
    int64_t merged = 1;
    for (int64_t i = s; i <= e; ++i) merged *= base_.size(i);
    shape.push_back(merged);
    for (int64_t i = e + 1; i < n; ++i) shape.push_back(base_.size(i));
    Tensor f = native::flatten(base_, s, e - n);
    ASSERT_EQ(f.sizes().vec(), shape.vec());
    // Element order: row-major within the merged dims.
    IntArrayRef bsizes = base_.sizes();
    for (const Index& idx : all_indices(shape)) {
      Index b;
      for (int64_t i = 0; i < s; ++i) b.push_back(idx[i]);
      Index merged_idx = unflatten(idx[s], IntArrayRef(bsizes.data() + s, e - s + 1));
      b.insert(b.end(), merged_idx.begin(), merged_idx.end());
      for (int64_t i = e + 1; i < n; ++i) b.push_back(idx[i - e + s]);
      ASSERT_EQ(read(f, idx), static_cast<double>(position(base_, b)));
    }
    if (s == e) {
      EXPECT_TRUE(f.is_same(base_));
    }
  }
}

TEST_F(RandomViews, Diagonal) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(2, 4, 5);
    int64_t n = base_.dim();
    int64_t d1 = uniform(0, n - 1);
    int64_t d2 = uniform(0, n - 2);
    if (d2 >= d1) ++d2;
    int64_t offset = uniform(-6, 6);
    // Brute force: the pairs (i, j) with j - i == offset, in order of i.
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t i = 0; i < base_.size(d1); ++i) {
      int64_t j = i + offset;
      if (j >= 0 && j < base_.size(d2)) pairs.emplace_back(i, j);
    }
    DimVector sizes;
    std::vector<int64_t> rest;
    for (int64_t i = 0; i < n; ++i) {
      if (i != d1 && i != d2) {
        sizes.push_back(base_.size(i));
        rest.push_back(i);
      }
    }
    sizes.push_back(static_cast<int64_t>(pairs.size()));
    Tensor v = native::diagonal(base_, offset, d1, d2 - n);
    expect_view(v, sizes, [&](const Index& idx) {
      Index b(n);
      for (size_t k = 0; k < rest.size(); ++k) b[rest[k]] = idx[k];
      b[d1] = pairs[idx.back()].first;
      b[d2] = pairs[idx.back()].second;
      return b;
    });
  }
}

TEST_F(RandomViews, AsStridedOfAView) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(1);
    Tensor v = native::slice(base_, 0, 1, std::nullopt);
    // Geometry inside the storage: positions = offset + sum idx * stride.
    int64_t ndim = uniform(0, 3);
    std::vector<int64_t> sizes, strides;
    int64_t span = 0;
    for (int64_t d = 0; d < ndim; ++d) {
      sizes.push_back(uniform(1, 3));
      strides.push_back(uniform(0, 3));
      span += (sizes.back() - 1) * strides.back();
    }
    int64_t room = storage_.numel() - 1 - span;
    if (room < 0) continue;
    int64_t offset = uniform(0, room);
    Tensor a = native::as_strided(v, sizes, strides, offset);
    ASSERT_EQ(a.sizes().vec(), sizes);
    EXPECT_TRUE(a.base().is_same(storage_));
    for (const Index& idx : all_indices(sizes)) {
      int64_t want = offset;
      for (int64_t d = 0; d < ndim; ++d) want += idx[d] * strides[d];
      ASSERT_EQ(read(a, idx), static_cast<double>(want));
    }
    // Without an offset argument the view keeps the source's offset.
    if (v.numel() > 0) {
      EXPECT_EQ(native::as_strided(v, {1}, {1}).storage_offset(), v.storage_offset());
    }
  }
}

// unbind/split/chunk are narrows (or selects) along a dim; their sizes follow PyTorch.
TEST_F(RandomViews, MultiOutputViews) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(1, 3, 7);
    int64_t d = uniform(0, base_.dim() - 1);
    int64_t n = base_.size(d);

    std::vector<Tensor> parts = native::unbind(base_, d);
    ASSERT_EQ(static_cast<int64_t>(parts.size()), n);
    for (int64_t i = 0; i < n; ++i) {
      DimVector sizes(base_.sizes());
      sizes.erase(static_cast<size_t>(d));
      expect_view(parts[i], sizes, [&](const Index& idx) {
        Index b = idx;
        b.insert(b.begin() + d, i);
        return b;
      });
    }

    auto check_pieces = [&](const std::vector<Tensor>& pieces, const std::vector<int64_t>& lens) {
      ASSERT_EQ(pieces.size(), lens.size());
      int64_t start = 0;
      for (size_t k = 0; k < pieces.size(); ++k) {
        DimVector sizes(base_.sizes());
        sizes[d] = lens[k];
        expect_view(pieces[k], sizes, [&](const Index& idx) {
          Index b = idx;
          b[d] += start;
          return b;
        });
        start += lens[k];
      }
      EXPECT_EQ(start, n);
    };

    if (n > 0) {
      int64_t split_size = uniform(1, n + 1);
      std::vector<int64_t> lens;
      for (int64_t s = 0; s < n; s += split_size) lens.push_back(std::min(split_size, n - s));
      check_pieces(native::split(base_, split_size, d), lens);
    }

    std::vector<int64_t> sizes_list;
    for (int64_t left = n; left > 0;) {
      int64_t s = uniform(0, left);
      sizes_list.push_back(s);
      left -= s;
    }
    sizes_list.push_back(0);
    check_pieces(native::split_with_sizes(base_, sizes_list, d), sizes_list);

    int64_t chunks = uniform(1, 8);
    if (n > 0) {
      int64_t each = (n + chunks - 1) / chunks;
      std::vector<int64_t> lens;
      for (int64_t s = 0; s < n; s += each) lens.push_back(std::min(each, n - s));
      check_pieces(native::chunk(base_, chunks, d), lens);
    } else {
      check_pieces(native::chunk(base_, chunks, d), std::vector<int64_t>(chunks, 0));
    }
  }
}

TEST_F(RandomViews, AliasDetachVariableData) {
  for (int trial = 0; trial < 50; ++trial) {
    make_base();
    auto same = [&](const Index& idx) { return idx; };
    expect_view(native::alias(base_), base_.sizes(), same);

    for (const Tensor& t : {native::detach(base_), native::variable_data(base_)}) {
      EXPECT_EQ(t.sizes().vec(), base_.sizes().vec());
      EXPECT_EQ(t.strides().vec(), base_.strides().vec());
      EXPECT_EQ(t.storage_offset(), base_.storage_offset());
      EXPECT_TRUE(t.is_alias_of(base_));
      EXPECT_FALSE(t.is_view());
      EXPECT_FALSE(t.is_same(base_));
    }
    EXPECT_TRUE(native::detach(base_).version_counter().is_same(base_.version_counter()));
    EXPECT_FALSE(native::variable_data(base_).version_counter().is_same(base_.version_counter()));
  }
}

// Views of views record the root base, and compose like the index arithmetic says.
TEST_F(RandomViews, ChainsOfViews) {
  for (int trial = 0; trial < kTrials; ++trial) {
    make_base(2, 4, 5);
    Tensor v = native::transpose(base_, 0, 1);
    Tensor w = native::slice(v, 0, 1, std::nullopt, 2);
    Tensor x = native::unsqueeze(w, 0);
    EXPECT_TRUE(x.base().is_same(storage_));
    if (w.size(0) == 0) continue;
    Tensor y = native::select(x, 1, 0);
    DimVector sizes(base_.sizes());
    std::swap(sizes[0], sizes[1]);
    sizes.erase(0);
    sizes.insert(0, 1);
    expect_view(y, sizes, [&](const Index& idx) {
      Index b = idx;  // [0 (unsqueezed), rest of v's dims after dim 0]
      b.erase(b.begin());
      // v index = [1 + 0 * 2, idx...]; base index swaps v's first two dims.
      b.insert(b.begin(), 1);
      std::swap(b[0], b[1]);
      return b;
    });
  }
}

// Hand-checked cases against PyTorch 1.13's strides and offsets.
TEST(Views, MatchPyTorchGeometry) {
  Tensor x = empty({3, 4});
  Tensor d1 = native::diagonal(x, 1);
  EXPECT_EQ(d1.sizes().vec(), std::vector<int64_t>({3}));
  EXPECT_EQ(d1.strides().vec(), std::vector<int64_t>({5}));
  EXPECT_EQ(d1.storage_offset(), 1);
  Tensor dm1 = native::diagonal(x, -1);
  EXPECT_EQ(dm1.sizes().vec(), std::vector<int64_t>({2}));
  EXPECT_EQ(dm1.storage_offset(), 4);
  EXPECT_EQ(native::diagonal(x, 5).storage_offset(), 0);  // empty: offset not applied

  EXPECT_EQ(native::expand(empty({3}), {1, 3}).strides().vec(), std::vector<int64_t>({3, 1}));
  EXPECT_EQ(native::expand(empty({4, 1}), {2, 4, 3}).strides().vec(),
            std::vector<int64_t>({0, 1, 0}));
  EXPECT_EQ(native::unsqueeze(empty({3}), 0).strides().vec(), std::vector<int64_t>({3, 1}));
  EXPECT_EQ(native::unsqueeze(empty({3}), 1).strides().vec(), std::vector<int64_t>({1, 1}));
  EXPECT_EQ(
      native::unsqueeze(native::slice(x, 1, std::nullopt, std::nullopt, 2), 1).strides().vec(),
      std::vector<int64_t>({4, 4, 2}));
  EXPECT_EQ(native::unsqueeze(empty({0, 3}), 0).strides().vec(), std::vector<int64_t>({0, 3, 1}));
  Tensor empty_slice = native::slice(x, 1, 5, 2);
  EXPECT_EQ(empty_slice.sizes().vec(), std::vector<int64_t>({3, 0}));
  EXPECT_EQ(empty_slice.storage_offset(), 4);
  EXPECT_EQ(native::narrow(x, 0, -1, 1).storage_offset(), 8);
  EXPECT_EQ(native::narrow(x, 1, 4, 0).sizes().vec(), std::vector<int64_t>({3, 0}));
  EXPECT_EQ(native::squeeze(empty({2, 3, 1, 4})).strides().vec(), std::vector<int64_t>({12, 4, 1}));
  EXPECT_EQ(native::squeeze(empty({1})).dim(), 0);
  Tensor s = scalar_tensor(2.0);
  EXPECT_EQ(native::flatten(s).sizes().vec(), std::vector<int64_t>({1}));
  EXPECT_TRUE(native::flatten(s).is_view());
  EXPECT_EQ(native::squeeze(s, 0).dim(), 0);
  EXPECT_EQ(native::t(empty({3})).strides().vec(), std::vector<int64_t>({1}));
  // chunk sizes as PyTorch: 5 rows in 4 chunks -> [2, 2, 1]; 6 rows in 4 -> [2, 2, 2].
  EXPECT_EQ(native::chunk(empty({5, 3}), 4).size(), 3u);
  EXPECT_EQ(native::chunk(empty({6, 3}), 4).size(), 3u);
  EXPECT_EQ(native::chunk(empty({0, 3}), 3).size(), 3u);
  EXPECT_EQ(native::split(empty({0, 3}), 2).size(), 1u);
}

}  // namespace
}  // namespace mutagrad
