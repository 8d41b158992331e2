// train_digits: a small CNN learns the handwritten digits that Debian's python3-sklearn ships
// (1,797 8x8 images, 10 classes) with nn/ modules, AdamW, a cosine learning-rate schedule and the
// C++ DataLoader; it saves a checkpoint at the end of every epoch (and resumes from one, bitwise),
// then shows the safety check on the classic optimizer mistake (a step between a forward and its
// backward) and the same program under MutationPolicy::kSnapshot.
//
//   ./bazelw run //examples:train_digits
//   ./bazelw run //examples:train_digits -- --epochs 5 --min-accuracy 90
//   ./bazelw run //examples:train_digits -- --stop-after 4      # then:
//   ./bazelw run //examples:train_digits -- --resume /tmp/mutagrad_train_digits.pt
//   ./bazelw build //examples:train_digits && mpirun -np 2 bazel-bin/examples/train_digits
//   --distributed
//
// Flags: --epochs N (default 15; also MUTAGRAD_DIGITS_EPOCHS), --min-accuracy P (percent:
// exit 1 when the final test accuracy is lower), --data PATH (default: python3-sklearn's
// digits.csv.gz; also MUTAGRAD_DIGITS_CSV), --checkpoint PATH (where every epoch's checkpoint
// goes, atomically; default $TMPDIR or /tmp, mutagrad_train_digits.pt; "" for none), --resume PATH
// (continue from a checkpoint: model, optimizer, schedule, random stream and epoch), --stop-after K
// (end after epoch K, as if interrupted), --distributed (data-parallel under mpirun: each rank
// trains on its share of every batch, distributed::DataParallel averages the gradients; rank 0
// prints and saves). The data is read with zlib: no Python at run time.
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

#include "data/data.h"
#include "distributed/distributed.h"
#include "mutagrad.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "serialize/checkpoint.h"

using namespace mutagrad;
using indexing::Slice;

namespace {

constexpr const char* kDefaultData =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
constexpr int64_t kPixels = 64, kClasses = 10, kBatch = 32;

struct Config {
  int epochs = 15;
  double min_accuracy = 0;  // percent
  std::string data = kDefaultData;
  std::string checkpoint;  // empty: no checkpoints
  std::string resume;      // empty: start afresh
  int stop_after = 0;      // 0: run every epoch
  bool distributed = false;
};

struct Dataset {
  Tensor images;  // [n, 1, 8, 8] float32, pixel values / 16 (in [0, 1])
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
  return {from_vector(pixels, {n, 1, 8, 8}), from_vector(labels, {n})};
}

Config parse_args(int argc, char** argv) {
  Config c;
  const char* tmp = std::getenv("TMPDIR");
  c.checkpoint = std::string(tmp && *tmp ? tmp : "/tmp") + "/mutagrad_train_digits.pt";
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
    } else if (a == "--checkpoint") {
      c.checkpoint = argv[++i];
    } else if (a == "--resume") {
      c.resume = argv[++i];
    } else if (a == "--stop-after") {
      c.stop_after = std::atoi(argv[++i]);
      if (c.stop_after < 1) fail("--stop-after must be at least 1", 64);
    } else {
      fail("unknown flag " + a +
               "; expected --epochs N, --min-accuracy P, --data PATH, --checkpoint PATH, "
               "--resume PATH, --stop-after K or --distributed",
           64);
    }
  }
  if (c.epochs < 1) fail("--epochs must be at least 1", 64);
  return c;
}

// [n, 1, 8, 8] -> logits [n, 10]: two convolution blocks, the second pooled to 2x2 per
// channel, and a linear head (torch: nn.Sequential(Conv2d(1, 16, 3, padding=1), BatchNorm2d(16),
// ReLU(inplace=True), MaxPool2d(2), Conv2d(16, 32, 3, padding=1), BatchNorm2d(32),
// ReLU(inplace=True), AdaptiveAvgPool2d(2), Flatten(), Linear(128, 10))). The ReLUs write the batch
// norms' outputs in place, which neither saves (Note [What a convolution layer writes and saves] in
// nn/conv.h).
class DigitsCnn : public nn::Module {
 public:
  DigitsCnn() : Module("DigitsCnn") {
    block1 = register_module(
        "block1", std::make_shared<nn::Sequential>(
                      std::make_shared<nn::Conv2d>(nn::ConvOptions(1, 16, 3).padding(1)),
                      std::make_shared<nn::BatchNorm2d>(16), std::make_shared<nn::ReLU>(true),
                      std::make_shared<nn::MaxPool2d>(2)));
    block2 = register_module(
        "block2", std::make_shared<nn::Sequential>(
                      std::make_shared<nn::Conv2d>(nn::ConvOptions(16, 32, 3).padding(1)),
                      std::make_shared<nn::BatchNorm2d>(32), std::make_shared<nn::ReLU>(true),
                      std::make_shared<nn::AdaptiveAvgPool2d>(2)));
    head = register_module("head", std::make_shared<nn::Linear>(32 * 2 * 2, kClasses));
  }

  Tensor forward(const Tensor& x) override {
    const Tensor h = (*block2)((*block1)(x));  // [n, 16, 4, 4], then [n, 32, 2, 2]
    return (*head)(h.flatten(1));
  }

  std::shared_ptr<nn::Sequential> block1, block2;
  std::shared_ptr<nn::Linear> head;
};

// Percentage of rows of x that the model labels correctly (in eval mode: running statistics).
double accuracy(DigitsCnn& model, const Tensor& x, const Tensor& y) {
  NoGradGuard no_grad;
  model.eval();
  const Tensor hits = model(x).argmax(1).eq(y);
  model.train();
  return 100.0 * static_cast<double>(hits.sum().item<int64_t>()) / static_cast<double>(y.numel());
}

// Augmentation: blank 3 random pixels of every image of the batch, in place with an indexing
// write (x[rows, cols] = 0 on its [n, 64] view). The batch is a copy (Note [A batch is a copy] in
// data/data.h), so the data set stays intact.
void blank_random_pixels(Tensor& xb, Generator& gen) {
  const int64_t n = xb.size(0), per_image = 3;
  const Tensor rows = arange(n).repeat({per_image});
  const Tensor cols = randint(0, kPixels, {n * per_image}, gen);
  Tensor flat = xb.view({n, kPixels});
  flat[{rows, cols}] = 0.0;
}

// ---- Checkpoints: everything a run needs to continue bitwise ------------------------------
//
// {"epoch", "epochs", "model" (the state_dict: parameters and running statistics),
//  "optimizer" (torch's layout: "state" by parameter number, "param_groups"), "scheduler"
//  (last_epoch, _step_count, base_lrs, _last_lr), "generator" (the state of the one random stream
// the run draws from: initialisation, shuffles, augmentation)}, saved atomically by
// mutagrad::save (a crash leaves the previous epoch's file).

using serialize::Value;

Value doubles(const std::vector<double>& v) {
  std::vector<Value> items(v.begin(), v.end());
  return Value::list(std::move(items));
}

std::vector<double> to_doubles(const Value& v) {
  std::vector<double> out;
  for (const Value& e : v.items()) out.push_back(e.to_double());
  return out;
}

Value optimizer_value(const optim::StateDict& sd) {
  std::vector<std::pair<Value, Value>> state, group;
  for (const auto& [index, ps] : sd.state) {
    std::vector<std::pair<Value, Value>> entries;
    for (const auto& [key, t] : ps) entries.emplace_back(key, t);
    state.emplace_back(index, Value::dict(std::move(entries)));
  }
  std::vector<Value> groups;
  for (const optim::StateDict::Group& g : sd.param_groups) {
    std::vector<std::pair<Value, Value>> entries;
    for (const auto& [key, x] : g.options) entries.emplace_back(key, x);
    std::vector<Value> params(g.params.begin(), g.params.end());
    entries.emplace_back("params", Value::list(std::move(params)));
    groups.push_back(Value::dict(std::move(entries)));
  }
  return Value::dict(
      {{"state", Value::dict(std::move(state))}, {"param_groups", Value::list(std::move(groups))}});
}

optim::StateDict optimizer_state(const Value& v) {
  optim::StateDict sd;
  for (const auto& [index, ps] : v.at("state").entries()) {
    optim::ParamState& s = sd.state[index.to_int()];
    for (const auto& [key, t] : ps.entries()) s[key.to_string()] = t.to_tensor();
  }
  for (const Value& g : v.at("param_groups").items()) {
    optim::StateDict::Group group;
    for (const auto& [key, x] : g.entries()) {
      if (key.to_string() == "params") {
        for (const Value& p : x.items()) group.params.push_back(p.to_int());
      } else {
        group.options[key.to_string()] = x.to_double();
      }
    }
    sd.param_groups.push_back(std::move(group));
  }
  return sd;
}

struct TrainingState {
  DigitsCnn& model;
  optim::Optimizer& opt;
  optim::LRScheduler& schedule;
  Generator& gen;
};

void save_checkpoint(const std::string& path, const TrainingState& s, int epoch, int epochs) {
  std::vector<std::pair<Value, Value>> model;
  for (const auto& [name, t] : s.model.state_dict()) model.emplace_back(name, t);
  const optim::SchedulerState sched = s.schedule.state_dict();
  save(Value::dict({{"epoch", epoch},
                    {"epochs", epochs},
                    {"model", Value::dict(std::move(model), /*ordered=*/true)},
                    {"optimizer", optimizer_value(s.opt.state_dict())},
                    {"scheduler", Value::dict({{"last_epoch", sched.last_epoch},
                                               {"_step_count", sched.step_count},
                                               {"base_lrs", doubles(sched.base_lrs)},
                                               {"_last_lr", doubles(sched.last_lr)}})},
                    {"generator", s.gen.get_state()}}),
       path);
}

// Restores everything save_checkpoint wrote; returns the epoch it ended. Exits with a message
// for a file that is not a checkpoint of this job (nothing is changed before every part is read).
int load_checkpoint(const std::string& path, const TrainingState& s, int epochs) {
  Value v;
  nn::StateDict model;
  optim::StateDict opt;
  optim::SchedulerState sched;
  int epoch = 0;
  try {
    v = load(path);
    epoch = static_cast<int>(v.at("epoch").to_int());
    if (v.at("epochs").to_int() != epochs) {
      fail(str("--resume ", path, ": the checkpoint is of a run of ", v.at("epochs").to_int(),
               " epochs (its learning-rate schedule spans them); pass --epochs ",
               v.at("epochs").to_int()),
           64);
    }
    for (const auto& [name, t] : v.at("model").entries())
      model.insert(name.to_string(), t.to_tensor());
    opt = optimizer_state(v.at("optimizer"));
    const Value& sv = v.at("scheduler");
    sched.last_epoch = sv.at("last_epoch").to_int();
    sched.step_count = sv.at("_step_count").to_int();
    sched.base_lrs = to_doubles(sv.at("base_lrs"));
    sched.last_lr = to_doubles(sv.at("_last_lr"));
  } catch (const std::exception& e) {
    fail(str("--resume ", path, ": cannot read a train_digits checkpoint there: ", e.what()));
  }
  s.model.load_state_dict(model);
  s.opt.load_state_dict(opt);
  s.schedule.load_state_dict(sched);
  s.gen.set_state(v.at("generator").to_tensor());
  return epoch;
}

// FNV-1a over the bytes of every tensor of the model's state_dict and the optimizer's state:
// equal digests mean bitwise equal parameters, running statistics and moments.
uint64_t state_digest(const nn::Module& model, const optim::Optimizer& opt) {
  std::vector<Tensor> tensors;
  for (const auto& [name, t] : model.state_dict()) tensors.push_back(t);
  for (const auto& [index, state] : opt.state_dict().state) {
    for (const auto& [key, t] : state) tensors.push_back(t);
  }
  uint64_t h = 1469598103934665603ULL;
  for (const Tensor& t : tensors) {
    const Tensor c = t.contiguous();
    const auto* p = static_cast<const unsigned char*>(c.raw_data());
    const size_t nbytes = static_cast<size_t>(c.numel() * c.element_size());
    for (size_t i = 0; i < nbytes; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  }
  return h;
}

// The classic mistake: the optimizer steps between a forward and its backward (gradients from
// the previous batch are still there, so the step writes every parameter). Returns whether the
// backward succeeded; prints the loss or the error.
bool step_between_forward_and_backward(DigitsCnn& model, optim::Optimizer& opt, const Dataset& d) {
  const Tensor xa = d.images.index({Slice(0, kBatch)});
  const Tensor ya = d.labels.index({Slice(0, kBatch)});
  const Tensor xb = d.images.index({Slice(kBatch, 2 * kBatch)});
  const Tensor yb = d.labels.index({Slice(kBatch, 2 * kBatch)});
  opt.zero_grad();
  cross_entropy(model(xa), ya).backward();
  Tensor loss = cross_entropy(model(xb), yb);  // saves the weights and the activations
  opt.step();                                  // writes the weights: the mistake
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

  // One random stream for the whole run (the split, the layers' initialisation, the shuffles
  // and the augmentation): the default generator, which the layers' constructors draw from.
  Generator gen = default_generator(kCPU);
  gen.manual_seed(2026);
  // A fixed shuffle, then 80 % / 20 % train / test.
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

  DigitsCnn model;
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2).weight_decay(1e-2));
  optim::CosineAnnealingLR schedule(opt, config.epochs);
  const TrainingState state{model, opt, schedule, gen};
  int first_epoch = 1;
  if (!config.resume.empty())
    first_epoch = load_checkpoint(config.resume, state, config.epochs) + 1;

  std::cout << "digits: " << n << " images (" << config.data << "), " << n_train << " train, "
            << n - n_train << " test; CNN, AdamW with a cosine schedule, batch " << kBatch << ", "
            << config.epochs << " epochs";
  if (config.distributed) std::cout << ", data-parallel over " << world << " MPI ranks";
  if (first_epoch > 1) std::cout << ", resumed after epoch " << first_epoch - 1;
  std::cout << "\n" << model << "\n";

  std::unique_ptr<distributed::DataParallel> ddp;
  if (config.distributed) ddp = std::make_unique<distributed::DataParallel>(model.parameters());
  data::DataLoaderOptions loader_options;
  loader_options.batch_size = kBatch;
  loader_options.shuffle = true;
  loader_options.generator = gen;
  const data::TensorDataset train_set(train.images, train.labels);
  for (int epoch = first_epoch; epoch <= config.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    for (auto& [xb, yb] : data::DataLoader(train_set, loader_options)) {  // a fresh order
      blank_random_pixels(xb, gen);
      Tensor loss;
      if (config.distributed) {
        // This rank's rows [lo, hi) of the batch. DataParallel averages the ranks' gradients,
        // so each local mean is weighted by (its rows * ranks / batch rows): the average is then
        // the gradient of the whole batch's mean loss (batch norm uses each rank's rows, as
        // torch's DDP without SyncBatchNorm).
        const int64_t nb = xb.size(0), lo = nb * rank / world, hi = nb * (rank + 1) / world;
        const Tensor local = cross_entropy(model(xb.slice(0, lo, hi)), yb.slice(0, lo, hi));
        loss = local * (static_cast<double>((hi - lo) * world) / static_cast<double>(nb));
        loss_sum += local.item<double>() * static_cast<double>(hi - lo);
      } else {
        loss = cross_entropy(model(xb), yb);
        loss_sum += loss.item<double>() * static_cast<double>(xb.size(0));
      }
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
    schedule.step();
    if (config.distributed) {
      // Each rank's batch norms kept running statistics of its own rows (torch's DDP without
      // SyncBatchNorm); training mode never reads them, so the ranks' parameters agree anyway.
      // Evaluation and the checkpoint use rank 0's, on every rank (torch's broadcast_buffers).
      for (const Tensor& b : model.buffers()) distributed::default_group().broadcast_(b, 0);
      // The epoch's loss over every rank's rows.
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
    std::fflush(stdout);
    if (rank == 0 && !config.checkpoint.empty()) {
      save_checkpoint(config.checkpoint, state, epoch, config.epochs);
    }
    if (epoch == config.stop_after) {
      std::printf("stopped after epoch %d; continue with --resume %s\n", epoch,
                  config.checkpoint.c_str());
      return 0;
    }
  }
  const double final_accuracy = accuracy(model, test.images, test.labels);
  std::printf("final test accuracy: %.2f%% (%lld images)\n", final_accuracy,
              static_cast<long long>(test.labels.numel()));
  std::printf("state digest: %016llx\n", static_cast<unsigned long long>(state_digest(model, opt)));
  if (!config.checkpoint.empty()) std::cout << "checkpoint: " << config.checkpoint << "\n";

  int status = 0;
  if (config.distributed) {  // every rank must end with rank 0's parameters, bit for bit
    bool agree = true;
    for (const auto& [name, t] : model.state_dict()) {
      Tensor hi = t.clone(), lo = t.clone();
      distributed::default_group().all_reduce_(hi, distributed::ReduceOp::kMax);
      distributed::default_group().all_reduce_(lo, distributed::ReduceOp::kMin);
      agree = agree && equal(hi, lo);
    }
    std::cout << (agree ? "ranks agree: every parameter and statistic is the same on every rank\n"
                        : "FAIL: the ranks' parameters differ\n");
    if (!agree) status = 1;
  }

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
