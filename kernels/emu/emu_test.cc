// Copyright 2026 SMoE Lab authors.
//
// The CUDA execution model on the CPU (kernels/emu/emu.h): CUDA's semantics
// on tiny kernels (shuffle source lanes and widths, votes, barriers with
// exited threads, atomics, shared memory), and every check failing with its
// name on a kernel that breaks its rule. Runs in both builds (race, asan)
// under each schedule (label emu).
#include "kernels/emu/emu.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/common/device_buffer.h"
#include "kernels/emu/emu_test_kernels.h"

namespace smoe::emu::test {
namespace {

using kernels::DeviceBuffer;

// CUDA's result for lane i of a 32-lane shuffle of value 100 + lane.
int Expected(int op, int i, int arg, int width) {
  const int seg = i & ~(width - 1);
  int j = i;
  switch (op) {
    case 0:
      j = seg + (arg & (width - 1));
      break;
    case 1:
      j = i - arg < seg ? i : i - arg;
      break;
    case 2:
      j = i + arg > seg + width - 1 ? i : i + arg;
      break;
    default:
      j = (i ^ arg) > seg + width - 1 ? i : (i ^ arg);
  }
  return 100 + j;
}

TEST(EmuTest, ShufflesFollowCudaSourceLaneRules) {
  for (int op = 0; op < 4; ++op) {
    for (int width : {32, 16, 8, 4, 2, 1}) {
      for (int arg : {0, 1, 3, 5, 16, 31}) {
        if (op == 3 && arg >= width) continue;  // xor across segments: below
        DeviceBuffer<int> out(32);
        LaunchShuffle(out.get(), op, arg, width, 0xffffffffu);
        const std::vector<int> got = out.ToHost();
        for (int i = 0; i < 32; ++i) {
          ASSERT_EQ(got[i], Expected(op, i, arg, width))
              << "op " << op << " width " << width << " arg " << arg << " lane "
              << i;
        }
      }
    }
  }
  // PTX shfl.bfly: a source above the segment keeps the own value, one below
  // (a lower segment) is read.
  DeviceBuffer<int> out(32);
  LaunchShuffle(out.get(), 3, 16, 16, 0xffffffffu);
  const std::vector<int> got = out.ToHost();
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(got[i], i < 16 ? 100 + i : 100 + i - 16);
}

TEST(EmuTest, PartialMaskShuffle) {
  DeviceBuffer<int> out(std::vector<int>(32, -1));
  // Lanes 16.. exit; width 16 keeps lane 15's source (16) out of reach, so
  // it keeps its own value (reading lane 16 would be misuse: below).
  LaunchShuffle(out.get(), 2, 1, 16, 0x0000ffffu);
  const std::vector<int> got = out.ToHost();
  for (int i = 0; i < 15; ++i) EXPECT_EQ(got[i], 101 + i);
  EXPECT_EQ(got[15], 115);
  for (int i = 16; i < 32; ++i) EXPECT_EQ(got[i], -1);
}

TEST(EmuTest, BallotAndMatchAny) {
  DeviceBuffer<unsigned> ballot(32), match(32);
  LaunchVote(ballot.get(), match.get());
  unsigned want = 0;
  for (int i = 0; i < 32; i += 3) want |= 1u << i;
  const std::vector<unsigned> b = ballot.ToHost(), m = match.ToHost();
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(b[i], want);
    EXPECT_EQ(m[i], 0x11111111u << (i % 4));
  }
}

TEST(EmuTest, BarriersAndSharedMemoryAcrossBlocks) {
  const int blocks = 3;
  std::vector<int> in(256 * blocks);
  std::iota(in.begin(), in.end(), 1);
  DeviceBuffer<int> d_in(in), d_out(blocks);
  LaunchBlockSum(d_in.get(), d_out.get(), blocks);
  const std::vector<int> got = d_out.ToHost();
  for (int b = 0; b < blocks; ++b) {
    const int lo = 256 * b + 1, hi = 256 * (b + 1);
    EXPECT_EQ(got[b], (lo + hi) * 256 / 2);
  }
}

TEST(EmuTest, AtomicsInSharedAndGlobalMemory) {
  const int n = 1000, bins = 7;
  std::vector<int> in(n);
  std::iota(in.begin(), in.end(), 0);
  DeviceBuffer<int> d_in(in), counts(std::vector<int>(bins, 0));
  DeviceBuffer<float> total(std::vector<float>(1, 0.0f));
  LaunchHistogram(d_in.get(), n, bins, counts.get(), total.get(), 4);
  const std::vector<int> c = counts.ToHost();
  for (int b = 0; b < bins; ++b) EXPECT_EQ(c[b], (n - b + bins - 1) / bins);
  EXPECT_EQ(total.ToHost()[0], static_cast<float>(n));
}

TEST(EmuTest, BarrierWaitsForLiveThreadsOnly) {
  DeviceBuffer<int> out(32);
  LaunchExitEarly(out.get());
  const std::vector<int> got = out.ToHost();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(got[i], 31 - i);
}

TEST(EmuTest, SyncwarpOrdersSharedMemory) {
  DeviceBuffer<int> out(32);
  LaunchSyncwarpOrders(out.get());
  for (int v : out.ToHost()) EXPECT_EQ(v, 7);
}

// ---- Each check fails with its name ----

class EmuCheckTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(EmuCheckTest, DivergentBarrier) {
  EXPECT_DEATH(
      {
        LaunchDivergentBarrier();
        cudaDeviceSynchronize();
      },
      "smoe-emu: divergent barrier(.|\n)*DivergentBarrierKernel(.|\n)*"
      "emu_test_kernels.cu:[0-9]+");
}

TEST_F(EmuCheckTest, Deadlock) {
  DeviceBuffer<int> out(64);
  EXPECT_DEATH(
      {
        LaunchDeadlock(out.get());
        cudaDeviceSynchronize();
      },
      "smoe-emu: deadlock(.|\n)*__shfl_xor_sync\\(mask 0xffffffff\\)(.|\n)*"
      "waits at __syncthreads");
}

TEST_F(EmuCheckTest, WarpCollectiveMasks) {
  DeviceBuffer<int> out(32);
  EXPECT_DEATH(
      {
        LaunchMaskMismatch(out.get());
        cudaDeviceSynchronize();
      },
      "smoe-emu: warp-collective misuse");
  // A lane outside the mask calls the collective.
  EXPECT_DEATH(
      {
        LaunchShuffle(out.get(), 3, 1, 32, 0x0000ffffu | 0x00010000u);
        cudaDeviceSynchronize();
      },
      "smoe-emu: warp-collective misuse(.|\n)*source lane 17, outside the "
      "mask");
}

TEST_F(EmuCheckTest, SharedMemoryOutOfBounds) {
  DeviceBuffer<int> out(64);
  EXPECT_DEATH(
      {
        LaunchSharedOutOfBounds(out.get());
        cudaDeviceSynchronize();
      },
      RaceCheckEnabled()
          ? "smoe-emu: out-of-bounds shared memory(.|\n)*past the end of s"
          : "(AddressSanitizer: use-after-poison|index 32 out of bounds "
            "for type 'int \\[32\\]')(.|\n)*smoe-emu: the error above is "
            "in kernel SharedOutOfBoundsKernel(.|\n)*thread "
            "\\((3[2-9]|[45][0-9]|6[0-3]),0,0\\)");
}

TEST_F(EmuCheckTest, RacesAndUninitialisedSharedMemory) {
  if (!RaceCheckEnabled()) GTEST_SKIP() << "the race build checks these";
  DeviceBuffer<int> out(64);
  EXPECT_DEATH(
      {
        LaunchSharedRace(out.get());
        cudaDeviceSynchronize();
      },
      "smoe-emu: data race on shared memory(.|\n)*s\\+0(.|\n)*"
      "emu_test_kernels.cu:[0-9]+");
  EXPECT_DEATH(
      {
        LaunchGlobalRace(out.get());
        cudaDeviceSynchronize();
      },
      "smoe-emu: data race on global memory(.|\n)*different blocks");
  EXPECT_DEATH(
      {
        LaunchShuffleOrdersNothing(out.get());
        cudaDeviceSynchronize();
      },
      "smoe-emu: data race on global memory");
  EXPECT_DEATH(
      {
        LaunchUninitShared(out.get());
        cudaDeviceSynchronize();
      },
      "smoe-emu: uninitialised shared memory read(.|\n)*s\\+[0-9]+ "
      "\\(declared at");
}

}  // namespace
}  // namespace smoe::emu::test
