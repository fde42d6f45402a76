// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/python_random.h"

namespace smoe::skillmix {
namespace {

constexpr uint64_t kSha512K[80] = {
    0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL,
    0xe9b5dba58189dbbcULL, 0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL,
    0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL, 0xd807aa98a3030242ULL,
    0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,
    0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL,
    0xc19bf174cf692694ULL, 0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL,
    0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL, 0x2de92c6f592b0275ULL,
    0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,
    0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL,
    0xbf597fc7beef0ee4ULL, 0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL,
    0x06ca6351e003826fULL, 0x142929670a0e6e70ULL, 0x27b70a8546d22ffcULL,
    0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,
    0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL,
    0x92722c851482353bULL, 0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL,
    0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL, 0xd192e819d6ef5218ULL,
    0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,
    0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL,
    0x34b0bcb5e19b48a8ULL, 0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL,
    0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL, 0x748f82ee5defb2fcULL,
    0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,
    0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL,
    0xc67178f2e372532bULL, 0xca273eceea26619cULL, 0xd186b8c721c0c207ULL,
    0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL, 0x06f067aa72176fbaULL,
    0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,
    0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL,
    0x431d67c49c100d4cULL, 0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL,
    0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL};

inline uint64_t Rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

void Sha512Block(const uint8_t* p, uint64_t h[8]) {
  uint64_t w[80];
  for (int t = 0; t < 16; ++t) {
    w[t] = 0;
    for (int b = 0; b < 8; ++b) w[t] = (w[t] << 8) | p[t * 8 + b];
  }
  for (int t = 16; t < 80; ++t) {
    const uint64_t s0 =
        Rotr(w[t - 15], 1) ^ Rotr(w[t - 15], 8) ^ (w[t - 15] >> 7);
    const uint64_t s1 =
        Rotr(w[t - 2], 19) ^ Rotr(w[t - 2], 61) ^ (w[t - 2] >> 6);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint64_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6],
           hh = h[7];
  for (int t = 0; t < 80; ++t) {
    const uint64_t s1 = Rotr(e, 14) ^ Rotr(e, 18) ^ Rotr(e, 41);
    const uint64_t ch = (e & f) ^ (~e & g);
    const uint64_t t1 = hh + s1 + ch + kSha512K[t] + w[t];
    const uint64_t s0 = Rotr(a, 28) ^ Rotr(a, 34) ^ Rotr(a, 39);
    const uint64_t maj = (a & b) ^ (a & c) ^ (b & c);
    const uint64_t t2 = s0 + maj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

}  // namespace

std::array<uint8_t, 64> Sha512(absl::string_view data) {
  uint64_t h[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL,
                   0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
                   0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                   0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
  // Message + 0x80 + zero padding + 128-bit big-endian bit length.
  std::vector<uint8_t> msg(data.begin(), data.end());
  const uint64_t bit_len = static_cast<uint64_t>(data.size()) * 8;
  msg.push_back(0x80);
  while (msg.size() % 128 != 112) msg.push_back(0);
  for (int i = 0; i < 8; ++i) msg.push_back(0);  // high 64 bits of length
  for (int i = 7; i >= 0; --i)
    msg.push_back(static_cast<uint8_t>(bit_len >> (8 * i)));
  for (size_t off = 0; off < msg.size(); off += 128) Sha512Block(&msg[off], h);
  std::array<uint8_t, 64> out{};
  for (int i = 0; i < 8; ++i) {
    for (int b = 0; b < 8; ++b) {
      out[i * 8 + b] = static_cast<uint8_t>(h[i] >> (56 - 8 * b));
    }
  }
  return out;
}

void PyRandom::InitGenrand(uint32_t s) {
  mt_[0] = s;
  for (int i = 1; i < kN; ++i) {
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) +
             static_cast<uint32_t>(i);
  }
  mti_ = kN;
}

void PyRandom::InitByArray(const std::vector<uint32_t>& key) {
  InitGenrand(19650218U);
  const int key_length = static_cast<int>(key.size());
  int i = 1;
  int j = 0;
  for (int k = kN > key_length ? kN : key_length; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) +
             key[j] + static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) -
             static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;
  mti_ = kN;
}

void PyRandom::SeedInt(int64_t n) {
  // |n| as a 64-bit magnitude (well defined for INT64_MIN too).
  const uint64_t mag =
      n < 0 ? ~static_cast<uint64_t>(n) + 1 : static_cast<uint64_t>(n);
  std::vector<uint32_t> key;
  key.push_back(static_cast<uint32_t>(mag));
  if ((mag >> 32) != 0) key.push_back(static_cast<uint32_t>(mag >> 32));
  InitByArray(key);
}

void PyRandom::SeedBigEndianBytes(const std::vector<uint8_t>& bytes) {
  size_t first = 0;
  while (first < bytes.size() && bytes[first] == 0) ++first;
  std::vector<uint32_t> key;
  // 32-bit words, least significant first.
  for (size_t end = bytes.size(); end > first;) {
    const size_t begin = end >= first + 4 ? end - 4 : first;
    uint32_t word = 0;
    for (size_t b = begin; b < end; ++b) word = (word << 8) | bytes[b];
    key.push_back(word);
    end = begin;
  }
  if (key.empty()) key.push_back(0);
  InitByArray(key);
}

void PyRandom::SeedString(absl::string_view s) {
  std::vector<uint8_t> bytes(s.begin(), s.end());
  const std::array<uint8_t, 64> digest = Sha512(s);
  bytes.insert(bytes.end(), digest.begin(), digest.end());
  SeedBigEndianBytes(bytes);
}

uint32_t PyRandom::NextUint32() {
  static constexpr uint32_t kMag01[2] = {0x0U, 0x9908b0dfU};
  constexpr uint32_t kUpper = 0x80000000U;
  constexpr uint32_t kLower = 0x7fffffffU;
  constexpr int kM = 397;
  if (mti_ >= kN) {
    int kk = 0;
    for (; kk < kN - kM; ++kk) {
      const uint32_t y = (mt_[kk] & kUpper) | (mt_[kk + 1] & kLower);
      mt_[kk] = mt_[kk + kM] ^ (y >> 1) ^ kMag01[y & 0x1U];
    }
    for (; kk < kN - 1; ++kk) {
      const uint32_t y = (mt_[kk] & kUpper) | (mt_[kk + 1] & kLower);
      mt_[kk] = mt_[kk + (kM - kN)] ^ (y >> 1) ^ kMag01[y & 0x1U];
    }
    const uint32_t y = (mt_[kN - 1] & kUpper) | (mt_[0] & kLower);
    mt_[kN - 1] = mt_[kM - 1] ^ (y >> 1) ^ kMag01[y & 0x1U];
    mti_ = 0;
  }
  uint32_t y = mt_[mti_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

uint32_t PyRandom::GetRandBits(int k) {
  if (k <= 0) return 0;
  if (k > 32) k = 32;
  return NextUint32() >> (32 - k);
}

uint32_t PyRandom::RandBelow(uint32_t n) {
  if (n == 0) return 0;
  int k = 0;
  for (uint32_t m = n; m != 0; m >>= 1) ++k;  // n.bit_length()
  uint32_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

}  // namespace smoe::skillmix
