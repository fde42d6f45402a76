// Copyright 2026 SMoE Lab authors.
//
// NcclCommunicator at world size 1 on the lent GPU (label gpu; skips without a
// device). Multi-rank NCCL needs one GPU per rank and is not run here.
#include "kernels/all_to_all/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "kernels/all_to_all/payload.h"
#include "kernels/common/device.h"

namespace smoe::kernels {
namespace {

TEST(NcclCommunicatorTest, WorldSizeOnePayloadAllReduceAndBarrier) {
  SMOE_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(BuiltWithNccl());
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  NcclCommunicatorOptions opt;
  opt.common.op_timeout_ms = 60000;
  auto comm = CreateNcclCommunicator(0, 1, *id, opt);
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->memory_space(), MemorySpace::kCudaDevice);
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    PayloadCheck check;
    ASSERT_TRUE(RunPayloadAllToAll(**comm, 5, seed, &check).ok());
    EXPECT_EQ(check.wrong, 0);
  }
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 4 * sizeof(float)),
            cudaSuccess);
  const float h[4] = {1, 2, 3, 4};
  ASSERT_EQ(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_TRUE((*comm)->AllReduceSum(d, 4, DType::kFloat32).ok());
  float back[4] = {};
  ASSERT_EQ(cudaMemcpy(back, d, sizeof(back), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(back[i], h[i]);  // world 1: identity
  cudaFree(d);
  EXPECT_TRUE((*comm)->Barrier().ok());
}

TEST(NcclCommunicatorTest, BadRankIsInvalidArgument) {
  NcclUniqueIdBytes id{};
  auto comm = CreateNcclCommunicator(2, 2, id, {});
  EXPECT_FALSE(comm.ok());
}

}  // namespace
}  // namespace smoe::kernels
