// Copyright 2026 SMoE Lab authors.
//
// worker/model/device.h on the CPU: every arm a GPU run takes through the
// device and communicator choice, with made-up device counts.
#include "worker/model/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/all_to_all/local_communicator.h"

namespace smoe::model {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Each rank's GPU: its own single visible device when the launcher split
// CUDA_VISIBLE_DEVICES, else GPU `rank` of all visible ones.
TEST(CudaDeviceForRankTest, SplitOrByRank) {
  EXPECT_EQ(CudaDeviceForRank(0, 1, 8), 0);  // one process
  EXPECT_EQ(CudaDeviceForRank(3, 4, 1), 0);  // the daemon gave it one GPU
  EXPECT_EQ(CudaDeviceForRank(3, 4, 0), 0);  // none visible: caller fails
  EXPECT_EQ(CudaDeviceForRank(1, 2, 2), 1);  // all visible: rank r -> GPU r
  EXPECT_EQ(CudaDeviceForRank(7, 8, 8), 7);
  EXPECT_EQ(CudaDeviceForRank(3, 4, 2), 1);  // fewer GPUs than ranks
}

TEST(CommDeviceTest, HostCommunicatorsUseTheCpuWhateverTheModel) {
  auto comms = kernels::CreateLocalCommunicators(2, {});
  ASSERT_EQ(comms[0]->memory_space(), kernels::MemorySpace::kHost);
  EXPECT_EQ(CommDevice(*comms[0], torch::kCPU), torch::Device(torch::kCPU));
  EXPECT_EQ(CommDevice(*comms[1], torch::Device(torch::kCUDA, 3)),
            torch::Device(torch::kCPU));
}

TEST(SelectDeviceTest, CpuNeedsNoDevice) {
  for (bool available : {false, true}) {
    for (int count : {0, 1, 8}) {
      auto s = SelectDevice("cpu", 0, 1, available, count, true);
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_EQ(s->device, torch::Device(torch::kCPU));
      EXPECT_EQ(s->comm, CommKind::kNone);
    }
  }
  // Expert parallel on the CPU: Gloo, even when NCCL is built.
  auto s = SelectDevice("cpu", 1, 2, true, 8, /*nccl_built=*/true);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->device, torch::Device(torch::kCPU));
  EXPECT_EQ(s->comm, CommKind::kGloo);
  EXPECT_STREQ(CommKindName(s->comm), "gloo");
}

TEST(SelectDeviceTest, CudaMapsRanksToGpus) {
  // One process, several GPUs: GPU 0.
  auto one = SelectDevice("cuda", 0, 1, true, 4, true);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->device, torch::Device(torch::kCUDA, 0));
  EXPECT_EQ(one->comm, CommKind::kNone);
  // Every rank sees all GPUs: rank r -> GPU r, over NCCL.
  for (int r = 0; r < 4; ++r) {
    auto s = SelectDevice("cuda", r, 4, true, 4, true);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->device, torch::Device(torch::kCUDA, r)) << r;
    EXPECT_EQ(s->comm, CommKind::kNccl);
    EXPECT_STREQ(CommKindName(s->comm), "nccl");
  }
  // More GPUs than ranks: the first `world`.
  auto more = SelectDevice("cuda", 1, 2, true, 8, true);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_EQ(more->device, torch::Device(torch::kCUDA, 1));
  // The launcher gave each rank its own GPU (one visible): cuda:0 each.
  auto split = SelectDevice("cuda", 3, 4, true, 1, true);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->device, torch::Device(torch::kCUDA, 0));
  EXPECT_EQ(split->comm, CommKind::kNccl);
  // A build without NCCL: CUDA model, Gloo over host copies; ranks may share
  // a GPU then.
  auto gloo = SelectDevice("cuda", 3, 4, true, 2, /*nccl_built=*/false);
  ASSERT_TRUE(gloo.ok()) << gloo.status();
  EXPECT_EQ(gloo->device, torch::Device(torch::kCUDA, 1));
  EXPECT_EQ(gloo->comm, CommKind::kGloo);
}

TEST(SelectDeviceTest, CudaWithoutAVisibleDeviceIsAClearError) {
  for (auto [available, count] :
       std::vector<std::pair<bool, int>>{{false, 0}, {false, 2}, {true, 0}}) {
    auto s = SelectDevice("cuda", 0, 1, available, count, true);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr("device: cuda but no CUDA device is visible"));
  }
}

TEST(SelectDeviceTest, NcclRanksSharingAGpuAreRejected) {
  auto s = SelectDevice("cuda", 2, 4, true, 2, true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()),
              AllOf(HasSubstr("4 NCCL ranks"), HasSubstr("2 GPUs visible"),
                    HasSubstr("rank 2 would share GPU 0")));
}

TEST(SelectDeviceTest, BadSettingsNameTheValue) {
  auto bad = SelectDevice("gpu", 0, 1, true, 1, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("device: must be \"cpu\" or \"cuda\", got \"gpu\""));
  for (auto [rank, world] :
       std::vector<std::pair<int, int>>{{2, 2}, {-1, 2}, {0, 0}}) {
    auto s = SelectDevice("cpu", rank, world, false, 0, false);
    ASSERT_FALSE(s.ok()) << rank << "/" << world;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr(absl::StrCat("rank ", rank, " of world ", world)));
  }
}

// This process's view: the CI machine has no GPU, so "cuda" fails with the
// message above and "cpu" works; on a GPU machine "cuda" picks GPU 0.
TEST(SelectDeviceHereTest, AgreesWithTheQueries) {
  auto cpu = SelectDeviceHere("cpu", 0, 1);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->device, torch::Device(torch::kCPU));
  auto cuda = SelectDeviceHere("cuda", 0, 1);
  if (torch::cuda::is_available()) {
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    EXPECT_EQ(cuda->device, torch::Device(torch::kCUDA, 0));
  } else {
    EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

}  // namespace
}  // namespace smoe::model
