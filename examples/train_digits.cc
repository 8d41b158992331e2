// train_digits: a two-layer MLP learns the handwritten digits that Debian's python3-sklearn
// ships (1,797 8x8 images, 10 classes), with mutagrad's in-place AdamW, then shows the safety
// check on the classic optimizer mistake (a step between a forward and its backward) and the
// same program under MutationPolicy::kSnapshot.
//
//   ./bazelw run //examples:train_digits
//   ./bazelw run //examples:train_digits -- --epochs 5 --min-accuracy 90
//   ./bazelw build //examples:train_digits && mpirun -np 2 bazel-bin/examples/train_digits
//   --distributed
//
// Flags: --epochs N (default 30; also MUTAGRAD_DIGITS_EPOCHS), --min-accuracy P (percent:
// exit 1 when the final test accuracy is lower), --data PATH (default: python3-sklearn's
// digits.csv.gz; also MUTAGRAD_DIGITS_CSV), --distributed (data-parallel under mpirun: each rank
// trains on its share of every batch, distributed::DataParallel averages the gradients; rank 0
// prints). The data is read with zlib: no Python at run time.
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distributed/distributed.h"
#include "mutagrad.h"
#include "optim/optim.h"

using namespace mutagrad;
using indexing::Slice;

namespace {

constexpr const char* kDefaultData =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
constexpr int64_t kPixels = 64, kClasses = 10, kHidden = 128, kBatch = 32;

struct Config {
  int epochs = 30;
  double min_accuracy = 0;  // percent
  std::string data = kDefaultData;
  bool distributed = false;
};

struct Dataset {
  Tensor images;  // [n, 64] float32, pixel values / 16 (in [0, 1])
  Tensor labels;  // [n] int64
};

[[noreturn]] void fail(const std::string& message, int code = 2) {
  std::cerr << "train_digits: " << message << "\n";
  std::exit(code);
}

// The whole gzip file as text.
std::string read_gzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    fail("cannot open the handwritten digits data set at " + path +
         ". It ships with Debian's python3-sklearn package: install it with `apt-get install "
         "python3-sklearn` (./bazelw installs it), or pass --data PATH / set "
         "MUTAGRAD_DIGITS_CSV to a copy of digits.csv.gz.");
  }
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  const std::string zmsg = msg ? msg : "";
  gzclose(f);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    fail("cannot decompress " + path + " (zlib: " + zmsg + "); reinstall python3-sklearn");
  }
  return text;
}

// Rows of 64 pixel values (0..16) and a label (0..9), comma-separated.
Dataset load_digits(const std::string& path) {
  const std::string text = read_gzip(path);
  std::vector<float> pixels;
  std::vector<int64_t> labels;
  const char* p = text.c_str();
  int64_t line = 0;
  while (*p != '\0') {
    ++line;
    for (int64_t k = 0; k <= kPixels; ++k) {
      char* end = nullptr;
      const long v = std::strtol(p, &end, 10);
      if (end == p || v < 0 || v > (k == kPixels ? 9 : 16)) {
        fail(
            str("line ", line, " of ", path, " is not 64 pixels in [0, 16] and a label in [0, 9]"));
      }
      if (k < kPixels) {
        pixels.push_back(static_cast<float>(v) / 16.0f);
      } else {
        labels.push_back(v);
      }
      p = end;
      if (*p == ',') ++p;
    }
    while (*p == '\n' || *p == '\r') ++p;
  }
  const auto n = static_cast<int64_t>(labels.size());
  return {from_vector(pixels, {n, kPixels}), from_vector(labels, {n})};
}

Config parse_args(int argc, char** argv) {
  Config c;
  if (const char* e = std::getenv("MUTAGRAD_DIGITS_EPOCHS")) c.epochs = std::atoi(e);
  if (const char* d = std::getenv("MUTAGRAD_DIGITS_CSV")) c.data = d;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--distributed") {
      c.distributed = true;
      continue;
    }
    if (i + 1 >= argc) fail("flag " + a + " needs a value", 64);
    if (a == "--epochs") {
      c.epochs = std::atoi(argv[++i]);
    } else if (a == "--min-accuracy") {
      c.min_accuracy = std::atof(argv[++i]);
    } else if (a == "--data") {
      c.data = argv[++i];
    } else {
      fail("unknown flag " + a +
               "; expected --epochs N, --min-accuracy P, --data PATH or --distributed",
           64);
    }
  }
  if (c.epochs < 1) fail("--epochs must be at least 1", 64);
  return c;
}

// x [n, 64] -> logits [n, 10]. Weights are stored [in, out] so that the forward is x.matmul(w).
struct Mlp {
  Tensor w1, b1, w2, b2;

  explicit Mlp(Generator& gen)
      : w1(empty({kPixels, kHidden}).requires_grad_()),
        b1(empty({kHidden}).requires_grad_()),
        w2(empty({kHidden, kClasses}).requires_grad_()),
        b2(empty({kClasses}).requires_grad_()) {
    // torch.nn.Linear's initialisation, on the [out, in] view of each weight.
    for (auto [w, b] : {std::pair{w1, b1}, std::pair{w2, b2}}) {
      Tensor wt = w.t();
      nn::init::kaiming_uniform_(wt, gen, std::sqrt(5.0));
      const double bound = 1.0 / std::sqrt(static_cast<double>(w.size(0)));
      nn::init::uniform_(b, gen, -bound, bound);
    }
  }
  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2}; }
  Tensor forward(const Tensor& x) const { return (x.matmul(w1) + b1).relu().matmul(w2) + b2; }
};

// Percentage of rows of x that the model labels correctly.
double accuracy(const Mlp& model, const Tensor& x, const Tensor& y) {
  NoGradGuard no_grad;
  const Tensor hits = model.forward(x).argmax(1).eq(y);
  return 100.0 * static_cast<double>(hits.sum().item<int64_t>()) / static_cast<double>(y.numel());
}

// Augmentation: blank 3 random pixels of every image of the batch, in place with an indexing
// write (x[rows, cols] = 0). The batch is a copy (index_select), so the data set stays intact.
void blank_random_pixels(Tensor& xb, Generator& gen) {
  const int64_t n = xb.size(0), per_image = 3;
  const Tensor rows = arange(n).repeat({per_image});
  const Tensor cols = randint(0, kPixels, {n * per_image}, gen);
  xb[{rows, cols}] = 0.0;
}

// The classic mistake: the optimizer steps between a forward and its backward (gradients from
// the previous batch are still there, so the step writes every parameter). Returns whether the
// backward succeeded; prints the loss or the error.
bool step_between_forward_and_backward(Mlp& model, optim::Optimizer& opt, const Dataset& d) {
  const Tensor xa = d.images.index({Slice(0, kBatch)});
  const Tensor ya = d.labels.index({Slice(0, kBatch)});
  const Tensor xb = d.images.index({Slice(kBatch, 2 * kBatch)});
  const Tensor yb = d.labels.index({Slice(kBatch, 2 * kBatch)});
  opt.zero_grad();
  cross_entropy(model.forward(xa), ya).backward();
  Tensor loss = cross_entropy(model.forward(xb), yb);  // saves w1, w2 and the activations
  opt.step();                                          // writes them: the mistake
  try {
    loss.backward();
  } catch (const autograd::AutogradError& e) {
    std::cout << "  caught: " << e.what() << "\n";
    return false;
  }
  std::cout << "  backward succeeded (loss " << loss.item<double>()
            << "): the gradients are those of the parameters the forward saw\n";
  return true;
}

// The training run, its report and the two demonstrations; the process's exit status.
int train(const Config& config) {
  // Data-parallel: every rank runs this program on the same data and the same random stream;
  // each trains on its contiguous share of every batch (see the loop).
  int rank = 0, world = 1;
  if (config.distributed) {
    distributed::ProcessGroup& pg = distributed::init_process_group("mpi");
    rank = pg.rank();
    world = pg.size();
    if (rank != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) fail("cannot quiet rank");
  }
  const Dataset all = load_digits(config.data);
  const int64_t n = all.labels.numel();

  // A fixed shuffle, then 80 % / 20 % train / test.
  Generator gen(2026);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(order[static_cast<size_t>(i)],
              order[static_cast<size_t>(gen.next_u64() % static_cast<uint64_t>(i + 1))]);
  }
  const Tensor perm = from_vector(order, {n});
  const int64_t n_train = n * 4 / 5;
  const Tensor train_idx = perm.slice(0, 0, n_train), test_idx = perm.slice(0, n_train, n);
  const Dataset train{all.images.index_select(0, train_idx), all.labels.index_select(0, train_idx)};
  const Dataset test{all.images.index_select(0, test_idx), all.labels.index_select(0, test_idx)};
  std::cout << "digits: " << n << " images (" << config.data << "), " << n_train << " train, "
            << n - n_train << " test; MLP 64-" << kHidden << "-10, AdamW, batch " << kBatch << ", "
            << config.epochs << " epochs";
  if (config.distributed) std::cout << ", data-parallel over " << world << " MPI ranks";
  std::cout << "\n";

  Mlp model(gen);
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(3e-3).weight_decay(1e-2));
  std::unique_ptr<distributed::DataParallel> ddp;
  if (config.distributed) ddp = std::make_unique<distributed::DataParallel>(model.parameters());
  for (int epoch = 1; epoch <= config.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    // A fresh order of the training rows each epoch.
    std::vector<int64_t> rows(static_cast<size_t>(n_train));
    for (int64_t i = 0; i < n_train; ++i) rows[static_cast<size_t>(i)] = i;
    for (int64_t i = n_train - 1; i > 0; --i) {
      std::swap(rows[static_cast<size_t>(i)],
                rows[static_cast<size_t>(gen.next_u64() % static_cast<uint64_t>(i + 1))]);
    }
    const Tensor epoch_order = from_vector(rows, {n_train});
    double loss_sum = 0;
    for (int64_t s = 0; s < n_train; s += kBatch) {
      const Tensor idx = epoch_order.slice(0, s, std::min(s + kBatch, n_train));
      Tensor xb = train.images.index_select(0, idx);
      const Tensor yb = train.labels.index_select(0, idx);
      blank_random_pixels(xb, gen);
      Tensor loss;
      if (config.distributed) {
        // This rank's rows [lo, hi) of the batch. DataParallel averages the ranks' gradients,
        // so each local mean is weighted by (its rows * ranks / batch rows): the average is then
        // the gradient of the whole batch's mean loss, as in the single-process run.
        const int64_t nb = idx.numel(), lo = nb * rank / world, hi = nb * (rank + 1) / world;
        const Tensor local = cross_entropy(model.forward(xb.slice(0, lo, hi)), yb.slice(0, lo, hi));
        loss = local * (static_cast<double>((hi - lo) * world) / static_cast<double>(nb));
        loss_sum += local.item<double>() * static_cast<double>(hi - lo);
      } else {
        loss = cross_entropy(model.forward(xb), yb);
        loss_sum += loss.item<double>() * static_cast<double>(idx.numel());
      }
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
    if (config.distributed) {  // the epoch's loss over every rank's rows
      Tensor total = full({1}, loss_sum, kFloat64);
      distributed::default_group().all_reduce_(total);
      loss_sum = total.item<double>();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("epoch %3d/%d  loss %.4f  train acc %5.1f%%  test acc %5.1f%%  %8.0f examples/s\n",
                epoch, config.epochs, loss_sum / static_cast<double>(n_train),
                accuracy(model, train.images, train.labels),
                accuracy(model, test.images, test.labels), static_cast<double>(n_train) / seconds);
  }
  const double final_accuracy = accuracy(model, test.images, test.labels);
  std::printf("final test accuracy: %.2f%% (%lld images)\n", final_accuracy,
              static_cast<long long>(test.labels.numel()));

  // The demonstrations below run one process's backward each: no more gradient averaging.
  ddp.reset();
  std::cout << "\nThe classic mistake: opt.step() between a forward and its backward.\n";
  const bool unsafe_went_through = step_between_forward_and_backward(model, opt, train);
  std::cout << "\nThe same under MutationPolicy::kSnapshot (saved values are copied before the "
               "step writes them):\n";
  bool snapshot_ok = false;
  {
    autograd::MutationPolicyGuard policy(autograd::MutationPolicy::kSnapshot);
    snapshot_ok = step_between_forward_and_backward(model, opt, train);
  }

  int status = 0;
  if (final_accuracy < config.min_accuracy) {
    std::printf("FAIL: test accuracy %.2f%% is below --min-accuracy %.2f%%\n", final_accuracy,
                config.min_accuracy);
    status = 1;
  }
  if (unsafe_went_through || !snapshot_ok) {
    std::cout << "FAIL: the unsafe write was not caught, or kSnapshot did not recover\n";
    status = 1;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const Config config = parse_args(argc, argv);
  try {
    return train(config);
  } catch (const std::exception& e) {  // a library error no demonstration expected
    std::cerr << "train_digits: " << e.what() << "\n";
    return 2;
  }
}
