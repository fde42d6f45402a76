// Copyright 2026 SMoE Lab authors.
#include "common/address.h"

#include "gtest/gtest.h"

namespace smoe {
namespace {

// Issue 31 item 8: `--coordinator HOST` must not dial port 443.
TEST(AddressTest, AHostWithoutAPortGetsTheCoordinatorsPort) {
  EXPECT_EQ(WithDefaultPort("gpu-head", kDefaultGrpcPort), "gpu-head:50051");
  EXPECT_EQ(WithDefaultPort("gpu-head.cluster.local", 7000),
            "gpu-head.cluster.local:7000");
  EXPECT_EQ(WithDefaultPort("10.0.0.7", 50051), "10.0.0.7:50051");
  EXPECT_EQ(WithDefaultPort("::1", 50051), "[::1]:50051");
  EXPECT_EQ(WithDefaultPort("fe80::1:2", 50051), "[fe80::1:2]:50051");
  EXPECT_EQ(WithDefaultPort("[::1]", 50051), "[::1]:50051");
}

TEST(AddressTest, AddressesWithAPortOrASchemeAreKept) {
  for (const char* kept :
       {"gpu-head:443", "127.0.0.1:50051", "[::1]:9000", "dns:///gpu-head:1",
        "dns:gpu-head", "unix:/run/smoe.sock", "ipv4:10.0.0.1:5",
        "ipv6:[::1]:5", "unix-abstract:smoe", "vsock:3:5", ""}) {
    EXPECT_EQ(WithDefaultPort(kept, 50051), kept) << kept;
  }
}

}  // namespace
}  // namespace smoe
