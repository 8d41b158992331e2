// Generator: a seeded, counter-based source of random numbers for one device type. A handle,
// as torch's: copies share one state (seed and offset), so a generator passed by value still
// moves on.
//
//   Generator gen(42);                       // a CPU generator (Generator(42, kCUDA): CUDA)
//   Tensor a = rand({3}, gen);               // elements from Philox counters 0, 1, 2 of key 42
//   Tensor state = gen.get_state();          // uint8 [24]
//   Tensor b = rand({3}, gen);
//   gen.set_state(state);                    // rand({3}, gen) gives b's numbers again
#pragma once

#include <cstdint>
#include <memory>

#include "tensor/device.h"

namespace mutagrad {

class Tensor;

// Note [Counter-based generators]
// Every generator, on every device, is Philox4x32-10 (tensor/philox.h) keyed by its seed: a
// draw of n numbers takes the next n counters (reserve()), element i the counter offset + i,
// and computes its number from that counter alone (Note [Random draws] in
// tensor/random_draw.h). So the numbers depend only on (seed, offset) and the op, never on
// the device or its thread count: Generator(s) and Generator(s, kCUDA) give the same tensors,
// and the state is just (seed, offset). The numbers differ from torch's (an mt19937 on the CPU,
// Philox with another counter layout on CUDA); the distributions are the same. As in torch, a
// factory refuses a generator of another device type.
class Generator {
 public:
  // torch's seed of a new torch.Generator().
  static constexpr uint64_t kTorchDefaultSeed = 67280421310721ULL;
  // The bytes of get_state(): a tag, the seed and the offset (little-endian).
  static constexpr int64_t kStateSize = 24;

  explicit Generator(uint64_t seed = 0, Device device = kCPU);

  Device device() const;
  // The seed the stream started from (torch's initial_seed()).
  uint64_t seed() const;
  // Counters used since the seed was set.
  uint64_t offset() const;
  // Restarts the stream at `seed` (offset 0); returns this generator, as torch.
  Generator& manual_seed(uint64_t seed);
  // Seeds from std::random_device (torch's Generator.seed()) and returns the seed.
  uint64_t seed_nondeterministic();

  // The key and the first of `n` consecutive counters, taken atomically: the generator then
  // starts after them. Thread-safe.
  struct Counters {
    uint64_t seed;
    uint64_t offset;
  };
  Counters reserve(uint64_t n);

  // The state as a uint8 CPU tensor of kStateSize bytes (its layout is ours, not torch's).
  Tensor get_state() const;
  // Restores a state from get_state(): DTypeError unless a uint8 tensor, ValueError unless it
  // has kStateSize bytes with our tag. Returns this generator, as torch.
  Generator& set_state(const Tensor& state);

  // Host-side draws, one counter each, for host code (shuffles): 64 random bits, a uniform
  // double in [0, 1), a standard normal; the same numbers randint/rand/randn would give there.
  uint64_t next_u64();
  double next_double();
  double next_normal();

  // The same generator (one shared state).
  bool is_same(const Generator& other) const { return impl_ == other.impl_; }

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The process's generator for a device type (torch.default_generator, and the CUDA device's),
// seeded 0 at start (torch: a random seed). Never destroyed.
Generator& default_generator(Device device);

}  // namespace mutagrad
