// Copyright 2026 SMoE Lab authors.
//
// File: worker/eval/skillmix/python_random.h
//
// A bit-exact port of the parts of CPython's `random` module that the
// Skill-Mix reference sampler (query_random.py) uses, so the C++ harness draws
// the same (skills, topic) combinations as the reference for any seed:
//   * random.seed(int) and random.seed(str) (version 2: the integer
//     int.from_bytes(s.encode() + sha512(s.encode()).digest(), 'big')),
//     both through MT19937 init_by_array with the integer's 32-bit words,
//     least significant first;
//   * getrandbits(k) for k <= 32, _randbelow(n) (rejection sampling on
//     n.bit_length() bits) and random.shuffle (Fisher-Yates from the end).
// The generator itself is MT19937 (the same as std::mt19937; the tests check
// this); CPython seeds it with init_by_array, which std::mt19937 cannot do.
//
// Thread-compatible.
#ifndef SMOE_WORKER_EVAL_SKILLMIX_PYTHON_RANDOM_H_
#define SMOE_WORKER_EVAL_SKILLMIX_PYTHON_RANDOM_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace smoe::skillmix {

// SHA-512 (FIPS 180-4) of `data`; 64 raw bytes. Needed only for Python's
// string seeds; kept here so the library has no crypto dependency.
std::array<uint8_t, 64> Sha512(absl::string_view data);

class PyRandom {
 public:
  // Equivalent to random.Random(0).
  PyRandom() { SeedInt(0); }

  // random.seed(n) for an integer n (CPython uses |n|).
  void SeedInt(int64_t n);
  // random.seed(s) for a str s (version 2, the default since Python 3.2).
  void SeedString(absl::string_view s);
  // Seeds with the non-negative integer whose big-endian bytes are `bytes`.
  void SeedBigEndianBytes(const std::vector<uint8_t>& bytes);

  // The reference MT19937 init_genrand(s), i.e. std::mt19937's seeding
  // (CPython never uses it; tests compare the generator with std::mt19937).
  void InitGenrand(uint32_t s);

  // The next raw 32-bit MT19937 output (CPython genrand_uint32).
  uint32_t NextUint32();
  // random.getrandbits(k) for 0 < k <= 32 (0 for k <= 0; k > 32 acts as 32).
  uint32_t GetRandBits(int k);
  // random._randbelow(n): uniform in [0, n); 0 when n == 0.
  uint32_t RandBelow(uint32_t n);

  // random.shuffle(v), in place.
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i-- > 1;) {
      const uint32_t j = RandBelow(static_cast<uint32_t>(i + 1));
      std::swap(v[i], v[j]);
    }
  }

 private:
  void InitByArray(const std::vector<uint32_t>& key);

  static constexpr int kN = 624;
  std::array<uint32_t, kN> mt_{};
  int mti_ = kN + 1;
};

}  // namespace smoe::skillmix

#endif  // SMOE_WORKER_EVAL_SKILLMIX_PYTHON_RANDOM_H_
