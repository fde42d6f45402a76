// Copyright 2026 SMoE Lab authors.
#include "kernels/common/device.h"

#include "gtest/gtest.h"

namespace smoe::kernels {
namespace {

TEST(DeviceTest, CountIsConsistentWithBuild) {
  const int n = CudaDeviceCount();
  EXPECT_GE(n, 0);
  if (!BuiltWithCuda()) {
    EXPECT_EQ(n, 0);
  }
  EXPECT_FALSE(DescribeDevice(0).empty());
}

}  // namespace
}  // namespace smoe::kernels
