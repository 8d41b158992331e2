// DataParallel: see Note [DataParallel buckets] in data_parallel.h.
#include "distributed/data_parallel.h"

#include <mutex>
#include <utility>

#include "autograd/history.h"
#include "autograd/ops/inplace_ops.h"

namespace mutagrad::distributed {

struct DataParallel::State {
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;  // of each parameter in `flat`
    Tensor flat;                   // the gradients, side by side; what all_reduce_ writes
    size_t ready = 0;
    std::shared_ptr<Work> work;
  };

  ProcessGroup* group = nullptr;
  std::vector<Tensor> params;
  DataParallelOptions options;
  CallSite site{};
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;
  std::vector<bool> is_ready;
  size_t next_launch = 0;
  std::vector<std::shared_ptr<autograd::Node>> accumulators;  // keep the hooks' nodes alive
  std::vector<autograd::RemovableHandle> handles;
  std::mutex mutex;

  Tensor slot(const Bucket& b, size_t k) const {
    const Tensor& p = params[b.params[k]];
    return native::view(native::narrow(b.flat, 0, b.offsets[k], p.numel()), p.sizes());
  }

  void launch(Bucket& b) {
    NoGradGuard no_grad;
    for (size_t k = 0; k < b.params.size(); ++k) {
      native::copy_(slot(b, k), params[b.params[k]].grad());
    }
    b.work = group->all_reduce_async_(b.flat, ReduceOp::kAvg, site);
  }

  void finish_all() {
    NoGradGuard no_grad;
    const MutationSite write{"DataParallel.all_reduce_", site.file, site.line};
    for (Bucket& b : buckets) {
      b.work->wait();
      b.work.reset();
      for (size_t k = 0; k < b.params.size(); ++k) {
        autograd::copy_(params[b.params[k]].grad(), slot(b, k), write);
      }
      b.ready = 0;
    }
    next_launch = 0;
    is_ready.assign(params.size(), false);
  }

  void on_ready(size_t i) {
    std::lock_guard<std::mutex> lock(mutex);
    if (is_ready[i]) {
      throw DistributedError(
          str("DataParallel (constructed at ", site.file, ":", site.line, "): parameter ", i,
              " received a gradient twice before its bucket was reduced: the previous backward "
              "left some parameters without a gradient (they were not used), so its buckets never "
              "started. Every parameter must take part in every backward; pass only the "
              "parameters the loss uses"));
    }
    if (!params[i].grad().defined()) return;
    is_ready[i] = true;
    Bucket& b = buckets[bucket_of[i]];
    ++b.ready;
    while (next_launch < buckets.size() &&
           buckets[next_launch].ready == buckets[next_launch].params.size()) {
      launch(buckets[next_launch++]);
    }
    if (next_launch == buckets.size()) finish_all();
  }
};

DataParallel::DataParallel(std::vector<Tensor> parameters, ProcessGroup& group,
                           DataParallelOptions options, CallSite site)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.group = &group;
  s.params = std::move(parameters);
  s.options = options;
  s.site = site;
  if (s.params.empty()) {
    throw ValueError("DataParallel: got an empty parameter list; pass the model's parameters");
  }
  for (size_t i = 0; i < s.params.size(); ++i) {
    const Tensor& p = s.params[i];
    if (!p.defined() || !p.requires_grad() || !p.is_leaf()) {
      throw ValueError(str("DataParallel: parameter ", i,
                           " is not a leaf tensor that requires grad; pass the model's "
                           "parameters (created with requires_grad_())"));
    }
    if (!group.accepts(p.device())) {
      throw DeviceError(str("DataParallel: parameter ", i, " is on ", p.device(), ", which the ",
                            group.backend_name(), " process group does not move"));
    }
  }
  if (options.broadcast_parameters) {
    NoGradGuard no_grad;
    for (const Tensor& p : s.params) group.broadcast_(p, 0, site);
  }
  // Buckets: parameters in reverse order, one dtype each, at most bucket_cap_bytes (a larger
  // parameter gets a bucket of its own).
  s.bucket_of.assign(s.params.size(), 0);
  s.is_ready.assign(s.params.size(), false);
  int64_t bytes = 0;
  for (size_t j = s.params.size(); j-- > 0;) {
    const Tensor& p = s.params[j];
    const int64_t nbytes = p.numel() * p.element_size();
    if (s.buckets.empty() || bytes + nbytes > options.bucket_cap_bytes ||
        s.params[s.buckets.back().params.front()].dtype() != p.dtype()) {
      s.buckets.emplace_back();
      bytes = 0;
    }
    State::Bucket& b = s.buckets.back();
    b.offsets.push_back(b.params.empty() ? 0
                                         : b.offsets.back() + s.params[b.params.back()].numel());
    b.params.push_back(j);
    s.bucket_of[j] = s.buckets.size() - 1;
    bytes += nbytes;
  }
  for (State::Bucket& b : s.buckets) {
    const Tensor& last = s.params[b.params.back()];
    b.flat = mutagrad::zeros({b.offsets.back() + last.numel()},
                             TensorOptions().dtype(last.dtype()).device(last.device()));
  }
  std::weak_ptr<State> weak = state_;
  for (size_t i = 0; i < s.params.size(); ++i) {
    std::shared_ptr<autograd::Node> acc = autograd::grad_accumulator(s.params[i]);
    s.handles.push_back(
        acc->register_hook([weak, i](const autograd::VariableList&, const autograd::VariableList&) {
          if (std::shared_ptr<State> state = weak.lock()) state->on_ready(i);
          return autograd::VariableList();
        }));
    s.accumulators.push_back(std::move(acc));
  }
}

DataParallel::~DataParallel() {
  for (auto& h : state_->handles) h.remove();
  for (auto& b : state_->buckets) {
    if (b.work) b.work->wait();
  }
}

const std::vector<Tensor>& DataParallel::parameters() const { return state_->params; }

ProcessGroup& DataParallel::process_group() const { return *state_->group; }

std::vector<std::vector<size_t>> DataParallel::buckets() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : state_->buckets) out.push_back(b.params);
  return out;
}

}  // namespace mutagrad::distributed
