// add/sub with alpha, addcmul and lerp on float32/float64 round each multiply-add once, as
// torch's kernels do (Note [Torch's fused multiply-adds] in tensor/native/fma.h): every op, in
// place and not, on every layout, against std::fma element by element; on the CPU under every
// kernel build the machine runs, and (as :fma_ops_test_cuda) on the CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/cpu/vec_kernels.h"
#include "tests/autograd/grad_test_util.h"
#include "tests/tensor/fma_reference.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::check_grads;
using testing_util::dev;
using testing_util::leaf;
using testing_util::test_device;

// Values over 2^-12 .. 2^12 of both signs, so that products and sums round in every way, with
// edge values in some positions: zeros of both signs, infinities, NaN, the dtype's smallest
// subnormal.
Tensor values_of(IntArrayRef sizes, ScalarType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  const double tiny = dtype == kFloat32 ? std::numeric_limits<float>::denorm_min()
                                        : std::numeric_limits<double>::denorm_min();
  const double edges[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, tiny, -tiny};
  std::vector<double> v(static_cast<size_t>(compute_numel(sizes)));
  for (size_t i = 0; i < v.size(); ++i) {
    const int e = static_cast<int>(rng() % 25) - 12;
    v[i] = (rng() % 2 ? 1.0 : -1.0) * std::ldexp(mantissa(rng), e);
    if (i % 23 == 5) v[i] = edges[(i / 23) % std::size(edges)];
  }
  return dev(from_vector<double>(v, DimVector(sizes)).to(dtype));
}

std::vector<double> host_values(const Tensor& t) {
  const Tensor c = testing_device::host_copy(t).to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// Element by element: `got` against formula(x[i], y[i], z[i]) computed in T from operands of
// `shape` expanded from their own shapes; true when every element has the reference's bits.
template <typename T>
::testing::AssertionResult all_equal(const Tensor& got, const Tensor& x, const Tensor& y,
                                     const Tensor& z, const std::function<T(T, T, T)>& formula) {
  const IntArrayRef shape = got.sizes();
  const std::vector<double> g = host_values(got);
  const std::vector<double> xv = host_values(x.expand(shape));
  const std::vector<double> yv = host_values(y.expand(shape));
  const std::vector<double> zv = z.defined() ? host_values(z.expand(shape)) : yv;
  for (size_t i = 0; i < g.size(); ++i) {
    const T want = formula(static_cast<T>(xv[i]), static_cast<T>(yv[i]), static_cast<T>(zv[i]));
    const bool same = static_cast<T>(g[i]) == want && std::signbit(g[i]) == std::signbit(want);
    if (!(same || (std::isnan(g[i]) && std::isnan(want)))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << g[i] << ", want " << static_cast<double>(want)
             << " (x " << xv[i] << ", y " << yv[i] << ", z " << zv[i] << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// The operand layouts: y (and z) as given, transposed views, a broadcast row and a broadcast
// number; x (the written tensor) contiguous or a strided view.
struct Layout {
  const char* name;
  std::function<Tensor(const Tensor&)> x, y;
};

std::vector<Layout> layouts() {
  const auto same = [](const Tensor& t) { return t; };
  const auto transposed = [](const Tensor& t) { return t.t().contiguous().t(); };
  return {{"contiguous", same, same},
          {"strided", transposed, transposed},
          {"row", same, [](const Tensor& t) { return t.select(0, 1).unsqueeze(0); }},
          {"number", same, [](const Tensor& t) { return t.select(0, 2).select(0, 3).view({1}); }},
          {"strided x, contiguous y", transposed, same}};
}

// Each capability this CPU runs (the CPU's kernels are built three ways); once on the CUDA
// device.
std::vector<cpu::CpuCapability> capabilities() {
  if (!test_device().is_cpu()) return {cpu::cpu_capability()};
  std::vector<cpu::CpuCapability> out;
  for (cpu::CpuCapability c : cpu::kCpuCapabilities) {
    if (cpu::cpu_capability_runs(c)) out.push_back(c);
  }
  return out;
}

template <typename T>
void check_every_op(ScalarType dtype) {
  const cpu::CpuCapability saved = cpu::cpu_capability();
  int differs_from_two_roundings = 0;
  for (cpu::CpuCapability c : capabilities()) {
    cpu::set_cpu_capability(c);
    for (const Layout& l : layouts()) {
      SCOPED_TRACE(std::string(cpu::cpu_capability_name(c)) + ", " + l.name + ", " +
                   dtype_name(dtype));
      // 67 x 40: runs longer and shorter than every build's vectors, over two threads.
      const Tensor x = l.x(values_of({67, 40}, dtype, 1));
      const Tensor y = l.y(values_of({67, 40}, dtype, 2));
      const Tensor z = l.y(values_of({67, 40}, dtype, 3));
      const Tensor w = l.y(values_of({67, 40}, dtype, 4) * 0.001);  // weights on both sides
      const std::vector<double> xs = host_values(x), ys = host_values(y.expand(x.sizes()));
      for (const double a : {0.3, -1.7, 1e-3}) {
        const T at = static_cast<T>(a);
        const auto axpy = [at](T p, T q, T) { return fma_reference::axpy<T>(p, q, at); };
        const auto minus = [at](T p, T q, T) { return fma_reference::axpy<T>(p, q, -at); };
        EXPECT_TRUE(all_equal<T>(add(x, y, a), x, y, Tensor(), axpy));
        EXPECT_TRUE(all_equal<T>(sub(x, y, a), x, y, Tensor(), minus));
        Tensor in_place = l.x(x.clone());  // the layout of x, from a copy
        in_place.add_(y, a);
        EXPECT_TRUE(all_equal<T>(in_place, x, y, Tensor(), axpy));
        in_place = l.x(x.clone());  // the layout of x, from a copy
        in_place.sub_(y, a);
        EXPECT_TRUE(all_equal<T>(in_place, x, y, Tensor(), minus));
        // A number as other: converted to the dtype, then one FMA (torch's wrapped number).
        const T two_and_a_half = static_cast<T>(2.5), one_tenth = static_cast<T>(0.1);
        EXPECT_TRUE(all_equal<T>(add(x, 2.5, a), x, x, Tensor(), [&](T p, T, T) {
          return fma_reference::axpy<T>(p, two_and_a_half, at);
        }));
        EXPECT_TRUE(all_equal<T>(rsub(x, 0.1, a), x, x, Tensor(), [&](T p, T, T) {
          return fma_reference::axpy<T>(one_tenth, p, -at);
        }));
        const auto addcmul_ref = [at](T p, T q, T r) {
          return fma_reference::addcmul<T>(p, q, r, at);
        };
        EXPECT_TRUE(all_equal<T>(addcmul(x, y, z, a), x, y, z, addcmul_ref));
        in_place = l.x(x.clone());
        in_place.addcmul_(y, z, a);
        EXPECT_TRUE(all_equal<T>(in_place, x, y, z, addcmul_ref));
        for (size_t i = 0; i < xs.size(); ++i) {  // does the test tell an FMA from two roundings?
          const T p = static_cast<T>(xs[i]), q = static_cast<T>(ys[i]);
          const T once = fma_reference::axpy<T>(p, q, at), twice = p + at * q;
          differs_from_two_roundings += std::isfinite(once) && once != twice;
        }
      }
      for (const double weight : {0.3, 0.7, -0.2, 1.5, 0.5}) {
        const T wt = static_cast<T>(weight);
        const auto lerp_ref = [wt](T p, T q, T) { return fma_reference::lerp<T>(p, q, wt); };
        EXPECT_TRUE(all_equal<T>(lerp(x, y, weight), x, y, Tensor(), lerp_ref));
        Tensor in_place = l.x(x.clone());
        in_place.lerp_(y, weight);
        EXPECT_TRUE(all_equal<T>(in_place, x, y, Tensor(), lerp_ref));
      }
      const auto lerp_tensor = [](T p, T q, T r) { return fma_reference::lerp<T>(p, q, r); };
      EXPECT_TRUE(all_equal<T>(lerp(x, y, w), x, y, w, lerp_tensor));
      Tensor in_place = l.x(x.clone());
      in_place.lerp_(y, w);
      EXPECT_TRUE(all_equal<T>(in_place, x, y, w, lerp_tensor));
      // The same elements as operand and result: each is read before it is written.
      Tensor self = x.clone();
      self.add_(self, 0.3);
      EXPECT_TRUE(all_equal<T>(self, x, x, Tensor(), [](T p, T q, T) {
        return fma_reference::axpy<T>(p, q, static_cast<T>(0.3));
      }));
    }
  }
  cpu::set_cpu_capability(saved);
  EXPECT_GT(differs_from_two_roundings, 10);
}

TEST(FusedMultiplyAdds, EveryOpLayoutAndBuildRoundsOnce) {
  check_every_op<float>(kFloat32);
  check_every_op<double>(kFloat64);
}

// Hand-derived: x = 1 + 2^-23, alpha = 1 + 2^-15, y = 2^-24 (1 - 2^-15). alpha * y =
// 2^-24 (1 - 2^-30) exactly, so x + alpha * y lies just below the midpoint 1 + 2^-23 + 2^-24 of
// x and its float successor: the FMA rounds down to x. Rounded to double first, the sum is that
// midpoint, and then to float it ties to even, 1 + 2^-22 (our float32 add_ before); two float
// roundings (alpha * y to 2^-24, then the sum) tie the same way. float64 the same, scaled:
// x = 1 + 2^-52, alpha = 1 + 2^-30, y = 2^-53 (1 - 2^-30).
TEST(FusedMultiplyAdds, TheMidpointCaseRoundsOnce) {
  struct Case {
    ScalarType dtype;
    double x, alpha, y, fma, twice;
  };
  for (const Case& k : {Case{kFloat32, 1 + std::ldexp(1, -23), 1 + std::ldexp(1, -15),
                             std::ldexp(1 - std::ldexp(1, -15), -24), 1 + std::ldexp(1, -23),
                             1 + std::ldexp(1, -22)},
                        Case{kFloat64, 1 + std::ldexp(1, -52), 1 + std::ldexp(1, -30),
                             std::ldexp(1 - std::ldexp(1, -30), -53), 1 + std::ldexp(1, -52),
                             1 + std::ldexp(1, -51)}}) {
    SCOPED_TRACE(dtype_name(k.dtype));
    const Tensor x = dev(full({37}, k.x, k.dtype));
    const Tensor y = dev(full({37}, k.y, k.dtype));
    const Tensor alpha = dev(full({37}, k.alpha, k.dtype));
    Tensor in_place = x.clone();
    in_place.add_(y, k.alpha);
    Tensor via_addcmul = x.clone();
    via_addcmul.addcmul_(alpha, y, 1.0);
    for (const Tensor& r : {add(x, y, k.alpha), sub(x, -y, k.alpha), in_place,
                            addcmul(x, alpha, y, 1.0), via_addcmul}) {
      for (double v : host_values(r)) {
        EXPECT_EQ(v, k.fma);
        EXPECT_NE(v, k.twice);
      }
    }
  }
}

TEST(FusedMultiplyAdds, WritesBumpOnceAndRefusedOnesChangeNothing) {
  const Tensor y = values_of({6, 5}, kFloat32, 7);
  Tensor x = values_of({6, 5}, kFloat32, 8);
  const std::vector<std::pair<const char*, std::function<void()>>> writes = {
      {"add_", [&] { x.add_(y, 0.5); }},
      {"sub_", [&] { x.sub_(y.select(0, 0), 0.5); }},  // broadcast: the general path
      {"addcmul_", [&] { x.addcmul_(y, y, 2.0); }},
      {"lerp_", [&] { x.lerp_(y, 0.25); }},
      {"lerp_", [&] { x.lerp_(y.t().contiguous().t(), y); }}};
  for (const auto& [op, write] : writes) {
    const uint64_t before = x.version();
    write();
    EXPECT_EQ(x.version(), before + 1) << op;
    EXPECT_STREQ(x.version_counter().site_of_bump(x.version() - 1)->op, op);
  }
  // Refused: a leaf that requires grad, a shape the write cannot take, a bool subtrahend.
  Tensor a = leaf({4}, 6);
  const Tensor kept = a.detach().clone();
  EXPECT_THROW(a.add_(leaf({4}, 7).detach(), 2.0), Error);
  EXPECT_THROW(a.detach().add_(leaf({2, 4}, 7).detach(), 2.0), Error);
  EXPECT_THROW(a.detach().sub_(dev(ones({4}, TensorOptions(kBool))), 2.0), DTypeError);
  EXPECT_THROW(sub(a.detach(), dev(ones({4}, TensorOptions(kBool))), 2.0), DTypeError);
  EXPECT_EQ(a.version(), 0u);
  EXPECT_EQ(host_values(a.detach()), host_values(kept));
  // Refused by the in-place kernel's own checks: an expanded tensor (several elements share a
  // location), a float32 weight or alpha the dtype cannot hold.
  Tensor row = values_of({1, 5}, kFloat32, 9);
  Tensor expanded = row.expand({6, 5});
  const std::vector<double> row_before = host_values(row);
  EXPECT_THROW(expanded.add_(y, 2.0), ValueError);
  EXPECT_THROW(expanded.lerp_(y, 0.5), ValueError);
  Tensor f = values_of({6, 5}, kFloat32, 10);
  const std::vector<double> f_before = host_values(f);
  EXPECT_THROW(f.lerp_(y, 1e39), ValueError);
  EXPECT_THROW(f.lerp_(y.select(0, 0), 1e39), ValueError);  // broadcast: the general path
  EXPECT_THROW(lerp(f, y, 1e39), ValueError);
  EXPECT_THROW(f.add_(y, 1e39), ValueError);
  EXPECT_EQ(row.version(), 0u);
  EXPECT_EQ(f.version(), 0u);
  EXPECT_EQ(host_values(row), row_before);
  EXPECT_EQ(host_values(f), f_before);
}

// Operands that are self, or overlap it partly: each element reads the old values (torch's
// result for the same elements; a partial overlap is read before the write).
TEST(FusedMultiplyAdds, OperandsAliasingSelf) {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x0 = values_of({5, 8}, dt, 11), y = values_of({5, 8}, dt, 12);
    const auto check = [&](const std::function<void(Tensor&)>& write, const Tensor& want) {
      Tensor x = x0.clone();
      write(x);
      EXPECT_EQ(x.version(), 1u);
      const std::vector<double> got = host_values(x), expected = host_values(want);
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(got[i] == expected[i] || (std::isnan(got[i]) && std::isnan(expected[i])))
            << i << ": " << got[i] << " vs " << expected[i];
      }
    };
    check([&](Tensor& x) { x.addcmul_(x, y, 0.7); }, addcmul(x0, x0, y, 0.7));
    check([&](Tensor& x) { x.addcmul_(y, x, 0.7); }, addcmul(x0, y, x0, 0.7));
    check([&](Tensor& x) { x.lerp_(y, x); }, lerp(x0, y, x0));
    check([&](Tensor& x) { x.lerp_(x, 0.3); }, lerp(x0, x0, 0.3));
    // x[1:] += 0.3 * x[:-1] along dim 0: the old rows, not the ones just written.
    const Tensor shifted = add(x0.slice(0, 1, 5), x0.slice(0, 0, 4), 0.3);
    check([&](Tensor& x) { x.slice(0, 1, 5).add_(x.slice(0, 0, 4), 0.3); },
          cat({x0.slice(0, 0, 1), shifted}, 0));
  }
}

TEST(FusedMultiplyAdds, EmptyAndZeroDim) {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const Tensor e = dev(zeros({0, 3}, TensorOptions(dt)));
    EXPECT_EQ(add(e, e, 2.0).sizes(), e.sizes());
    EXPECT_EQ(addcmul(e, e, e, 2.0).numel(), 0);
    EXPECT_EQ(lerp(e, e, 0.7).numel(), 0);
    Tensor written = e.clone();
    written.add_(e, 3.0);
    EXPECT_EQ(written.version(), 1u);  // an empty write still counts
    const Tensor x = dev(full({}, 1.5, dt)), y = dev(full({}, -0.25, dt));
    EXPECT_EQ(add(x, y, 3.0).item<double>(), 0.75);  // exact: 1.5 - 0.75
    Tensor z = x.clone();
    z.lerp_(y, 0.5);
    EXPECT_EQ(z.item<double>(), 0.625);
    EXPECT_EQ(z.dim(), 0);
  }
}

TEST(FusedMultiplyAdds, Gradients) {
  const Tensor a = leaf({3, 4}, 9), b = leaf({3, 4}, 10), c = leaf({3, 4}, 11);
  const Tensor w = leaf({3, 4}, 12, 0.0, 1.0);
  check_grads([](const VariableList& in) { return add(in[0], in[1], -2.5); }, {a, b});
  check_grads([](const VariableList& in) { return in[0].clone().sub_(in[1], 0.7); }, {a, b});
  check_grads([](const VariableList& in) { return addcmul(in[0], in[1], in[2], 0.3); }, {a, b, c});
  check_grads([](const VariableList& in) { return in[0].clone().lerp_(in[1], 0.7); }, {a, b});
  check_grads([](const VariableList& in) { return in[0].clone().lerp_(in[1], in[2]); }, {a, b, w});
}

}  // namespace
}  // namespace mutagrad
