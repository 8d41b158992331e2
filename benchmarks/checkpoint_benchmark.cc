// Checkpoint bandwidth in C++ (issue 38): save and load of a state_dict of 64 float32 tensors
// (1 GiB by default) through mutagrad::save/load (torch's zip format) and safetensors, against a
// plain write/read of the same bytes in the same run. Each case reports bytes_per_second; the
// ratio to the Plain* case of the same durability is the figure (docs/performance/checkpoints.md).
//
//   MUTAGRAD_CKPT_BENCH_MIB=1024 MUTAGRAD_CKPT_BENCH_DIR=/tmp
//     bazel-bin/benchmarks/checkpoint_benchmark --benchmark_repetitions=5
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
// (one command line)
//
// The page cache is warm (every file was just written). Plain reads go into fresh memory, as
// a load must: each iteration allocates its tensors, so both pay the first touch. Saves fsync
// (Note [Atomic save]), and so does PlainWriteFsync.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mutagrad.h"
#include "serialize/checkpoint.h"
#include "serialize/safetensors.h"

namespace mutagrad {
namespace {

constexpr int kTensors = 64;

int64_t total_bytes() {
  const char* mib = std::getenv("MUTAGRAD_CKPT_BENCH_MIB");
  return (mib != nullptr ? std::atoll(mib) : 1024) << 20;
}

std::string path_of(const char* name) {
  const char* dir = std::getenv("MUTAGRAD_CKPT_BENCH_DIR");
  return str(dir != nullptr ? dir : "/tmp", "/ckpt_cc_bench.", name);
}

// The state_dict, made once.
const std::vector<Tensor>& tensors() {
  static const std::vector<Tensor> ts = [] {
    Generator gen(0);
    std::vector<Tensor> out;
    for (int k = 0; k < kTensors; ++k) {
      out.push_back(randn({total_bytes() / 4 / kTensors}, gen, kFloat32));
    }
    return out;
  }();
  return ts;
}

serialize::Value state_dict() {
  std::vector<std::pair<serialize::Value, serialize::Value>> entries;
  for (int k = 0; k < kTensors; ++k) {
    entries.emplace_back(str("layer", k, ".weight"), tensors()[k]);
  }
  return serialize::Value::dict(std::move(entries), /*ordered=*/true);
}

safetensors::TensorMap tensor_map() {
  safetensors::TensorMap m;
  for (int k = 0; k < kTensors; ++k) m[str("layer", k, ".weight")] = tensors()[k];
  return m;
}

void write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) std::abort();
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void plain_write(const std::string& path, bool fsync) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) std::abort();
  for (const Tensor& t : tensors()) {
    write_all(fd, t.unsafe_impl()->data(), static_cast<size_t>(t.numel()) * 4);
  }
  if (fsync && ::fsync(fd) != 0) std::abort();
  ::close(fd);
}

void set_bytes(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * total_bytes());
}

void BM_PlainWriteFsync(benchmark::State& state) {
  for (auto _ : state) plain_write(path_of("plain"), true);
  set_bytes(state);
}

void BM_PlainWrite(benchmark::State& state) {
  for (auto _ : state) plain_write(path_of("plain"), false);
  set_bytes(state);
}

void BM_PlainRead(benchmark::State& state) {
  plain_write(path_of("plain"), false);
  size_t each = static_cast<size_t>(total_bytes() / kTensors);
  for (auto _ : state) {
    int fd = ::open(path_of("plain").c_str(), O_RDONLY);
    std::vector<Storage> out;
    for (int k = 0; k < kTensors; ++k) {
      Storage s = Storage::allocate(kCPU, each);
      char* p = static_cast<char*>(s.data());
      size_t n = each;
      while (n > 0) {
        ssize_t r = ::read(fd, p, n);
        if (r <= 0) std::abort();
        p += r;
        n -= static_cast<size_t>(r);
      }
      out.push_back(std::move(s));
    }
    ::close(fd);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state);
}

void BM_SaveZip(benchmark::State& state) {
  serialize::Value sd = state_dict();
  for (auto _ : state) save(sd, path_of("pt"));
  set_bytes(state);
}

void BM_LoadZip(benchmark::State& state) {
  static bool saved = (save(state_dict(), path_of("pt")), true);  // once: repetitions re-enter
  benchmark::DoNotOptimize(saved);
  for (auto _ : state) {
    serialize::Value v = load(path_of("pt"));
    benchmark::DoNotOptimize(v.entries().data());
  }
  set_bytes(state);
}

void BM_SaveSafetensors(benchmark::State& state) {
  safetensors::TensorMap m = tensor_map();
  for (auto _ : state) safetensors::save_file(m, path_of("safetensors"));
  set_bytes(state);
}

// The mmap view reads pages when touched: sum every tensor to read every byte.
void BM_LoadSafetensorsAndSum(benchmark::State& state) {
  static bool saved = (safetensors::save_file(tensor_map(), path_of("safetensors")), true);
  benchmark::DoNotOptimize(saved);
  for (auto _ : state) {
    safetensors::TensorMap m = safetensors::load_file(path_of("safetensors"));
    for (auto& kv : m) benchmark::DoNotOptimize(kv.second.sum().item<float>());
  }
  set_bytes(state);
}

#define CKPT_BENCHMARK(fn) \
  BENCHMARK(fn)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime()
CKPT_BENCHMARK(BM_PlainWriteFsync);
CKPT_BENCHMARK(BM_PlainWrite);
CKPT_BENCHMARK(BM_PlainRead);
CKPT_BENCHMARK(BM_SaveZip);
CKPT_BENCHMARK(BM_LoadZip);
CKPT_BENCHMARK(BM_SaveSafetensors);
CKPT_BENCHMARK(BM_LoadSafetensorsAndSum);

}  // namespace
}  // namespace mutagrad
