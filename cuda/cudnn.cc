// The device build's convolution library: cuDNN's legacy convolution API (cudnnConvolution-
// Forward / BackwardData / BackwardFilter) on the runtime's stream, deterministic algorithms
// only. Every cuDNN call is checked and reported with its name, cudnnGetErrorString and cuDNN's
// last error message. Registers itself at load time (cuda/dnn.h).
//
// Note [Deterministic cuDNN convolutions]
// - Algorithms: the forward may use IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM, GEMM or DIRECT; the
//   input gradient BWD_DATA_ALGO_1; the weight gradient BWD_FILTER_ALGO_1. These are the
//   deterministic GEMM-like algorithms (BWD_DATA_ALGO_0 and BWD_FILTER_ALGO_0/3 accumulate with
//   atomics, so their bits vary from run to run). FFT and Winograd, deterministic too, are left
//   out: their float32 error is not the bound of a dot product (what the CPU's direct oneDNN
//   kernels and the im2col reference meet, and what the tests check).
// - Choice: cudnnGet*Algorithm_v7 (cuDNN's heuristics, no timing) ranks the candidates; one
//   that it reports as non-deterministic, not SUCCESS, or tensor-core math for float32 is
//   skipped, the allowed ones it does not list are tried after those it does, and the first
//   whose workspace can be allocated and which runs is cached per geometry. Timing-based search
//   (cudnnFind*) is not used: it could pick another algorithm on the next run, and with it other
//   bits. So one geometry always runs one algorithm in a process, and the same one in the next
//   process on the same GPU and cuDNN.
// - Math: float32 with CUDNN_FMA_MATH (no TF32 tensor cores: float32 rounding throughout, as
//   the CPU; PyTorch allows TF32 in convolutions by default, torch.backends.cudnn.allow_tf32,
//   about 10 bits of mantissa in the products); float64 with CUDNN_DEFAULT_MATH.
// - Workspace: from the caching allocator, released when the call is queued (one stream, so a
//   later kernel that reuses the block runs after this one).
// - When no allowed algorithm runs, convolution() returns false and the caller runs the im2col
//   + GEMM reference (also deterministic). MUTAGRAD_CUDNN_VERBOSE=1 prints each geometry's
//   choice to stderr.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/allocator.h"
#include "cuda/cuda.h"
#include "cuda/dnn.h"
#include "cuda/runtime.h"
#include "tensor/error.h"

namespace mutagrad::cuda {
namespace {

std::string describe(const char* call, cudnnStatus_t status) {
  char last[512] = {0};
  cudnnGetLastErrorString(last, sizeof(last));
  return str(call, " failed: ", cudnnGetErrorString(status), " (status ", static_cast<int>(status),
             ")", last[0] != 0 ? str(": ", last) : std::string());
}

void check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) throw DeviceError(describe(call, status));
}

// A geometry or configuration this algorithm does not take: try the next one. The statuses that
// say cuDNN itself cannot run here (driver, runtime, a missing sub-library) are errors.
bool not_supported(cudnnStatus_t status) {
  const int s = static_cast<int>(status);
  return s >= 3000 && s < 4000 && status != CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER &&
         status != CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART &&
         status != CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING &&
         status != CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE;
}

// ---- Descriptors (owned; destroyed with errors ignored) --------------------------------------

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() { check(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor"); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() { check(cudnnCreateFilterDescriptor(&d), "cudnnCreateFilterDescriptor"); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};

struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() { check(cudnnCreateConvolutionDescriptor(&d), "cudnnCreateConvolutionDescriptor"); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

// The descriptors of one call: x, w, y contiguous NC(D)HW, the convolution (cross-correlation,
// as torch's), groups. Sizes were checked to fit in int (cuda/convolution.cc).
struct Descriptors {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  cudnnDataType_t type;

  explicit Descriptors(const ConvArgs& a) : type(a.f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT) {
    const int nd = a.spatial + 2;
    std::vector<int> xs{static_cast<int>(a.n), static_cast<int>(a.c)};
    std::vector<int> ws{static_cast<int>(a.o), static_cast<int>(a.c / a.groups)};
    std::vector<int> ys{static_cast<int>(a.n), static_cast<int>(a.o)};
    std::vector<int> pad, stride, dilation;
    for (int i = 0; i < a.spatial; ++i) {
      xs.push_back(static_cast<int>(a.in[i]));
      ws.push_back(static_cast<int>(a.k[i]));
      ys.push_back(static_cast<int>(a.out[i]));
      pad.push_back(static_cast<int>(a.pad[i]));
      stride.push_back(static_cast<int>(a.stride[i]));
      dilation.push_back(static_cast<int>(a.dilation[i]));
    }
    check(cudnnSetTensorNdDescriptor(x.d, type, nd, xs.data(), contiguous(xs).data()),
          "cudnnSetTensorNdDescriptor (input)");
    check(cudnnSetTensorNdDescriptor(y.d, type, nd, ys.data(), contiguous(ys).data()),
          "cudnnSetTensorNdDescriptor (output)");
    check(cudnnSetFilterNdDescriptor(w.d, type, CUDNN_TENSOR_NCHW, nd, ws.data()),
          "cudnnSetFilterNdDescriptor");
    check(cudnnSetConvolutionNdDescriptor(conv.d, a.spatial, pad.data(), stride.data(),
                                          dilation.data(), CUDNN_CROSS_CORRELATION, type),
          "cudnnSetConvolutionNdDescriptor");
    check(cudnnSetConvolutionGroupCount(conv.d, static_cast<int>(a.groups)),
          "cudnnSetConvolutionGroupCount");
  }

  static std::vector<int> contiguous(const std::vector<int>& sizes) {
    std::vector<int> strides(sizes.size(), 1);
    for (size_t i = sizes.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * sizes[i];
    return strides;
  }
};

// ---- Algorithms ------------------------------------------------------------------------------

struct Candidate {
  int algo = 0;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

// The allowed algorithms of each kind, in the order tried after the heuristics' ranking.
std::vector<int> allowed(ConvKind kind) {
  switch (kind) {
    case ConvKind::kForward:
      return {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
              CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
              CUDNN_CONVOLUTION_FWD_ALGO_DIRECT};
    case ConvKind::kBackwardData:
      return {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1};
    case ConvKind::kBackwardFilter:
      return {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1};
  }
  return {};
}

const char* algo_name(ConvKind kind, int algo) {
  if (kind == ConvKind::kForward) {
    switch (algo) {
      case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
        return "FWD_ALGO_IMPLICIT_GEMM";
      case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
        return "FWD_ALGO_IMPLICIT_PRECOMP_GEMM";
      case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
        return "FWD_ALGO_GEMM";
      case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
        return "FWD_ALGO_DIRECT";
      default:
        return "FWD_ALGO_other";
    }
  }
  return kind == ConvKind::kBackwardData ? "BWD_DATA_ALGO_1" : "BWD_FILTER_ALGO_1";
}

const char* kind_name(ConvKind kind) {
  return kind == ConvKind::kForward        ? "forward"
         : kind == ConvKind::kBackwardData ? "backward data"
                                           : "backward filter";
}

// The heuristics' results as (algo, status, determinism, math type).
struct Ranked {
  int algo;
  cudnnStatus_t status;
  cudnnDeterminism_t determinism;
  cudnnMathType_t math;
};

std::vector<Ranked> heuristics(cudnnHandle_t h, const Descriptors& d, ConvKind kind) {
  int max = 0, got = 0;
  std::vector<Ranked> r;
  if (kind == ConvKind::kForward) {
    check(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max),
          "cudnnGetConvolutionForwardAlgorithmMaxCount");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max));
    check(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.d, d.w.d, d.conv.d, d.y.d, max, &got,
                                                 perf.data()),
          "cudnnGetConvolutionForwardAlgorithm_v7");
    for (int i = 0; i < got; ++i) {
      r.push_back({perf[i].algo, perf[i].status, perf[i].determinism, perf[i].mathType});
    }
  } else if (kind == ConvKind::kBackwardData) {
    check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max),
          "cudnnGetConvolutionBackwardDataAlgorithmMaxCount");
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(max));
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.d, d.y.d, d.conv.d, d.x.d, max, &got,
                                                      perf.data()),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    for (int i = 0; i < got; ++i) {
      r.push_back({perf[i].algo, perf[i].status, perf[i].determinism, perf[i].mathType});
    }
  } else {
    check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max),
          "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount");
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<size_t>(max));
    check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.d, d.y.d, d.conv.d, d.w.d, max, &got,
                                                        perf.data()),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    for (int i = 0; i < got; ++i) {
      r.push_back({perf[i].algo, perf[i].status, perf[i].determinism, perf[i].mathType});
    }
  }
  return r;
}

bool tensor_op(cudnnMathType_t m) {
  return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// The candidates of Note [Deterministic cuDNN convolutions], in the order to try them.
std::vector<Candidate> candidates(cudnnHandle_t h, const Descriptors& d, const ConvArgs& a) {
  const std::vector<int> ok = allowed(a.kind);
  const cudnnMathType_t math = a.f64 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  std::vector<Candidate> r;
  auto listed = [&](int algo) {
    for (const Candidate& c : r) {
      if (c.algo == algo) return true;
    }
    return false;
  };
  for (const Ranked& e : heuristics(h, d, a.kind)) {
    const bool allowed_algo = std::find(ok.begin(), ok.end(), e.algo) != ok.end();
    if (!allowed_algo || e.status != CUDNN_STATUS_SUCCESS || e.determinism != CUDNN_DETERMINISTIC ||
        (!a.f64 && tensor_op(e.math)) || listed(e.algo)) {
      continue;
    }
    r.push_back({e.algo, math});
  }
  for (int algo : ok) {
    if (!listed(algo)) r.push_back({algo, math});
  }
  return r;
}

// ---- The library -----------------------------------------------------------------------------

class Cudnn final : public Dnn {
 public:
  std::string name() const override {
    const size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch (cuDNN 9)
    return str("cuDNN ", v / 10000, ".", v % 10000 / 100, ".", v % 100);
  }

  bool convolution(const ConvArgs& a) override {
    std::lock_guard<std::mutex> lock(mutex_);  // one handle, one stream
    cudnnHandle_t h = handle();
    const Descriptors d(a);
    const std::vector<int64_t> key = key_of(a);
    const auto cached = cache_.find(key);
    const std::vector<Candidate> tries =
        cached != cache_.end() ? std::vector<Candidate>{cached->second} : candidates(h, d, a);
    for (const Candidate& c : tries) {
      if (run(h, d, a, c)) {
        if (cached == cache_.end()) {
          cache_.emplace(key, c);
          if (verbose_) report(a, c);
        }
        return true;
      }
    }
    if (verbose_) {
      std::fprintf(stderr, "mutagrad cudnn: %s: no deterministic algorithm, im2col reference\n",
                   kind_name(a.kind));
    }
    return false;
  }

 private:
  cudnnHandle_t handle() {
    if (handle_ == nullptr) {
      void* stream = runtime().stream();  // the device is current once the runtime has a stream
      check(cudnnCreate(&handle_), "cudnnCreate");
      check(cudnnSetStream(handle_, static_cast<cudaStream_t>(stream)), "cudnnSetStream");
    }
    return handle_;
  }

  static std::vector<int64_t> key_of(const ConvArgs& a) {
    std::vector<int64_t> k{static_cast<int64_t>(a.kind), a.f64, a.spatial, a.n, a.c, a.o, a.groups};
    for (int i = 0; i < a.spatial; ++i) {
      k.insert(k.end(), {a.in[i], a.k[i], a.out[i], a.pad[i], a.stride[i], a.dilation[i]});
    }
    return k;
  }

  // One try: false when the algorithm does not take this call or its workspace cannot be had.
  static bool run(cudnnHandle_t h, const Descriptors& d, const ConvArgs& a, const Candidate& c) {
    check(cudnnSetConvolutionMathType(d.conv.d, c.math), "cudnnSetConvolutionMathType");
    size_t bytes = 0;
    cudnnStatus_t s;
    const char* call;
    if (a.kind == ConvKind::kForward) {
      call = "cudnnGetConvolutionForwardWorkspaceSize";
      s = cudnnGetConvolutionForwardWorkspaceSize(
          h, d.x.d, d.w.d, d.conv.d, d.y.d, static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), &bytes);
    } else if (a.kind == ConvKind::kBackwardData) {
      call = "cudnnGetConvolutionBackwardDataWorkspaceSize";
      s = cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, d.w.d, d.y.d, d.conv.d, d.x.d, static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
          &bytes);
    } else {
      call = "cudnnGetConvolutionBackwardFilterWorkspaceSize";
      s = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, d.x.d, d.y.d, d.conv.d, d.w.d, static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo),
          &bytes);
    }
    if (not_supported(s)) return false;
    check(s, call);
    std::shared_ptr<void> workspace;
    if (bytes > 0) {
      try {
        workspace = caching_allocator().allocate(bytes);
      } catch (const OutOfMemoryError&) {
        return false;  // another algorithm may need less
      }
    }
    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    const void* one = a.f64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* zero = a.f64 ? static_cast<const void*>(&zero_d) : &zero_f;
    if (a.kind == ConvKind::kForward) {
      call = "cudnnConvolutionForward";
      s = cudnnConvolutionForward(h, one, d.x.d, a.x, d.w.d, a.w, d.conv.d,
                                  static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), workspace.get(),
                                  bytes, zero, d.y.d, a.y);
    } else if (a.kind == ConvKind::kBackwardData) {
      call = "cudnnConvolutionBackwardData";
      s = cudnnConvolutionBackwardData(h, one, d.w.d, a.w, d.y.d, a.y, d.conv.d,
                                       static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                                       workspace.get(), bytes, zero, d.x.d, a.x);
    } else {
      call = "cudnnConvolutionBackwardFilter";
      s = cudnnConvolutionBackwardFilter(h, one, d.x.d, a.x, d.y.d, a.y, d.conv.d,
                                         static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo),
                                         workspace.get(), bytes, zero, d.w.d, a.w);
    }
    if (not_supported(s)) return false;
    check(s, call);
    return true;
  }

  static void report(const ConvArgs& a, const Candidate& c) {
    std::string geometry = str(a.f64 ? "float64" : "float32", " n ", a.n, " c ", a.c, " o ", a.o,
                               " groups ", a.groups, " in/k/out/pad/stride/dilation");
    for (int i = 0; i < a.spatial; ++i) {
      geometry += str(" ", a.in[i], "/", a.k[i], "/", a.out[i], "/", a.pad[i], "/", a.stride[i],
                      "/", a.dilation[i]);
    }
    std::fprintf(stderr, "mutagrad cudnn: %s %s: %s\n", kind_name(a.kind), geometry.c_str(),
                 algo_name(a.kind, c.algo));
  }

  std::mutex mutex_;
  cudnnHandle_t handle_ = nullptr;  // never destroyed: the process may still use it at exit
  std::map<std::vector<int64_t>, Candidate> cache_;
  const bool verbose_ = [] {
    const char* env = std::getenv("MUTAGRAD_CUDNN_VERBOSE");
    return env != nullptr && std::string(env) == "1";
  }();
};

const bool registered = [] {
  register_dnn(new Cudnn());  // never destroyed: tensors may outlive main
  return true;
}();

}  // namespace
}  // namespace mutagrad::cuda
