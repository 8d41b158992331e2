// The autograd_program fuzz target (see targets.h and docs/reliability.md).
//
// Note [What the autograd fuzzer checks]
// The input decodes to 1-2 float64 leaves (requires_grad, 1-2 dims, values in
// [-1, 1]; at most 4 elements, which bounds the finite-difference replays) and up to 10 steps over
// a pool of tensors: smooth differentiable ops (exp, sin, tanh, sigmoid, mul, add, pow 2, sums),
// views of any pool entry (select, slice, transpose, unsqueeze, diagonal) and in-place writes
// through them (add_, mul_, copy_, exp_, tanh_, sigmoid_, fill_, set_item_). The loss is a weighted
// sum of every pool entry, so every node is reached in backward. Independently of the library, a
// model follows which storage each op saves (PyTorch's derivatives.yaml: exp/tanh/sigmoid and their
// in-place forms save their result, sin and pow their input, mul both operands; add, sums, views,
// copy_, fill_ and writes of scalars save nothing) and counts the writes to each storage. Then:
//  - a step the library refuses raises a mutagrad::Error and leaves the tensor's bytes and
//    version unchanged (the step is then left out of the program);
//  - backward raises the stale-tensor error (AutogradError, "modified by an inplace
//    operation") exactly when the model saw a write to a storage after a save of it;
//  - otherwise the leaves' gradients give the directional derivative that central finite
//    differences of the program (replayed in no-grad mode) give, along a fixed direction with
//    components of different sizes and signs (gradcheck's fast mode).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "indexing/indexing.h"
#include "tensor/native/factories.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/targets.h"

namespace mutagrad::fuzz {
namespace {

enum class Op : uint8_t {
  kExp,
  kSin,
  kTanh,
  kSigmoid,
  kMul,
  kAdd,
  kPow2,
  kSum,
  kSumDim,
  kView,
  kWrite,
  kCount
};

struct Step {
  Op op;
  int a, b;            // pool entries
  int64_t kind;        // which view / which write
  int64_t p1, p2, p3;  // view / write arguments
  double c;            // a scalar
  bool skipped = false;
};

struct Program {
  std::vector<std::vector<int64_t>> leaf_shapes;
  std::vector<std::vector<double>> leaf_values;
  std::vector<Step> steps;
};

Program decode(FuzzInput& in) {
  Program p;
  const int64_t nleaves = in.range(1, 2);
  for (int64_t i = 0; i < nleaves; ++i) {
    std::vector<int64_t> shape(in.range(1, 2));
    int64_t n = 1;
    for (int64_t& s : shape) n *= (s = in.range(1, shape.size() == 1 ? 3 : 2));
    std::vector<double> v(n);
    for (double& x : v) x = static_cast<double>(in.range(-100, 100)) / 100;
    p.leaf_shapes.push_back(shape);
    p.leaf_values.push_back(v);
  }
  const int64_t nsteps = in.range(1, 10);
  for (int64_t i = 0; i < nsteps; ++i) {
    Step s;
    s.op = static_cast<Op>(in.range(0, static_cast<int>(Op::kCount) - 1));
    s.a = static_cast<int>(in.range(0, 255));
    s.b = static_cast<int>(in.range(0, 255));
    s.kind = in.range(0, 7);
    s.p1 = in.range(-2, 3);
    s.p2 = in.range(-2, 3);
    s.p3 = in.range(1, 2);
    s.c = static_cast<double>(in.range(-4, 4)) / 2;
    p.steps.push_back(s);
  }
  return p;
}

// Which storage each pool entry lives in, writes per storage, and saves (storage, writes then).
struct Model {
  std::vector<const void*> storage_of;
  std::map<const void*, int> writes;
  std::vector<std::pair<const void*, int>> saves;
  void save(const Tensor& t) { saves.emplace_back(key(t), writes[key(t)]); }
  static const void* key(const Tensor& t) { return t.storage().data(); }
  bool stale() const {
    for (const auto& [k, w] : saves) {
      if (writes.at(k) != w) return true;
    }
    return false;
  }
};

// Applies step `s` to the pool; nullopt-like false if the library refused it (recording, in
// the grad run, that it did so with the strong guarantee). `model` is null in replays.
bool apply(Step& s, std::vector<Tensor>& pool, Model* model) {
  const Tensor a = pool[s.a % pool.size()];
  const Tensor b = pool[s.b % pool.size()];
  auto push = [&](Tensor t) { pool.push_back(std::move(t)); };
  switch (s.op) {
    case Op::kExp: {
      Tensor r = a.exp();
      if (model) model->save(r);
      push(r);
      return true;
    }
    case Op::kSin:
      if (model) model->save(a);
      push(a.sin());
      return true;
    case Op::kTanh: {
      Tensor r = a.tanh();
      if (model) model->save(r);
      push(r);
      return true;
    }
    case Op::kSigmoid: {
      Tensor r = a.sigmoid();
      if (model) model->save(r);
      push(r);
      return true;
    }
    case Op::kMul: {
      // b reduced to a 0-dim tensor unless the shapes match, so it always broadcasts.
      const Tensor rhs = b.sizes() == a.sizes() ? b : b.sum();
      Tensor r = a.mul(rhs);
      if (model) {
        model->save(a);
        model->save(rhs);
      }
      push(r);
      return true;
    }
    case Op::kAdd:
      push(a.add(b.sizes() == a.sizes() ? b : b.sum(), s.c));
      return true;
    case Op::kPow2:
      if (model) model->save(a);
      push(a.pow(2));
      return true;
    case Op::kSum:
      push(a.sum());
      return true;
    case Op::kSumDim:
      if (a.dim() == 0) return false;
      push(a.sum({static_cast<int64_t>((s.p1 + 8) % a.dim())}));
      return true;
    case Op::kView: {
      const int64_t nd = a.dim();
      if (nd == 0) return false;
      const int64_t d = (s.p1 + 8) % nd;
      switch (s.kind % 5) {
        case 0:
          if (a.size(d) == 0) return false;
          push(a.select(d, (s.p2 + 9) % a.size(d)));
          return true;
        case 1:
          push(a.slice(d, s.p2, std::nullopt, s.p3));
          return true;
        case 2:
          push(a.transpose(0, nd - 1));
          return true;
        case 3:
          push(a.unsqueeze(d));
          return true;
        default:
          if (nd < 2) return false;
          push(a.diagonal());
          return true;
      }
    }
    case Op::kWrite:
      break;
    case Op::kCount:
      return false;
  }
  // An in-place write through entry a (often a view of an intermediate).
  Tensor v = a;
  std::vector<uint8_t> before;
  uint32_t version = 0;
  if (model) {
    before = storage_bytes(v);
    version = v.version();
  }
  bool saves_result = false;
  try {
    switch (s.kind) {
      case 0:
        v.add_(b.sum(), s.c);
        break;
      case 1:
        v.mul_(Scalar(s.c));
        break;
      case 2:
        v.copy_(b.sizes() == v.sizes() ? b : b.sum());
        break;
      case 3:
        v.exp_();
        saves_result = true;
        break;
      case 4:
        v.tanh_();
        saves_result = true;
        break;
      case 5:
        v.sigmoid_();
        saves_result = true;
        break;
      case 6:
        v.fill_(Scalar(s.c));
        break;
      default:
        if (v.dim() == 0) return false;
        v.set_item_({indexing::Slice(s.p1, std::nullopt, s.p3)}, b.sum());
        break;
    }
  } catch (const InternalError& e) {
    fail(str("in-place write ", s.kind, ": InternalError: ", e.what()));
  } catch (const Error& e) {
    if (model) {
      FUZZ_CHECK(storage_bytes(v) == before, "write ", s.kind, " raised (", e.what(),
                 ") after writing");
      FUZZ_CHECK(v.version() == version, "write ", s.kind, " raised (", e.what(),
                 ") after bumping the version");
    }
    return false;
  }
  if (model) {
    FUZZ_CHECK(v.version() == version + 1, "write ", s.kind, " moved the version by ",
               v.version() - version);
    ++model->writes[Model::key(v)];
    if (saves_result) model->save(v);
  }
  return true;
}

// The program as text (MUTAGRAD_FUZZ_VERBOSE=1 prints it for each input).
std::string describe(const Program& p) {
  static const char* const kNames[] = {"exp",  "sin", "tanh",    "sigmoid", "mul",  "add",
                                       "pow2", "sum", "sum_dim", "view",    "write"};
  std::ostringstream os;
  for (size_t i = 0; i < p.leaf_shapes.size(); ++i) {
    os << "leaf " << i << " " << IntArrayRef(p.leaf_shapes[i]) << "\n";
  }
  for (const Step& s : p.steps) {
    os << kNames[static_cast<int>(s.op)] << " a=" << s.a << " b=" << s.b << " kind=" << s.kind
       << " p=" << s.p1 << "," << s.p2 << "," << s.p3 << " c=" << s.c
       << (s.skipped ? " (refused)" : "") << "\n";
  }
  return os.str();
}

std::vector<Tensor> make_leaves(const Program& p, bool requires_grad) {
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < p.leaf_shapes.size(); ++i) {
    Tensor t = from_vector(p.leaf_values[i], p.leaf_shapes[i]);
    if (requires_grad) t.requires_grad_(true);
    leaves.push_back(t);
  }
  return leaves;
}

// The weighted sum of every pool entry (weights 1, 0.5, -0.75, ...).
Tensor loss_of(const std::vector<Tensor>& pool) {
  Tensor loss;
  for (size_t k = 0; k < pool.size(); ++k) {
    const double w = 1.0 - 0.25 * static_cast<double>((k * 7) % 9);
    Tensor term = pool[k].sum().mul(scalar_tensor(w, kFloat64));
    loss = loss.defined() ? loss.add(term) : term;
  }
  return loss;
}

// The program's loss, replayed without autograd (skipped steps left out).
double replay(Program& p, const std::vector<std::vector<double>>& values) {
  NoGradGuard no_grad;
  Program q = p;
  q.leaf_values = values;
  std::vector<Tensor> pool = make_leaves(q, false);
  for (Step& s : q.steps) {
    if (s.skipped) continue;
    const bool ok = apply(s, pool, nullptr);
    FUZZ_CHECK(ok, "a step that succeeded with autograd failed in the no-grad replay");
  }
  return loss_of(pool).item<double>();
}

// Outcome counts, printed at exit when MUTAGRAD_FUZZ_STATS is set (to see that the fuzzer
// reaches both outcomes of backward and the writes).
struct Stats {
  long programs = 0, writes = 0, refused_writes = 0, stale = 0, checked = 0;
  ~Stats() {
    if (std::getenv("MUTAGRAD_FUZZ_STATS") == nullptr) return;
    std::fprintf(stderr,
                 "autograd_program: %ld programs, %ld writes (%ld refused), %ld stale backward, "
                 "%ld gradients checked\n",
                 programs, writes, refused_writes, stale, checked);
  }
};
Stats stats;

}  // namespace

void autograd_program(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  Program p = decode(in);
  std::vector<Tensor> leaves = make_leaves(p, true);
  std::vector<Tensor> pool = leaves;
  Model model;
  ++stats.programs;
  for (Step& s : p.steps) {
    try {
      s.skipped = !apply(s, pool, &model);
      if (s.op == Op::kWrite) ++(s.skipped ? stats.refused_writes : stats.writes);
    } catch (const InternalError& e) {
      fail(str("InternalError: ", e.what()));
    } catch (const Error& e) {
      s.skipped = true;  // a view op's argument out of range, a refused write, ...
    }
  }
  const Tensor loss = loss_of(pool);
  const bool stale = model.stale();
  if (std::getenv("MUTAGRAD_FUZZ_VERBOSE") != nullptr) {
    std::fprintf(stderr, "%s(pool of %zu, stale %d)\n", describe(p).c_str(), pool.size(), stale);
  }
  try {
    loss.backward();
  } catch (const autograd::AutogradError& e) {
    FUZZ_CHECK(stale, "backward raised but no saved tensor was written after its save: ", e.what());
    FUZZ_CHECK(std::strstr(e.what(), "modified by an inplace operation") != nullptr,
               "backward raised another AutogradError: ", e.what());
    ++stats.stale;
    return;
  } catch (const InternalError& e) {
    fail(str("backward: InternalError: ", e.what()));
  } catch (const Error& e) {
    fail(str("backward raised ", e.what()));
  }
  FUZZ_CHECK(!stale, "backward succeeded although a saved tensor was written after its save");
  // Finite differences see the loss only to its rounding error, which is relative to the
  // largest term (-0.5 * 2e236 + 0.5 * 2e236 is 0 with everything else lost): no reference
  // unless every term is moderate.
  double magnitude = 0;
  for (const Tensor& t : pool) magnitude += t.detach().abs().sum().item<double>();
  const double f0 = magnitude;
  if (!std::isfinite(magnitude) || magnitude > 1e6) return;
  // One directional derivative along u (as gradcheck's fast mode): sum(grad * u) against
  // (F(x + h u) - F(x - h u)) / 2h; u's components differ in size and sign so that a wrong
  // element of the gradient cannot cancel out.
  const double h = 1e-6;
  std::vector<std::vector<double>> plus = p.leaf_values, minus = p.leaf_values;
  double directional = 0;
  int k = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Tensor g = leaves[i].grad();
    for (size_t j = 0; j < p.leaf_values[i].size(); ++j, ++k) {
      const double u = (k % 2 ? -1.0 : 1.0) * (1.0 + 0.37 * k);
      plus[i][j] += h * u;
      minus[i][j] -= h * u;
      directional += (g.defined() ? g.contiguous().data_ptr<double>()[j] : 0.0) * u;
    }
  }
  const double fd = (replay(p, plus) - replay(p, minus)) / (2 * h);
  const double tol = 1e-5 * (1 + std::fabs(fd)) + 1e-8 * std::fabs(f0) * k;
  // Where the program is too steep for finite differences (exp of exp of ...), a step ten
  // times larger gives another answer: no reference then.
  for (size_t i = 0; i < plus.size(); ++i) {
    for (size_t j = 0; j < plus[i].size(); ++j) {
      plus[i][j] = p.leaf_values[i][j] + 10 * (plus[i][j] - p.leaf_values[i][j]);
      minus[i][j] = p.leaf_values[i][j] + 10 * (minus[i][j] - p.leaf_values[i][j]);
    }
  }
  const double fd10 = (replay(p, plus) - replay(p, minus)) / (20 * h);
  if (std::getenv("MUTAGRAD_FUZZ_VERBOSE") != nullptr) {
    std::fprintf(stderr, "f0 %.17g replay %.17g fd %.17g fd10 %.17g directional %.17g\n", f0,
                 replay(p, p.leaf_values), fd, fd10, directional);
  }
  if (!(std::fabs(fd10 - fd) <= tol)) return;
  ++stats.checked;
  FUZZ_CHECK(std::fabs(directional - fd) <= tol, "directional derivative from the gradients ",
             directional, ", finite differences ", fd);
}

}  // namespace mutagrad::fuzz
