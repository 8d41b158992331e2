// Quickstart: tensors, views and aliasing, the version counter every alias shares, why
// autograd cares about it, indexing reads and writes (section 10), and how autograd handles
// writes into tensors it needs (section 11).
//
//   ./bazelw run //examples:quickstart
//
// Each step prints what it does and what it shows.
#include <iostream>
#include <string>

#include "mutagrad.h"

using namespace mutagrad;

namespace {

void section(const std::string& title) { std::cout << "\n== " << title << " ==\n"; }

void show_version(const char* name, const Tensor& t) {
  std::cout << "  " << name << ".version() = " << t.version() << "\n";
}

}  // namespace

int main() {
  std::cout << std::boolalpha;

  section("1. Tensors");
  Tensor x = arange(6, kFloat32).view({2, 3});
  std::cout << "x = arange(6, kFloat32).view({2, 3})\n" << x << "\n";
  std::cout << "x.sizes() = " << x.sizes() << ", x.strides() = " << x.strides() << ", dtype "
            << x.dtype() << "\n";
  std::cout << "tensor({{1, 2}, {3, 4}}) = " << tensor({{1, 2}, {3, 4}})
            << "  (int64: the default integer dtype is not shown)\n";
  std::cout << "full({3}, 0.5, kFloat64) = " << full({3}, 0.5, kFloat64) << "\n";
  Generator gen(0);
  std::cout << "randn({2, 2}, gen) = " << randn({2, 2}, gen) << "  (seeded: the same every run)\n";

  section("2. Views share storage: no data is copied");
  Tensor row = x.select(0, 1);                              // x[1]
  Tensor col = x.select(1, 2);                              // x[:, 2]
  Tensor xt = x.t();                                        // x.T
  Tensor evens = x.view({6}).slice(0, 0, std::nullopt, 2);  // x.view(6)[::2]
  std::cout << "row = x.select(0, 1)  -> " << row << "  storage_offset " << row.storage_offset()
            << "\n";
  std::cout << "col = x.select(1, 2)  -> " << col << "  strides " << col.strides() << "\n";
  std::cout << "xt  = x.t()           -> strides " << xt.strides()
            << ", contiguous: " << xt.is_contiguous() << "\n";
  std::cout << "evens = x.view({6}).slice(0, 0, nullopt, 2) -> " << evens << "\n";
  std::cout << "row.is_view(): " << row.is_view() << ", row aliases x: " << row.is_alias_of(x)
            << ", same version counter as x: " << row.version_counter().is_same(x.version_counter())
            << "\n";
  // x is itself a view of the arange it came from; every view records that root as base().
  std::cout << "row.base() is x.base() (the root, arange(6)): " << row.base().is_same(x.base())
            << "\n";

  section("3. A write through a view is seen by every alias");
  show_version("x", x);
  row.fill_(7);  // x[1] = 7
  std::cout << "after row.fill_(7):\nx = " << x << "\n";
  std::cout << "col (another view) = " << col << "\n";
  show_version("x", x);
  show_version("row", row);
  show_version("xt", xt);

  section("4. Every in-place write bumps the one shared counter, and remembers where");
  // What autograd does when it saves x for backward: it remembers x's version.
  uint32_t saved_version = x.version();
  evens.fill_(-1);                          // x.view(6)[::2] = -1
  xt.select(0, 0).copy_(full({2}, 100.0));  // x[:, 0] = 100, written through the transpose
  std::cout << "x = " << x << "\n";
  show_version("x", x);
  for (uint32_t v = 0; v < x.version(); ++v) {
    const std::optional<MutationSite> site = x.version_counter().site_of_bump(v);
    std::cout << "  version " << v << " -> " << v + 1 << ": " << site->op << " at " << site->file
              << ":" << site->line << "\n";
  }
  const std::optional<MutationSite> first = x.version_counter().site_of_bump(saved_version);
  std::cout << "a tensor saved at version " << saved_version << " is stale now (x is at version "
            << x.version() << "); the first write after the save was " << first->op << " at line "
            << first->line << " (section 9 shows autograd reporting it)\n";

  section("5. reshape: a view when the strides allow it, a copy otherwise");
  Tensor flat = x.reshape({6});
  Tensor flat_t = xt.reshape({6});
  std::cout << "x.reshape({6}) aliases x: " << flat.is_alias_of(x) << "\n";
  std::cout << "x.t().reshape({6}) aliases x: " << flat_t.is_alias_of(x)
            << " (x.t() is not contiguous: a copy, with its own counter at version "
            << flat_t.version() << ")\n";
  try {
    xt.view({6});
  } catch (const ShapeError& e) {
    std::cout << "x.t().view({6}) throws ShapeError: " << e.what() << "\n";
  }

  section("6. detach() shares the counter; variable_data() (PyTorch's x.data) does not");
  uint32_t before = x.version();
  x.detach().select(0, 1).zero_();
  std::cout << "write through x.detach():        x.version() " << before << " -> " << x.version()
            << "\n";
  Tensor data = x.variable_data();
  before = x.version();
  data.select(0, 1).fill_(5);
  std::cout << "write through x.variable_data(): x.version() " << before << " -> " << x.version()
            << " (data.version() = " << data.version() << ")\n";
  std::cout << "yet the write is in x all the same: x = " << x << "\n";

  section("7. Expanded tensors repeat memory: writing into them is refused");
  Tensor b = full({3}, 1.0).unsqueeze(0).expand({4, 3});
  std::cout << "b = full({3}, 1.0).unsqueeze(0).expand({4, 3}): strides " << b.strides()
            << " (stride 0: the 4 rows are one row of memory)\n";
  try {
    b.fill_(2.0);
  } catch (const ValueError& e) {
    std::cout << "b.fill_(2.0) throws ValueError: " << e.what() << "\n";
  }
  std::cout << "b.version() is still " << b.version() << ": a failed op changes nothing\n";

  section("8. Errors say what was wrong and how to fix it");
  try {
    x.select(0, 5);
  } catch (const IndexError& e) {
    std::cout << "IndexError: " << e.what() << "\n";
  }
  try {
    x.expand({2, 4});
  } catch (const ShapeError& e) {
    std::cout << "ShapeError: " << e.what() << "\n";
  }

  section("9. Gradients, and a saved tensor made stale by an in-place write");
  Tensor w = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = w.sigmoid();  // SigmoidBackward0 saves its output y (at y's version 0)
  std::cout << "w = " << w << "\ny = w.sigmoid() = " << y << "\n";
  y.sum().backward();
  std::cout << "after y.sum().backward(): w.grad() = " << w.grad() << "  (sigmoid' = y(1-y))\n";
  Tensor z = w.sigmoid();
  Tensor loss = z.sum();
  z.mul_(2);  // bumps z's version: the output SigmoidBackward0 saved is stale
  try {
    loss.backward();
  } catch (const autograd::AutogradError& e) {
    std::cout << "loss.backward() throws AutogradError:\n  " << e.what() << "\n";
  }

  // A Hessian-vector product: double backward through the graph (HVP = grad of (grad . v)).
  Tensor p = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor v = tensor({1.0, 0.0, -1.0}, kFloat64);
  auto [f, hv] = autograd::hvp([](const Tensor& x) { return (x * x * x).sum(); }, p, v);
  std::cout << "f(p) = sum(p^3) = " << f << "\nhvp(f, p, v) = H v = 6 p * v = " << hv << "\n";

  section("10. Indexing: x[{...}] reads views or copies; each write bumps the version once");
  {
    using namespace mutagrad::indexing;  // Slice, None, Ellipsis
    Tensor m = arange(12, kFloat64).view({3, 4});
    Tensor row = m.index({1});                  // m[1]: a view of m
    Tensor picked = m.index({tensor({0, 2})});  // m[[0, 2]]: a copy (advanced index)
    std::cout << "m = " << m << "\nrow = m.index({1}) is a view: " << row.is_view()
              << "; picked = m.index({tensor({0, 2})}) is a copy: " << !picked.is_alias_of(m)
              << "\n";
    uint32_t v0 = m.version();
    m[{1, Slice(None, 2)}] = -1.0;  // Path A: a view of m, filled: one bump
    std::cout << "m[{1, Slice(None, 2)}] = -1.0 -> row (a view) sees it: " << row
              << "\n  m.version() " << v0 << " -> " << m.version() << ", and the bump names "
              << m.version_counter().site_of_bump(v0)->op << " at line "
              << m.version_counter().site_of_bump(v0)->line << "\n";
    std::cout << "picked (a copy) does not change: " << picked << "\n";
    m[{m > 8.0}] = 0.0;  // a mask with a scalar: one masked fill, one bump
    m[{Slice(), tensor({3, 3})}] = tensor({10.0, 20.0}, kFloat64);  // duplicates: the last wins
    std::cout << "after m[{m > 8.0}] = 0.0 and m[{Slice(), tensor({3, 3})}] = [10, 20]:\n  m = "
              << m
              << " (column 3 holds 20: the last of the duplicates), m.version() = " << m.version()
              << "\n";
    Tensor acc = zeros({3}, kFloat64);
    acc.index_put_({tensor({0, 0, 2})}, tensor({1.0, 2.0, 3.0}, kFloat64), /*accumulate=*/true);
    std::cout << "acc.index_put_({[0, 0, 2]}, [1, 2, 3], accumulate=true) -> " << acc
              << " (duplicates summed in index order, the same bits on any thread count)\n";
    uint32_t v1 = m.version();
    try {
      m[{tensor({0, 5})}] = 1.0;  // index 5 is out of range for 3 rows
    } catch (const IndexError& e) {
      std::cout << "m[{tensor({0, 5})}] = 1.0 throws IndexError: " << e.what()
                << "\n  nothing was written (row 0 is intact) and m.version() is still "
                << m.version() << " (was " << v1 << ")\n";
    }
    m[{Slice(1, None)}] = m.index({Slice(None, -1)});  // overlapping: as if the value were copied
    std::cout << "m[{Slice(1, None)}] = m.index({Slice(None, -1)}) shifts the rows down:\n  m = "
              << m << "\n";
  }

  section("11. Writes into tensors autograd needs: CopySlices, a caught mistake, kSnapshot");
  {
    using namespace mutagrad::indexing;
    // A write into a view of an intermediate is recorded: h's history is rebased onto
    // CopySlices, so the gradient flows to the written value, not to what it overwrote.
    Tensor a = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
    Tensor b = tensor({10.0}, kFloat64).requires_grad_();
    Tensor h = a * 2.0;
    h[{Slice(None, 1)}] = b * b;  // h = [b^2, 2 a1, 2 a2]
    std::cout << "h = a * 2; h[{Slice(None, 1)}] = b * b -> h = " << h
              << "\n  h.grad_fn() = " << h.grad_fn()->name() << "\n";
    (h * h).sum().backward();
    std::cout << "(h * h).sum().backward(): a.grad() = " << a.grad()
              << " (0 where overwritten, 8 a elsewhere), b.grad() = " << b.grad() << " (4 b^3)\n";

    // Writing into a tensor a node saved: MulBackward0 saved h2 (both operands of h2 * h2),
    // so the write below would make backward's formula wrong. Backward refuses, naming the
    // node, the write and its line.
    Tensor h2 = a * 2.0;
    Tensor loss = (h2 * h2).sum();
    h2[{0}] = 0.0;  // the unsafe write
    try {
      loss.backward();
    } catch (const autograd::AutogradError& e) {
      std::cout << "h2[{0}] = 0.0 after loss = (h2 * h2).sum(); loss.backward() throws:\n  "
                << e.what() << "\n";
    }

    // Under MutationPolicy::kSnapshot the saved value is copied just before the first write
    // that would make it stale: the write still reaches h3 and its aliases, and backward uses
    // the value h3 had when it was saved.
    a.set_grad(Tensor());
    MutationPolicyGuard policy(MutationPolicy::kSnapshot);
    Tensor h3 = a * 2.0;
    Tensor loss3 = (h3 * h3).sum();
    h3[{0}] = 0.0;
    loss3.backward();
    std::cout << "the same under MutationPolicyGuard(kSnapshot): h3 = " << h3
              << " (the write happened), a.grad() = " << a.grad()
              << " (8 a: the gradient at the saved values)\n";
  }
  return 0;
}
