// Aliasing: a write through any view is seen by the base and by every other view, and all of
// them share one version counter; detach() shares it, variable_data() and copies do not.
// (Writes here go through data_ptr; versions are bumped by hand as an in-place op would.)
#include <gtest/gtest.h>

#include <vector>

#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tensor/tensor.h"

namespace mutagrad {
namespace {

// x = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] as float64.
Tensor make_base() {
  Tensor x = empty({3, 4}, kFloat64);
  double* p = x.data_ptr<double>();
  for (int i = 0; i < 12; ++i) p[i] = i;
  return x;
}

double at(const Tensor& t, std::vector<int64_t> idx) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.stride(static_cast<int64_t>(d));
  return t.data_ptr<double>()[off];
}

void set(const Tensor& t, std::vector<int64_t> idx, double v) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.stride(static_cast<int64_t>(d));
  t.data_ptr<double>()[off] = v;
}

std::vector<Tensor> views_of(const Tensor& x) {
  return {
      native::select(x, 0, 1),                             // row 1
      native::slice(x, 1, 1, 3),                           // cols 1..2
      native::transpose(x, 0, 1),                          // x.t()
      native::view(x, {12}),                               // flat
      native::diagonal(x),                                 // (0,0), (1,1), (2,2)
      native::expand(native::unsqueeze(x, 0), {2, 3, 4}),  // broadcast copy of x
      native::alias(x),
      native::narrow(x, 0, 1, 2),
      native::as_strided(x, {2, 2}, {4, 1}, 5),  // x[1:3, 1:3]
  };
}

TEST(Aliasing, WriteThroughViewIsSeenByBaseAndOtherViews) {
  Tensor x = make_base();
  std::vector<Tensor> views = views_of(x);
  // Write x[1][1] = 100 through the row view; every view covering it sees 100.
  set(views[0], {1}, 100.0);
  EXPECT_EQ(at(x, {1, 1}), 100.0);
  EXPECT_EQ(at(views[1], {1, 0}), 100.0);
  EXPECT_EQ(at(views[2], {1, 1}), 100.0);
  EXPECT_EQ(at(views[3], {5}), 100.0);
  EXPECT_EQ(at(views[4], {1}), 100.0);
  EXPECT_EQ(at(views[5], {0, 1, 1}), 100.0);
  EXPECT_EQ(at(views[5], {1, 1, 1}), 100.0);
  EXPECT_EQ(at(views[6], {1, 1}), 100.0);
  EXPECT_EQ(at(views[7], {0, 1}), 100.0);
  EXPECT_EQ(at(views[8], {0, 0}), 100.0);

  // And a write through the transposed view reaches the base at the swapped index.
  set(views[2], {3, 2}, -1.0);
  EXPECT_EQ(at(x, {2, 3}), -1.0);
  EXPECT_EQ(at(views[3], {11}), -1.0);
}

TEST(Aliasing, AllViewsShareOneVersionCounter) {
  Tensor x = make_base();
  std::vector<Tensor> views = views_of(x);
  for (const Tensor& v : views) {
    EXPECT_TRUE(v.version_counter().is_same(x.version_counter()));
    EXPECT_TRUE(v.is_alias_of(x));
    EXPECT_TRUE(v.is_view());
    EXPECT_TRUE(v.base().is_same(x));
  }
  EXPECT_EQ(x.version(), 0u);
  // A write through views[3] bumps the shared counter once: every alias reads the new version.
  views[3].version_counter().bump({"fill_", __FILE__, __LINE__});
  for (const Tensor& v : views) EXPECT_EQ(v.version(), 1u);
  EXPECT_EQ(x.version(), 1u);
  x.version_counter().bump({"add_", __FILE__, __LINE__});
  EXPECT_EQ(views[0].version(), 2u);
  const std::optional<MutationSite> site = views[8].version_counter().site_of_bump(0);
  ASSERT_TRUE(site.has_value());
  EXPECT_STREQ(site->op, "fill_");
}

TEST(Aliasing, ViewOfViewRecordsRootBase) {
  Tensor x = make_base();
  Tensor row = native::select(x, 0, 2);
  Tensor part = native::slice(row, 0, 1, 3);
  Tensor elem = native::select(part, 0, 0);
  EXPECT_TRUE(part.base().is_same(x));
  EXPECT_TRUE(elem.base().is_same(x));
  EXPECT_EQ(elem.dim(), 0);
  EXPECT_EQ(elem.item<double>(), 9.0);
  set(elem, {}, 42.0);
  EXPECT_EQ(at(x, {2, 1}), 42.0);
  EXPECT_TRUE(elem.version_counter().is_same(x.version_counter()));
  EXPECT_FALSE(x.is_view());
}

TEST(Aliasing, MultiOutputViewsAlias) {
  Tensor x = make_base();
  std::vector<Tensor> rows = native::unbind(x, 0);
  std::vector<Tensor> cols = native::split(x, 3, 1);  // [3, 3] and [3, 1]
  std::vector<Tensor> chunks = native::chunk(x, 2, 0);
  set(rows[2], {3}, 7.5);
  EXPECT_EQ(at(x, {2, 3}), 7.5);
  EXPECT_EQ(at(cols[1], {2, 0}), 7.5);
  EXPECT_EQ(at(chunks[1], {0, 3}), 7.5);
  for (const auto* group : {&rows, &cols, &chunks}) {
    for (const Tensor& t : *group) {
      EXPECT_TRUE(t.version_counter().is_same(x.version_counter()));
      EXPECT_TRUE(t.base().is_same(x));
    }
  }
}

TEST(Aliasing, DetachSharesStorageAndVersionCounter) {
  Tensor x = make_base();
  Tensor d = native::detach(x);
  EXPECT_TRUE(d.is_alias_of(x));
  EXPECT_TRUE(d.version_counter().is_same(x.version_counter()));
  EXPECT_FALSE(d.is_view());
  EXPECT_EQ(d.unsafe_impl()->autograd_meta(), nullptr);
  set(d, {0, 0}, 5.0);
  EXPECT_EQ(at(x, {0, 0}), 5.0);
  d.version_counter().bump({"mul_", __FILE__, __LINE__});
  EXPECT_EQ(x.version(), 1u);
  // A view of a detached tensor still shares the one counter.
  EXPECT_TRUE(native::select(d, 0, 0).version_counter().is_same(x.version_counter()));
}

TEST(Aliasing, VariableDataHasItsOwnVersionCounter) {
  Tensor x = make_base();
  Tensor data = native::variable_data(x);
  EXPECT_TRUE(data.is_alias_of(x));
  EXPECT_FALSE(data.version_counter().is_same(x.version_counter()));
  EXPECT_FALSE(data.is_view());
  set(data, {2, 2}, -3.0);
  EXPECT_EQ(at(x, {2, 2}), -3.0);  // the write is visible...
  data.version_counter().bump({"fill_", __FILE__, __LINE__});
  EXPECT_EQ(data.version(), 1u);
  EXPECT_EQ(x.version(), 0u);  // ...but not tracked by x's counter
  // Views of variable_data share its counter, not x's.
  Tensor v = native::select(data, 0, 0);
  EXPECT_TRUE(v.version_counter().is_same(data.version_counter()));
  EXPECT_FALSE(v.version_counter().is_same(x.version_counter()));
}

TEST(Aliasing, ReshapeCopyDoesNotAlias) {
  Tensor x = make_base();
  Tensor xt = native::transpose(x, 0, 1);
  Tensor flat = native::reshape(xt, {12});  // not viewable: a copy
  EXPECT_FALSE(flat.is_alias_of(x));
  EXPECT_FALSE(flat.version_counter().is_same(x.version_counter()));
  EXPECT_EQ(at(flat, {1}), 4.0);  // xt's row-major order: x[0][0], x[1][0], ...
  set(flat, {0}, 99.0);
  EXPECT_EQ(at(x, {0, 0}), 0.0);

  Tensor same = native::reshape(x, {2, 6});  // viewable: a view
  EXPECT_TRUE(same.is_alias_of(x));
  EXPECT_TRUE(same.version_counter().is_same(x.version_counter()));
}

TEST(Aliasing, FactoriesOwnFreshStorageAndCounters) {
  Tensor a = zeros({2, 2});
  Tensor b = zeros({2, 2});
  EXPECT_FALSE(a.is_alias_of(b));
  EXPECT_FALSE(a.version_counter().is_same(b.version_counter()));
  EXPECT_FALSE(a.is_view());
  Tensor copy = a;  // a handle copy: the same TensorImpl
  EXPECT_TRUE(copy.is_same(a));
}

}  // namespace
}  // namespace mutagrad
