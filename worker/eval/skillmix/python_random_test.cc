// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/python_random.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::skillmix {
namespace {

std::string Hex(const std::array<uint8_t, 64>& d) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

TEST(Sha512Test, Fips180Vectors) {
  EXPECT_EQ(Hex(Sha512("")),
            "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
            "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e");
  EXPECT_EQ(Hex(Sha512("abc")),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
  // Two-block message (FIPS 180-2 appendix C.2).
  EXPECT_EQ(Hex(Sha512(
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklm"
                "noijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")),
            "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
            "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909");
}

// The generator is MT19937, the same as std::mt19937: after the reference
// init_genrand(s) (std::mt19937's seeding) both give the same outputs.
TEST(PyRandomTest, SameGeneratorAsStdMt19937) {
  for (uint32_t seed : {5489u, 0u, 12345u}) {
    PyRandom r;
    r.InitGenrand(seed);
    std::mt19937 ref(seed);
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(r.NextUint32(), ref()) << i;
  }
}

// Golden values printed by CPython 3.11 (random.seed(...);
// random.getrandbits(32) ...).
TEST(PyRandomTest, MatchesCPythonIntSeeds) {
  PyRandom r;
  r.SeedInt(10);
  EXPECT_EQ(r.GetRandBits(32), 2454155475u);
  EXPECT_EQ(r.GetRandBits(32), 139951793u);
  EXPECT_EQ(r.GetRandBits(32), 1842064464u);
  r.SeedInt((int64_t{1} << 40) + 7);  // two 32-bit key words
  EXPECT_EQ(r.GetRandBits(32), 2635837658u);
  EXPECT_EQ(r.GetRandBits(32), 3209733218u);
  r.SeedInt(-5);  // CPython seeds with |n|
  EXPECT_EQ(r.GetRandBits(32), 2675342405u);
  EXPECT_EQ(r.GetRandBits(32), 1097127993u);
}

TEST(PyRandomTest, MatchesCPythonStringSeed) {
  PyRandom r;
  r.SeedString("test");
  EXPECT_EQ(r.GetRandBits(32), 2815763625u);
  EXPECT_EQ(r.GetRandBits(32), 3602221911u);
  EXPECT_EQ(r.GetRandBits(32), 3155217344u);
}

TEST(PyRandomTest, ShuffleAndRandBelowMatchCPython) {
  PyRandom r;
  r.SeedInt(0);
  std::vector<int> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  r.Shuffle(x);
  EXPECT_THAT(x, ::testing::ElementsAre(7, 8, 1, 5, 3, 4, 2, 0, 9, 6));
  r.SeedInt(123);
  std::vector<uint32_t> got;
  for (int i = 0; i < 5; ++i) got.push_back(r.RandBelow(1000));
  EXPECT_THAT(got, ::testing::ElementsAre(53, 274, 89, 787, 417));
}

}  // namespace
}  // namespace smoe::skillmix
