// The CPU's convolution kernels: oneDNN (Debian's libdnnl-dev 2.6) for float32, the im2col + GEMM
// reference (tensor/native/convolution.cc) for float64, which oneDNN lacks.
//
// Note [Convolution on the CPU]
// The operands arrive contiguous (NCHW, weights OIHW) with exact geometry (Note [Convolution's
// backend contract]); they are handed to oneDNN as plain memory descriptors, groups as a
// [G, O / G, C / G, *k] weight, dilation as oneDNN's (torch's - 1). Plain layouts let oneDNN pick
// its GEMM-based kernels, but those open a parallel region per image and GEMM (130 per
// forward + backward of a 64-image batch) and ran 4x slower than its blocked JIT kernels. So
// each primitive is created with format_tag::any: oneDNN picks the layouts (nChw16c and
// blocked weights on AVX-512), and the operands are reordered into them and the results out
// through temporaries, as libtorch does; where that fails, the plain layouts are asked for.
// Should oneDNN refuse a geometry (dnnl::error), the reference computes it.
//
// Note [oneDNN primitives are cached]
// Creating a primitive descriptor walks oneDNN's implementation list (a backward one also
// builds its forward hint): tens of microseconds, more than a small CNN's convolution itself.
// Each primitive is kept by its call's key (direction, operand sizes, geometry, and OpenMP's
// thread count, which kernels are planned for) in a process-wide map under a
// mutex; executing one primitive from several threads is safe (oneDNN's library scratchpad is per
// thread). A geometry oneDNN refused is remembered too, so the reference runs without asking again.
#include "tensor/native/convolution.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tensor/cpu/cpu_allocator.h"
#include "tensor/cpu/cpu_backend.h"
#include "tensor/tensor.h"

// The OpenMP runtime's thread-count calls (libgomp, which oneDNN runs on); declared here so that
// this file needs no -fopenmp.
extern "C" int omp_get_max_threads();
extern "C" void omp_set_num_threads(int);

namespace mutagrad::cpu {
namespace {

using dnnl::memory;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

memory::dims dims_of(IntArrayRef v) { return memory::dims(v.begin(), v.end()); }

// A contiguous float32 tensor as plain oneDNN memory.
memory::desc plain(IntArrayRef sizes) {
  const memory::dims d = dims_of(sizes);
  memory::dims strides(d.size(), 1);
  for (size_t i = d.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * d[i];
  return memory::desc(d, memory::data_type::f32, strides);
}

// The weight [O, C / G, *k]; with groups, [G, O / G, C / G, *k] (the same bytes).
memory::desc weight_desc(const Tensor& w, int64_t groups) {
  if (groups == 1) return plain(w.sizes());
  DimVector s{groups, w.size(0) / groups};
  for (int64_t i = 1; i < w.dim(); ++i) s.push_back(w.size(i));
  return plain(s);
}

struct Geometry {
  memory::dims strides, dilates, padding_l, padding_r;
  explicit Geometry(const ConvParams& p)
      : strides(dims_of(p.stride)),
        dilates(dims_of(p.dilation)),
        padding_l(dims_of(p.padding_l)),
        padding_r(dims_of(p.padding_r)) {
    for (auto& d : dilates) d -= 1;
  }
};

dnnl::convolution_forward::primitive_desc forward_pd(const memory::desc& x, const memory::desc& w,
                                                     const memory::desc& y, const Geometry& g) {
  const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                          dnnl::algorithm::convolution_direct, x, w, y, g.strides,
                                          g.dilates, g.padding_l, g.padding_r);
  return dnnl::convolution_forward::primitive_desc(d, engine());
}

enum class Direction : int64_t { kForward, kBackwardData, kBackwardWeights };

// One operand of a cached primitive: its plain layout, the layout the primitive wants, and the
// reorder between them (empty when they are the same).
struct Operand {
  memory::desc plain, want;
  std::optional<dnnl::reorder> reorder;
};

// A primitive with its operands (x, w, y: the forward's operands or their gradients); `prim`
// empty: oneDNN refused the geometry.
struct Cached {
  std::optional<dnnl::primitive> prim;
  Operand x, w, y;
};

using Key = std::vector<int64_t>;

Key key_of(Direction d, const Tensor& x, const Tensor& w, const Tensor& y, const ConvParams& p) {
  Key k{static_cast<int64_t>(d), p.groups, x.dim(), omp_get_max_threads()};
  for (const Tensor* t : {&x, &w, &y}) k.insert(k.end(), t->sizes().begin(), t->sizes().end());
  for (const DimVector* v : {&p.stride, &p.padding_l, &p.padding_r, &p.dilation}) {
    k.insert(k.end(), v->begin(), v->end());
  }
  return k;
}

memory::desc any(const memory::desc& d) {
  return memory::desc(d.dims(), memory::data_type::f32, memory::format_tag::any);
}

// `in`: the operand is read (reorder plain -> want), else written (want -> plain).
Operand operand(const memory::desc& plain, const memory::desc& want, bool in) {
  Operand o{plain, want, std::nullopt};
  if (plain != want) {
    o.reorder = in ? dnnl::reorder(dnnl::reorder::primitive_desc(engine(), plain, engine(), want))
                   : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), want, engine(), plain));
  }
  return o;
}

// The primitive for `dir`; with `blocked`, oneDNN chooses the layouts (format_tag::any).
Cached create_with(Direction dir, const memory::desc& x, const memory::desc& w,
                   const memory::desc& y, const Geometry& g, bool blocked) {
  const memory::desc xa = blocked ? any(x) : x, wa = blocked ? any(w) : w,
                     ya = blocked ? any(y) : y;
  const auto hint = forward_pd(xa, wa, ya, g);
  switch (dir) {
    case Direction::kForward:
      return Cached{dnnl::convolution_forward(hint), operand(x, hint.src_desc(), true),
                    operand(w, hint.weights_desc(), true), operand(y, hint.dst_desc(), false)};
    case Direction::kBackwardData: {
      const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, xa, wa, ya,
                                                    g.strides, g.dilates, g.padding_l, g.padding_r);
      const dnnl::convolution_backward_data::primitive_desc pd(d, engine(), hint);
      return Cached{dnnl::convolution_backward_data(pd), operand(x, pd.diff_src_desc(), false),
                    operand(w, pd.weights_desc(), true), operand(y, pd.diff_dst_desc(), true)};
    }
    case Direction::kBackwardWeights: {
      const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, xa, wa,
                                                       ya, g.strides, g.dilates, g.padding_l,
                                                       g.padding_r);
      const dnnl::convolution_backward_weights::primitive_desc pd(d, engine(), hint);
      return Cached{dnnl::convolution_backward_weights(pd), operand(x, pd.src_desc(), true),
                    operand(w, pd.diff_weights_desc(), false),
                    operand(y, pd.diff_dst_desc(), true)};
    }
  }
  throw dnnl::error(dnnl_invalid_arguments, "unknown direction");
}

// Note [Small convolutions run on one thread]
// oneDNN opens an OpenMP region of every thread for any problem, and its blocked JIT weight
// gradient meets at a spinning barrier. For a small problem (the digits CNN's convolutions:
// 0.3M and 2.4M multiply-adds) the threads' wake-ups and barriers cost more than the work:
// 12 regions made a training step 150 ms on the loaded 2-core VM, where one thread takes about
// 2 ms. So a call below kSmallConvMacs creates and runs its primitive with OpenMP's thread
// count set to one on the calling thread (oneDNN then opens no region), and asks for the plain
// layouts first for the weight gradient (its GEMM kernel needs no reorders).
constexpr int64_t kSmallConvMacs = int64_t{1} << 23;

// x, w, y: the forward's operands or their gradients; y: [N, O, *out], w: [O, C / G, *k].
bool is_small(const Tensor& x, const Tensor& w, const Tensor& y) {
  (void)x;
  return y.numel() * (w.numel() / std::max<int64_t>(1, w.size(0))) < kSmallConvMacs;
}

// Sets OpenMP's thread count on this thread to one for its lifetime, when `one`.
class OneThread {
 public:
  explicit OneThread(bool one) : saved_(one ? omp_get_max_threads() : 0) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~OneThread() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int saved_;
};

Cached create(Direction dir, const Tensor& x, const Tensor& w, const Tensor& y,
              const ConvParams& p) {
  const memory::desc xd = plain(x.sizes()), wd = weight_desc(w, p.groups), yd = plain(y.sizes());
  const Geometry g(p);
  const bool small = dir == Direction::kBackwardWeights && is_small(x, w, y);
  for (const bool blocked : {!small, small}) {
    try {
      return create_with(dir, xd, wd, yd, g, blocked);
    } catch (const dnnl::error&) {
    }
  }
  return Cached{
      std::nullopt, {xd, xd, std::nullopt}, {wd, wd, std::nullopt}, {yd, yd, std::nullopt}};
}

// The cached primitive for this call.
const Cached& primitive(Direction dir, const Tensor& x, const Tensor& w, const Tensor& y,
                        const ConvParams& p) {
  static std::mutex m;
  static auto* cache = new std::map<Key, Cached>();  // never destroyed: used until exit
  Key k = key_of(dir, x, w, y, p);
  {
    std::lock_guard<std::mutex> lock(m);
    auto it = cache->find(k);
    if (it != cache->end()) return it->second;
  }
  Cached c = create(dir, x, w, y, p);
  std::lock_guard<std::mutex> lock(m);
  return cache->emplace(std::move(k), std::move(c)).first->second;  // a racing twin wins
}

// Runs the cached primitive on x, w, y (their oneDNN argument ids given), reordering each
// operand into and out of the primitive's layout through a temporary where they differ.
void execute(const Cached& c, int x_arg, const Tensor& x, int w_arg, const Tensor& w, int y_arg,
             const Tensor& y) {
  thread_local dnnl::stream s(engine());
  std::unordered_map<int, memory> args;
  std::vector<std::pair<const dnnl::reorder*, std::pair<memory, memory>>> after;
  // The reordered operands' buffers, from the caching allocator: the same sizes every step, so
  // they are reused rather than faulted in afresh (Note [CPU caching allocator]).
  std::vector<std::shared_ptr<void>> temporaries;
  auto bind = [&](const Operand& o, int arg, const Tensor& t) {
    memory user(o.plain, engine(), t.raw_data());
    if (!o.reorder) {
      args.emplace(arg, user);
      return;
    }
    temporaries.push_back(cpu_allocate(o.want.get_size()));
    memory tmp(o.want, engine(), temporaries.back().get());
    const bool written =
        arg == DNNL_ARG_DST || arg == DNNL_ARG_DIFF_SRC || arg == DNNL_ARG_DIFF_WEIGHTS;
    if (written) {
      after.push_back({&*o.reorder, {tmp, user}});
    } else {
      o.reorder->execute(s, user, tmp);
    }
    args.emplace(arg, tmp);
  };
  bind(c.x, x_arg, x);
  bind(c.w, w_arg, w);
  bind(c.y, y_arg, y);
  c.prim->execute(s, args);
  for (auto& [reorder, mems] : after) reorder->execute(s, mems.first, mems.second);
  s.wait();
}

}  // namespace

void CpuBackend::conv_forward(const Tensor& y, const Tensor& x, const Tensor& w,
                              const ConvParams& p) {
  if (x.dtype() != kFloat32) return Backend::conv_forward(y, x, w, p);
  const OneThread threads(is_small(x, w, y));
  const Cached& c = primitive(Direction::kForward, x, w, y, p);
  if (!c.prim) return Backend::conv_forward(y, x, w, p);
  execute(c, DNNL_ARG_SRC, x, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DST, y);
}

void CpuBackend::conv_backward_input(const Tensor& gx, const Tensor& gy, const Tensor& w,
                                     const ConvParams& p) {
  if (gy.dtype() != kFloat32) return Backend::conv_backward_input(gx, gy, w, p);
  const OneThread threads(is_small(gx, w, gy));
  const Cached& c = primitive(Direction::kBackwardData, gx, w, gy, p);
  if (!c.prim) return Backend::conv_backward_input(gx, gy, w, p);
  execute(c, DNNL_ARG_DIFF_SRC, gx, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DIFF_DST, gy);
}

void CpuBackend::conv_backward_weight(const Tensor& gw, const Tensor& x, const Tensor& gy,
                                      const ConvParams& p) {
  if (x.dtype() != kFloat32) return Backend::conv_backward_weight(gw, x, gy, p);
  const OneThread threads(is_small(x, gw, gy));
  const Cached& c = primitive(Direction::kBackwardWeights, x, gw, gy, p);
  if (!c.prim) return Backend::conv_backward_weight(gw, x, gy, p);
  execute(c, DNNL_ARG_SRC, x, DNNL_ARG_DIFF_WEIGHTS, gw, DNNL_ARG_DIFF_DST, gy);
}

}  // namespace mutagrad::cpu
