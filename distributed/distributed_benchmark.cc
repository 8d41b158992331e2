// distributed_benchmark: the cost of our layer over MPI, and of a data-parallel step.
//
//   ./bazelw build //distributed:distributed_benchmark
//   mpirun -np 2 --oversubscribe bazel-bin/distributed/distributed_benchmark
//
// 1. all_reduce_ (SUM) of a 4-byte, a 1 MB and a 64 MB float32 tensor against a plain MPI_Allreduce
// of a
//    buffer of the same size, in the same run, alternating in rounds; the median round of each
//    gives the overhead of our layer (checks, the agreement exchange, the bump).
// 2. A training step of the digits MLP (64-128-10, batch 32, AdamW): one process on the whole
//    batch (every rank alone, no collectives) against DataParallel with batch / ranks rows per
//    rank.
// Not Google Benchmark: its adaptive iteration counts differ between ranks, and collectives
// need every rank to run the same number of them. Rank 0 prints.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "distributed/distributed.h"
#include "optim/optim.h"

using namespace mutagrad;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call of `fn`, `iters` calls per round, median over `rounds`.
double time_per_call(distributed::ProcessGroup& pg, int rounds, int iters,
                     const std::function<void()>& fn) {
  std::vector<double> per_round;
  for (int r = 0; r < rounds; ++r) {
    pg.barrier();
    const double start = now();
    for (int i = 0; i < iters; ++i) fn();
    per_round.push_back((now() - start) / iters);
  }
  return median(per_round);
}

void all_reduce_overhead(distributed::ProcessGroup& pg, int64_t bytes, int iters) {
  const int64_t n = bytes / 4;
  std::vector<float> buffer(static_cast<size_t>(n), 0.0f);
  Tensor t = zeros({n}, kFloat32);
  // Alternate the two, several rounds each, so that drift in the machine's load hits both.
  std::vector<double> mpi, ours;
  for (int rep = 0; rep < 5; ++rep) {
    mpi.push_back(time_per_call(pg, 1, iters, [&] {
      MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    }));
    ours.push_back(time_per_call(pg, 1, iters, [&] { pg.all_reduce_(t); }));
  }
  const double m = median(mpi), o = median(ours);
  if (pg.rank() == 0) {
    std::printf(
        "all_reduce_ %9lld bytes float32, %d ranks: MPI_Allreduce %9.1f us, all_reduce_ "
        "%9.1f us, ratio %.3f\n",
        static_cast<long long>(bytes), pg.size(), m * 1e6, o * 1e6, o / m);
  }
}

struct Mlp {
  Tensor w1, b1, w2, b2;
  Mlp() {
    Generator gen(1);
    w1 = (randn({64, 128}, gen) * 0.1).requires_grad_();
    b1 = zeros({128}).requires_grad_();
    w2 = (randn({128, 10}, gen) * 0.1).requires_grad_();
    b2 = zeros({10}).requires_grad_();
  }
  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2}; }
  Tensor forward(const Tensor& x) const { return (x.matmul(w1) + b1).relu().matmul(w2) + b2; }
};

void data_parallel_step(distributed::ProcessGroup& pg) {
  const int64_t batch = 32, rows = batch / pg.size();
  Generator gen(2);
  const Tensor x = rand({batch, 64}, gen), y = randint(0, 10, {batch}, gen);
  const int iters = 200;

  Mlp single;
  optim::AdamW single_opt(single.parameters(), optim::AdamWOptions(1e-3));
  auto single_step = [&] {
    single_opt.zero_grad();
    cross_entropy(single.forward(x), y).backward();
    single_opt.step();
  };
  Mlp replica;
  optim::AdamW opt(replica.parameters(), optim::AdamWOptions(1e-3));
  distributed::DataParallel ddp(replica.parameters(), pg);
  const Tensor xs = x.slice(0, pg.rank() * rows, (pg.rank() + 1) * rows);
  const Tensor ys = y.slice(0, pg.rank() * rows, (pg.rank() + 1) * rows);
  auto ddp_step = [&] {
    opt.zero_grad();
    cross_entropy(replica.forward(xs), ys).backward();
    opt.step();
  };
  std::vector<double> one, many;
  for (int rep = 0; rep < 5; ++rep) {
    one.push_back(time_per_call(pg, 1, iters, single_step));
    many.push_back(time_per_call(pg, 1, iters, ddp_step));
  }
  if (pg.rank() == 0) {
    std::printf(
        "digits MLP step (batch %lld, AdamW): one process %7.1f us, DataParallel over %d "
        "ranks (%lld rows each) %7.1f us, ratio %.2f\n",
        static_cast<long long>(batch), median(one) * 1e6, pg.size(), static_cast<long long>(rows),
        median(many) * 1e6, median(many) / median(one));
  }
}

}  // namespace

int main() {
  distributed::ProcessGroup& pg = distributed::init_process_group("mpi");
  all_reduce_overhead(pg, 4, 2000);  // one element: the fixed cost of our layer per call
  all_reduce_overhead(pg, 1 << 20, 200);
  all_reduce_overhead(pg, 64 << 20, 5);
  data_parallel_step(pg);
  return 0;
}
