// Copyright 2026 SMoE Lab authors.
//
// File: common/rng.h
//
// A seeded, platform-stable random number generator.
//
// The C++ standard fixes the engines' output (std::mt19937_64) but not the
// distributions: std::uniform_int_distribution gives different numbers under
// libstdc++ and libc++. Experiments must produce the same SRAVEN problems and
// the same trial orders on every machine, so this file defines the engine
// (xoshiro256**, seeded through SplitMix64) *and* every integer transform.
// Integer outputs (Next64, UniformInt, Shuffle, Permutation) are bit-identical
// on every platform. UniformDouble uses exact 53-bit arithmetic and is also
// stable.
//
// Streams: `Rng::ForStream(seed, {a, b, ...})` derives an independent generator
// from a seed and a path of stream ids (like JAX's fold_in), so
// (seed, split, batch, problem) addresses one problem's randomness directly.
//
// Thread safety: an Rng is a value; do not share one between threads.
#ifndef SMOE_COMMON_RNG_H_
#define SMOE_COMMON_RNG_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace smoe {

// Returns SplitMix64's output for `x`: a bijective 64-bit mixer.
uint64_t SplitMix64(uint64_t x);

class Rng {
 public:
  // Seeds the four-word state from `seed` through SplitMix64.
  explicit Rng(uint64_t seed);

  // Returns a generator for the stream addressed by `path` under `seed`.
  // Different paths give statistically independent streams.
  static Rng ForStream(uint64_t seed, std::initializer_list<uint64_t> path);

  // Returns the next 64 uniformly random bits.
  uint64_t Next64();

  // Returns an integer uniform on [0, n). REQUIRES: n > 0. Unbiased (Lemire's
  // multiply-and-reject).
  uint64_t UniformInt(uint64_t n);

  // Returns an integer uniform on [lo, hi]. REQUIRES: lo <= hi.
  int64_t UniformRange(int64_t lo, int64_t hi);

  // Returns a double uniform on [0, 1) with 53 random bits.
  double UniformDouble();

  // Returns true with probability p.
  bool Bernoulli(double p) { return UniformDouble() < p; }

  // Shuffles `v` in place (Fisher-Yates, back to front).
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(UniformInt(i));
      std::swap(v[i - 1], v[j]);
    }
  }

  // Returns a uniformly random permutation of 0..n-1.
  std::vector<int> Permutation(int n);

  // Returns `count` distinct values from 0..n-1 in draw order.
  // REQUIRES: count <= n.
  std::vector<int> SampleWithoutReplacement(int n, int count);

 private:
  uint64_t s_[4];
};

}  // namespace smoe

#endif  // SMOE_COMMON_RNG_H_
