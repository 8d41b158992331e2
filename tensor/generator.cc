// Generator (see tensor/generator.h): a shared (seed, offset) under a mutex.
#include "tensor/generator.h"

#include <mutex>
#include <random>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/random_draw.h"

namespace mutagrad {
namespace {

// "MGPhilox" as a little-endian word: the first 8 bytes of a state.
constexpr uint64_t kStateTag = 0x786F6C6968504D47ULL;

void put64(uint8_t* p, uint64_t v) {
  for (int b = 0; b < 8; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
  return v;
}

}  // namespace

struct Generator::Impl {
  mutable std::mutex mu;
  uint64_t seed;
  uint64_t offset = 0;
  Device device;
};

Generator::Generator(uint64_t seed, Device device) : impl_(std::make_shared<Impl>()) {
  impl_->seed = seed;
  impl_->device = device;
}

Device Generator::device() const { return impl_->device; }

uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->seed;
}

uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->offset;
}

Generator& Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->seed = seed;
  impl_->offset = 0;
  return *this;
}

uint64_t Generator::seed_nondeterministic() {
  std::random_device device;
  const uint64_t seed = static_cast<uint64_t>(device()) << 32 | device();
  manual_seed(seed);
  return seed;
}

Generator::Counters Generator::reserve(uint64_t n) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Counters c{impl_->seed, impl_->offset};
  impl_->offset += n;
  return c;
}

Tensor Generator::get_state() const {
  Tensor state = empty({kStateSize}, kByte);
  uint8_t* p = state.data_ptr<uint8_t>();
  std::lock_guard<std::mutex> lock(impl_->mu);
  put64(p, kStateTag);
  put64(p + 8, impl_->seed);
  put64(p + 16, impl_->offset);
  return state;
}

Generator& Generator::set_state(const Tensor& state) {
  if (!state.defined() || state.dtype() != kByte) {
    throw DTypeError(str("set_state(): RNG state must be a uint8 tensor (torch.ByteTensor), got ",
                         state.defined() ? dtype_name(state.dtype()) : "an undefined tensor",
                         "; pass a tensor from get_state()"));
  }
  if (state.numel() != kStateSize) {
    throw ValueError(str("set_state(): expected an RNG state of ", kStateSize,
                         " bytes (from get_state()) but got ", state.numel(),
                         " bytes; mutagrad's states differ from torch's"));
  }
  Tensor host = native::contiguous(native::to(state, kCPU));
  const uint8_t* p = host.data_ptr<uint8_t>();
  if (get64(p) != kStateTag) {
    throw ValueError(
        "set_state(): the tensor is not a state from get_state() (its first 8 bytes are not "
        "mutagrad's tag); pass a tensor from get_state()");
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->seed = get64(p + 8);
  impl_->offset = get64(p + 16);
  return *this;
}

uint64_t Generator::next_u64() {
  const Counters c = reserve(1);
  const Philox4 r = philox4x32_10(c.offset, 0, c.seed);
  return join64(r.w[0], r.w[1]);
}

double Generator::next_double() {
  const Counters c = reserve(1);
  return random_value<double>(RandomParams{RandomDist::kUniform, c.seed, c.offset}, 0);
}

double Generator::next_normal() {
  const Counters c = reserve(1);
  return random_value<double>(RandomParams{RandomDist::kNormal, c.seed, c.offset}, 0);
}

Generator& default_generator(Device device) {
  static Generator* cpu = new Generator(0, kCPU);                          // never destroyed
  static Generator* cuda = new Generator(0, Device(DeviceType::CUDA, 0));  // never destroyed
  return device.is_cuda() ? *cuda : *cpu;
}

}  // namespace mutagrad
